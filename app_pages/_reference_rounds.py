"""The Reference answers page's Rounds section: double authoring of reference answers. A lead
opens a round; each author drafts and submits their answer per question, blind to the others
until they submit; the round's agreement; a lead adjudicates with both answers side by side.
Widgets only: every rule (who sees what, who may write) is annotator.evidence.reference_rounds'."""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotator.evidence import reference_answers as refs
from annotator.evidence import reference_rounds as rr
from annotator.labeling import rounds as grade_rounds
from annotator.people.identity import User
from annotator.people.roles import Permission
from app_pages._shared import attempt, clear_form, flash, form_key, md_escape, picked
from golden_store.db.store import Store
from golden_store.live.reference_answers import Anchor, CriterionDraft
from golden_store.scoring.reference_agreement import DEFINITIONS

_FIGURES = (("short_em", "Short answer: exact match"), ("short_f1", "Short answer: token F1"),
            ("span_jaccard", "Evidence: character Jaccard"), ("spans_agree", "Evidence: anchors agree (share)"),
            ("same_count", "Criteria: same count (share)"), ("weight_distance", "Criteria: weight distance"))
_BLANK_CRITERION = {"criterion_id": "", "text": "", "example": "", "weight": 1.0, "scale_max": 1}


def _fig(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _yes(x: bool | None) -> str:
    return "n/a" if x is None else "yes" if x else "no"


def _span_key(e: dict) -> str:
    return f"{e['doc_id']}:{e['start']}-{e['end']}"


def _quoted(quote: str | None, limit: int = 160) -> str:
    """A span's quote, shortened, or why there is none (the span is no current evidence span)."""
    if not quote:
        return "(not a current evidence span)"
    return "\u201c" + (quote if len(quote) <= limit else quote[: limit - 1] + "\u2026") + "\u201d"


def _criteria_rows(criteria: list[dict]) -> list[dict]:
    return [{"criterion_id": c["id"], "text": c["text"], "example": c["example"], "weight": float(c["weight"]),
             "scale_max": int(c["scale_max"])} for c in criteria]


def _criteria_drafts(rows: Any) -> list[CriterionDraft]:
    """The editor's rows as criteria; a row left wholly blank is no criterion."""
    out = []
    for r in rows:
        if not any(str(r.get(k) or "").strip() for k in ("criterion_id", "text", "example")):
            continue
        out.append(CriterionDraft(str(r.get("criterion_id") or ""), str(r.get("text") or ""),
                                  str(r.get("example") or ""), float(r.get("weight") or 0),
                                  int(r.get("scale_max") or 0)))
    return out


def _answer_form(s: Store, user: User, key: str, qid: str, start: dict | None, extra_spans: list[dict]) -> tuple:
    """Short, full, evidence and criteria widgets prefilled from ``start``; the answer and the
    button pressed are returned by the caller's form."""
    spans = {_span_key(e): e for e in refs.evidence_spans(s, user, qid)}
    for e in [*(start or {}).get("evidence", []), *extra_spans]:
        spans.setdefault(_span_key(e), {**e, "quote": None})
    short = st.text_input("Short answer", value=(start or {}).get("short_answer") or "", key=f"{key}_short",
                          help="What exact match and token F1 compare a system's answer against.")
    full = st.text_area("Full answer", value=(start or {}).get("full_answer") or "", key=f"{key}_full")
    chosen = st.multiselect("Evidence it rests on", list(spans), key=f"{key}_ev",
                            default=[_span_key(e) for e in (start or {}).get("evidence", [])],
                            format_func=lambda k: f"{k}  {(spans[k].get('quote') or '')[:90]}")
    st.caption("Criteria answers are marked by (optional; up to 5, each with a worked example and a fixed weight).")
    rows = _criteria_rows((start or {}).get("criteria", [])) or [dict(_BLANK_CRITERION)]
    edited = st.data_editor(rows, num_rows="dynamic", key=f"{key}_crit", hide_index=True)
    anchors = [Anchor(spans[k]["doc_id"], int(spans[k]["start"]), int(spans[k]["end"])) for k in chosen]
    return short, full, anchors, edited


def _show_answer(sub: dict, quotes: dict[str, str]) -> None:
    """One submission as plain text (escaped: st.text never reads Markdown or HTML). Each cited
    span with its quote, so a lead compares what the authors cited, not offsets."""
    st.caption("Short answer")
    st.text(sub["short_answer"] or "(none)")
    st.caption("Full answer")
    st.text(sub["full_answer"] or "(none)")
    st.caption("Evidence")
    st.text("\n".join(f"{_span_key(e)}  {_quoted(quotes.get(_span_key(e)))}" for e in sub["evidence"]) or "(none)")
    if sub["criteria"]:
        st.caption(f"{len(sub['criteria'])} criteria")
        st.dataframe(_criteria_rows(sub["criteria"]), hide_index=True)
    else:
        st.caption("No criteria")


def _open_form(s: Store, user: User) -> None:
    with st.expander("Open a round"):
        people = grade_rounds.labellers(s, user)
        with st.form(form_key("ref_round_open")):
            if people:
                authors = st.multiselect("Authors (two or more)", people, key="rr_open_authors")
            else:
                raw = st.text_input("Authors (comma-separated usernames, two or more)", key="rr_open_authors_txt")
                authors = [p.strip() for p in raw.split(",") if p.strip()]
            options = refs.questions(s, user)
            qids = st.multiselect("Questions", list(options), key="rr_open_questions",
                                  format_func=lambda q: options[q][:100])
            note = st.text_input("Note (optional)", key="rr_open_note")
            go = st.form_submit_button("Open the round")
        if go:
            rid = attempt(lambda: rr.open_round(s, user, authors, qids, note=note))
            if rid is not None:
                clear_form("ref_round_open", ("rr_open_authors", "rr_open_authors_txt", "rr_open_questions",
                                              "rr_open_note"))
                st.session_state["rr_round"] = rid
                flash(f"Opened reference round {rid}: {len(qids)} question(s) for {', '.join(sorted(authors))}.")
                st.rerun()


def _agreement(view: rr.RoundView) -> None:
    ag = view.agreement
    st.write(f"**Agreement** over {ag.n_compared} question(s) with two or more submissions you may read, "
             f"{ag.n_disagreeing} of them disagreeing"
             + (f"; {view.hidden} more hidden until you submit your own answer." if view.hidden else "."))
    if ag.n_compared:
        st.dataframe([{"figure": label, "value": _fig(getattr(ag, k).value), "questions": getattr(ag, k).n}
                      for k, label in _FIGURES], hide_index=True)
        with st.expander("What each figure is"):
            for k, label in _FIGURES:
                st.caption(f"**{label}**: {md_escape(DEFINITIONS[k])}")


def _state(q: dict) -> str:
    a = q["agreement"]
    said = ("disagreed" if a["disagrees"] else "agreed") if a else None
    if q["adjudicated"]:
        return "adjudicated" + (f" ({said})" if said else "")
    if said:
        return "DISAGREE" if a["disagrees"] else "agree"
    return f"waiting ({len(q['submitted'])}/{len(q['authors'])} submitted)"


def _table(view: rr.RoundView) -> None:
    rows = []
    for q in view.questions:
        a = q["agreement"] or {}
        rows.append({"question": q["query_id"], "state": _state(q), "short EM": _fig(a.get("short_em")),
                     "short F1": _fig(a.get("short_f1")), "evidence Jaccard": _fig(a.get("span_jaccard")),
                     "criteria same count": _yes(a.get("same_count")),
                     "weight distance": _fig(a.get("weight_distance")),
                     "decision": (f"accepted {q['accepted_author']}" if q["decision"] == "accept" else q["decision"])
                     or ""})
    st.dataframe(rows, hide_index=True)


def _write(s: Store, user: User, rid: str, q: dict, mine: dict) -> None:
    key = f"rr_{rid}_{q['query_id']}"
    st.write("**Your answer** (only you see your draft; a submission is final, and then you see the others').")
    with st.form(f"{key}_form"):
        short, full, anchors, edited = _answer_form(s, user, key, q["query_id"], mine["draft"], [])
        c1, c2 = st.columns(2)
        save = c1.form_submit_button("Save draft", key=f"{key}_save")
        send = c2.form_submit_button("Submit (final)", key=f"{key}_send")
    if save or send:
        answer = rr.answer_from(short, full, anchors, _criteria_drafts(edited))
        fn = rr.submit if send else rr.save_draft
        if attempt(lambda: fn(s, user, rid, q["query_id"], answer)) is not None:
            flash(f"{'Submitted' if send else 'Saved your draft of'} {q['query_id']}"
                  + (": the other authors' answers are shown once they submit." if send else "."))
            st.rerun()


def _adjudicate(s: Store, user: User, rid: str, q: dict, submitted: dict[str, dict]) -> None:
    key = f"rr_{rid}_{q['query_id']}_adj"
    st.write("**Adjudicate**: accept one author's answer as it is, or write a merged one. It becomes the question's "
             "reference answer (approved, with this round and your note in its history).")
    options = [f"accept {a}" for a in submitted] + ["write a merged answer"]
    # no decision preselected: one press of Adjudicate must never accept whoever is listed first
    choice: str | None = st.radio("Decision", options, horizontal=True, key=f"{key}_how", index=None)
    merged = choice == "write a merged answer"
    with st.form(f"{key}_form"):
        if merged:
            first = next(iter(submitted.values()))
            others = [e for sub in submitted.values() for e in sub["evidence"]]
            short, full, anchors, edited = _answer_form(s, user, key, q["query_id"], first, others)
        note = st.text_input("Why (kept with the decision)", key=f"{key}_note")
        go = st.form_submit_button("Adjudicate")
    if go and choice is None:
        st.error(f"Choose a decision for {q['query_id']} first (accept one author's answer or write a merged "
                 "one); nothing was adjudicated.")
    elif go:
        if merged:
            answer = rr.answer_from(short, full, anchors, _criteria_drafts(edited))
            done = attempt(lambda: rr.adjudicate(s, user, rid, q["query_id"], merged=answer, note=note))
        else:
            who = str(choice).removeprefix("accept ")
            done = attempt(lambda: rr.adjudicate(s, user, rid, q["query_id"], accept=who, note=note))
        if done is not None:
            flash(f"Adjudicated {q['query_id']}: revision {done} is its approved reference answer.")
            st.rerun()


def _question(s: Store, user: User, rid: str, q: dict) -> None:
    a = q["agreement"]
    mine = q["authors"].get(user.username)
    to_write = mine is not None and mine["state"] != "submitted" and not q["adjudicated"]
    st.write(f"**{md_escape(q['query_id'])}** · {_state(q)}")
    st.text(q["text"] or "")
    st.caption(" · ".join(f"{md_escape(who)}: {v['state']}" for who, v in q["authors"].items()))
    if q["adjudicated"]:
        how = f"accepted {q['accepted_author']}'s answer" if q["decision"] == "accept" else "merged answer"
        st.caption(md_escape(f"Adjudicated by {q['adjudicated_by']}: {how} (revision {q['revision']})"
                             + (f". Why: {q['adjudication_note']}" if q["adjudication_note"] else ".")))
    if a is not None:
        st.caption(f"Short answer EM {_fig(a['short_em'])}, token F1 {_fig(a['short_f1'])} · evidence Jaccard "
                   f"{_fig(a['span_jaccard'])} (anchors agree: {_yes(a['spans_agree'])}) · criteria same count: "
                   f"{_yes(a['same_count'])}, weight distance {_fig(a['weight_distance'])}")
    shown = {who: v["submission"] for who, v in q["authors"].items() if v["submission"]}
    if shown:
        quotes = {_span_key(e): e["quote"] for e in refs.evidence_spans(s, user, q["query_id"])}
        for col, (who, sub) in zip(st.columns(len(shown)), shown.items()):
            with col:
                st.write(f"**{md_escape(who)}**" + (" (you)" if who == user.username else ""))
                _show_answer(sub, quotes)
    elif q["submitted"] and not q["visible"]:
        st.caption(f"{len(q['submitted'])} submitted; their answers are not shown to you yet.")
    key = f"rr_{rid}_{q['query_id']}"
    if not to_write and mine is not None and (st.session_state.get(f"{key}_send") or st.session_state.get(f"{key}_save")):
        # pressed on a form drawn before the submission (another tab of theirs): say so, not silence
        st.error(md_escape(f"You already submitted your answer to {q['query_id']} (in another tab or window); a "
                           "submission is final, so what this form held was not stored." if mine["state"] == "submitted"
                           else f"{q['query_id']} was adjudicated meanwhile, so what this form held was not stored."))
    if to_write:
        _write(s, user, rid, q, mine)
    elif user.can(Permission.ADJUDICATE) and not q["adjudicated"] and q["visible"] and shown:
        _adjudicate(s, user, rid, q, shown)


def show(s: Store, user: User) -> None:
    st.subheader("Double-authoring rounds", anchor=False)
    st.caption("Two or more authors write the same questions' reference answers, each blind to the others until "
               "they submit; their agreement is measured; a lead adjudicates each question into its reference "
               "answer (the methodology as implemented: docs/methodology.md, Reference-answer rounds).")
    if user.can(Permission.RUN_ROUNDS):
        _open_form(s, user)
    mine = rr.my_questions(s, user)
    if mine:
        st.info(md_escape(f"{len(mine)} question(s) wait for your answer: "
                          + ", ".join(f"{m['query_id']} ({m['round_id']})" for m in mine[:12])))
    rounds = rr.list_rounds(s, user)
    if not rounds:
        st.caption("No reference rounds yet." + ("" if user.can(Permission.RUN_ROUNDS) else
                                                 " A lead opens one."))
        return
    # labels without counts: a label that changes after an adjudication makes the picker a new widget
    labels = {r["round_id"]: f"{r['round_id']} · {', '.join(r['authors'])} · opened by {r['created_by']}"
              for r in rounds}
    if st.session_state.get("rr_round") not in labels:  # a refresh keeps the round the address names
        linked = st.query_params.get("round")
        st.session_state["rr_round"] = linked if linked in labels else rounds[0]["round_id"]
    rid: str = picked(st.selectbox("Round", list(labels), key="rr_round", format_func=lambda r: labels[r]))
    st.query_params["round"] = rid
    view = attempt(lambda: rr.status(s, user, rid))
    if view is None:
        return
    st.caption(md_escape(f"{view.round['n_adjudicated']} of {view.round['n_questions']} question(s) adjudicated"
                         + (f". Note: {view.round['note']}" if view.round["note"] else ".")))
    _agreement(view)
    _table(view)
    by_id = {q["query_id"]: q for q in view.questions}
    waiting = [m["query_id"] for m in mine if m["round_id"] == rid]
    key = f"rr_{rid}_pick"
    if st.session_state.get(key) not in by_id:  # the address's, else first what waits for me, else the first
        linked = st.query_params.get("q")
        st.session_state[key] = (linked if linked in by_id else waiting[0] if waiting
                                 else view.questions[0]["query_id"])
    # the labels never carry the state: a picker whose labels change after a submit is a new widget
    # to the browser (the state is in the table above and the panel below)
    qid: str = picked(st.selectbox("Question", list(by_id), key=key,
                                   format_func=lambda q: f"{q} · {(by_id[q]['text'] or '')[:80]}"))
    st.query_params["q"] = qid
    with st.container(border=True):
        _question(s, user, rid, by_id[qid])
