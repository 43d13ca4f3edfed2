"""Transcripts: draw a stratified sample of failures and a share of the judge's passes, read
each transcript blind to the judge, say whose failure it was (keys 1-6 system failure classes,
n no failure, g grader, a ambiguous), then see what the judge said; feed failures back into the
golden set (methodology §12.5, §15.4: docs/methodology.md, the judge check); the judge check per evaluation: passes and failures
confirmed and overturned by reviewers (§11.1, Case 3)."""

from __future__ import annotations


import pandas as pd
import streamlit as st

from annotator.evaluation import transcripts
from annotator.people.roles import Permission
from app_pages._shared import (
    as_file,
    attempt,
    current_user,
    flash,
    md_escape,
    picked,
    progress_callback,
    require_page,
    show_flash,
    store,
    upload_bytes,
    upload_limit,
)
from app_pages.labeling_surface import labeling_surface

user = require_page(Permission.VIEW_STORE)
if not (user.can(Permission.REVIEW) or user.can(Permission.IMPORT_RUNS)):
    st.error("You do not have access to this page (it needs permission to review failure transcripts or "
             "to import system runs).")
    st.stop()
s = store()
st.title("Transcripts")
show_flash()

TRANSCRIPTS_UPLOAD_MB = 200

if user.can(Permission.IMPORT_RUNS):
    with st.expander("Import transcripts (JSONL)"):
        up = st.file_uploader('One line per trial: {"evaluation_id", "query_id", "trial", "passed", "metrics", '
                              '"transcript": {"question", "retrieved", "answer", "judge"}, "trace_id"?, '
                              '"source"?: eval_run | production_log}', type=["jsonl"], key="tr_file",
                              max_upload_size=upload_limit(TRANSCRIPTS_UPLOAD_MB))
        if st.button("Import", key="tr_import"):
            if up is None:
                st.error("Choose a transcripts file first.")
            elif (data := upload_bytes(up, TRANSCRIPTS_UPLOAD_MB, "golden transcripts import FILE")) is not None:
                file_name = up.name
                with as_file(data) as path:
                    imported = attempt(lambda: transcripts.import_file(
                        s, user, path, progress_callback("Reading transcripts"), name=file_name))
                if imported is not None:
                    flash(f"Imported {imported} transcript(s).")
                    st.rerun()

def judge_check_section() -> None:
    """Per evaluation: the judge's passes and failures against the reviewers' latest verdicts."""
    rows = transcripts.judge_check(s, user)
    st.subheader("Judge check", anchor=False)

    def rate(r: dict, kind: str) -> str:
        if r[f"false_{kind}_rate"] is None:
            return "-"
        return f"{r[f'false_{kind}_rate']:.2f} [{r[f'false_{kind}_low']:.2f}, {r[f'false_{kind}_high']:.2f}]"

    st.dataframe(pd.DataFrame([{
        "evaluation": r["evaluation_id"], "passes": r["passes"], "passes reviewed": r["passes_reviewed"],
        "passes confirmed": r["passes_confirmed"], "passes overturned": r["passes_overturned"],
        "false-pass rate [95% CI]": rate(r, "pass"),
        "failures": r["failures"], "failures reviewed": r["failures_reviewed"],
        "failures confirmed": r["failures_confirmed"], "failures overturned": r["failures_overturned"],
        "false-fail rate [95% CI]": rate(r, "fail")} for r in rows]), hide_index=True, width="stretch",
        key="tr_judge_check")
    st.caption("A judged pass a reviewer says failed (a system failure or a grader failure) is a judge false pass "
               "(the methodology's Case 3), one they say is right (no failure) confirms it; a judged failure reviewed as "
               "no failure or a grader failure is a false fail, as a system failure it is confirmed. Each transcript "
               "counts once, by its latest verdict; withdrawn verdicts do not count; ambiguous ones are reviewed "
               "and left out of the rates. Rates are overturned / (confirmed + overturned) with the Wilson 95% "
               "interval. Passes are reviewed when a draw takes a share of them (Share of passes, below).")


summary = pd.DataFrame(transcripts.summary(s, user))
if summary.empty:
    st.info("No transcripts yet: an engineer imports them here or with `golden transcripts import FILE`.")
    st.stop()
if not user.can(Permission.REVIEW):
    st.dataframe(summary, hide_index=True, width="stretch")
    judge_check_section()
    st.caption("Reviewing needs the reviewer role.")
    st.stop()
cards = transcripts.review_cards(s, user)
reviewed, drawn = transcripts.draw_progress(s, user)
if drawn:  # the review first, at the top of the page; the summary and new samples below
    st.progress(reviewed / drawn, text=f"{reviewed} / {drawn} reviewed in your samples")
    st.caption("Blind review: the judge's verdict, its justification and the metrics stay hidden until you give "
               "yours (a sample mixes failures and a share of the judge's passes); then see them under *Reviewed in "
               "my samples*. Keys: **1-6** system failure of that class · **n** no failure (the answer is right) · "
               "**g** grader failure (the judge or the label was wrong) · **a** ambiguous · **Backspace/z** undo · "
               "**?** all keys. Each verdict is bound to the transcript on screen.")
    # Not a fragment (unlike Judge): a verdict also changes the "add to the golden set" list below.
    labeling_surface(
        key="transcript_surface", surface=transcripts.SURFACE, actor=user.username, cards=cards,
        keys=transcripts.KEYS, submit=lambda labels: transcripts.submit(store(), current_user(), labels),
        exhausted=len(cards) < transcripts.QUEUE_AHEAD,
        empty="Every transcript you drew is reviewed: draw another sample.")

st.subheader("Per stratum", anchor=False)
st.dataframe(summary, hide_index=True, width="stretch")
sat = summary[summary["saturated"]]
if len(sat):
    st.warning("Saturated (no headroom left): " + ", ".join(md_escape(x) for x in sat["stratum"])
               + ". Retire them to a smoke tier and build harder items (§13.6).")
judge_check_section()

c1, c2, c3, c4 = st.columns([1, 1, 1, 2])
n = c1.number_input("Sample size", 1, 100, 10, key="tr_n")
seed = c2.number_input("Seed", 0, 2**31 - 1, 0, key="tr_seed")
share = c3.number_input("Share of passes", 0.0, 1.0, float(transcripts.DEFAULT_PASS_SHARE), 0.05, key="tr_pass_share",
                        help=f"The share of the sample drawn from the judge's passes (default "
                             f"{transcripts.DEFAULT_PASS_SHARE:g}; 0: failures only), balanced across strata the same "
                             "way and mixed in among the failures; 0.2 of 10 is 2.")
# the label stays (the browser tests find the button by it); the share beside it says what else is drawn
if c4.button("Draw failures to review", type="primary", key="tr_draw"):
    did = attempt(lambda: transcripts.draw(s, user, int(n), int(seed), float(share)))
    if did is not None:
        kind = "failure(s)" if not share else "transcript(s), failures and a share of the judge's passes"
        flash(f"Drew {len(did[1])} {kind}: they are at the top of the page." if did[1]
              else "No unreviewed transcript left to draw.")
        st.rerun()
if not drawn:
    st.caption("Draw a sample: failures (and the share of passes asked for) across strata and failure types, "
               "none you reviewed already.")

missing = {m["item_id"]: m for m in transcripts.to_add(s, user)}
if missing:
    with st.container(border=True):
        st.write(f"**{len(missing)} reviewed system failure(s) on questions not in the golden set yet**")
        # chosen by transcript id, not position: a verdict made meanwhile changes the list
        pick = st.selectbox("Transcript", list(missing), key="tr_add_pick",
                            format_func=lambda i: f"{i} · {missing[i]['question'][:80]}")
        t = missing[pick]
        # asked every time, no default, per transcript (a keyed answer would carry over to the next one):
        # production-log questions are often unanswerable (issue 37 item 10)
        _ANSWERS = {True: "Yes: the corpus answers it", False: "No: the corpus does not answer it"}
        answerable = st.radio("Does the corpus answer this question?", list(_ANSWERS), index=None, horizontal=True,
                              key=f"tr_add_answerable_{pick}", format_func=lambda a: _ANSWERS[a],
                              help="A question the corpus does not answer is stored unanswerable (answerable = "
                                   "false, the negative stratum by default, the reason in its notes), as on the "
                                   "Queries page: scores leave it out, and a system should decline it.")
        strata = sorted(transcripts.strata(s, user))
        reason = ""
        if answerable is False:
            reason = st.text_input("Why not: what the corpus lacks (required, kept in the question's notes)",
                                   key=f"tr_add_reason_{pick}", max_chars=500)
            cur = transcripts.NEGATIVE_STRATUM if transcripts.NEGATIVE_STRATUM in strata else None
        else:
            cur = t["stratum"] if t["stratum"] in strata and t["stratum"] != transcripts.NEGATIVE_STRATUM else None
            if answerable:  # the negative stratum means unanswerable: not offered for an answerable question
                strata = [x for x in strata if x != transcripts.NEGATIVE_STRATUM]
        # one stratum box per answer, so each starts at its own default (negative for an unanswerable question)
        stratum = st.selectbox("Stratum", strata, index=strata.index(cur) if cur in strata else 0,
                               key=f"tr_add_stratum_{pick}_{answerable}")
        if st.button("Add to the golden set", key="tr_add"):
            qid = attempt(lambda: transcripts.add_to_golden_set(s, user, t["item_id"], stratum, answerable=answerable,
                                                                reason=reason))
            if qid:
                flash(f"Added {qid} ({t['source']}, dated today, answerable, stratum {stratum}): it waits in the "
                      "evidence queue." if answerable else
                      f"Added {qid} ({t['source']}, dated today, stratum {stratum}) as not answerable from the corpus, "
                      "with your reason in its notes: it takes no evidence quotes, and retrieval scores leave it out.")
                st.rerun()



def corrected(r: dict) -> str:
    """'' when the verdict replaced none; else the verdict it replaced."""
    return transcripts.verdict_label(r["previous_verdict"], r["previous_class"])


my_reviews = transcripts.my_reviewed(s, user)
if my_reviews:
    with st.expander(f"Reviewed in my samples ({len(my_reviews)})"):
        st.caption("Your verdicts, and now what the judge said: *judge passed*, its verdict and justification; "
                   "*against judge* marks a verdict that contradicts it (it waits in the lead's Adjudication). "
                   "*corrected* names the verdict a change replaced (the old one stays in the history).")

        st.dataframe(pd.DataFrame([{
            "transcript": r["item_id"], "your verdict": r["verdict"], "class": r["failure_class"],
            "corrected": f"yes, was {corrected(r)}" if corrected(r) else "", "judge passed": r["passed"],
            "judge verdict": r["judge_verdict"], "against judge": r["against_judge"],
            "judge justification": r["judge_justification"], "note": r["review_note"],
            "stratum": r["stratum"]} for r in my_reviews]), hide_index=True, width="stretch",
            key="tr_my_reviews")

    mine = {r["item_id"]: r for r in my_reviews if r["reviewer"] == user.username}
    if mine:
        # open again after a change (the rerun's message above it re-creates it): the result is in it
        with st.expander(f"Change one of my verdicts ({len(mine)})", expanded=st.session_state.pop("_tr_fixed", False)):
            st.caption("A verdict you gave can be changed after the sample, with a reason: the new verdict "
                       "supersedes it, the old one stays in the history below.")
            # labelled by what does not change (a label that did stayed on screen after a change)
            fix = st.selectbox("Verdict to change", list(mine), key="tr_fix_pick",
                               format_func=lambda i: f"{i} · {mine[i]['question'][:80]}")
            r = mine[fix]
            n = st.session_state.get("_tr_fix_n", 0)  # a new form after each change: its fields start empty
            now = transcripts.verdict_label(r["verdict"], r["failure_class"])
            st.markdown(f"Your verdict now: **{md_escape(now)}**"
                        + (f" (corrected; it replaced *{md_escape(corrected(r))}*)" if corrected(r) else ""))
            choices = [c for c in transcripts.VERDICT_CHOICES if c != (r["verdict"], r["failure_class"])]
            new: tuple[str, str | None] = picked(st.selectbox(
                "New verdict", choices, key=f"tr_fix_verdict_{fix}_{n}", format_func=lambda c: transcripts.verdict_label(*c)))
            why = st.text_input("Why you change it (required, kept with the new verdict)", key=f"tr_fix_why_{fix}_{n}",
                                max_chars=500)
            if st.button("Change my verdict", key="tr_fix_save"):
                changed = attempt(lambda: transcripts.correct_verdict(s, user, fix, new[0], new[1], why,
                                                                      expected_event=r["review_event_id"]))
                if changed is not None:
                    flash(f"Changed your verdict on {fix} from {now} to {transcripts.verdict_label(*new)} (a new "
                          "verdict; the old one stays in the history).")
                    st.session_state["_tr_fixed"] = True
                    st.session_state["_tr_fix_n"] = n + 1
                    st.rerun()
            st.caption("Its verdicts so far, oldest first (a change adds one; none is overwritten):")
            st.dataframe(pd.DataFrame([{
                "when": h["created_at"], "who": h["actor"],
                "verdict": transcripts.verdict_label(h["verdict"], h["failure_class"]), "note": h["note"] or ""}
                for h in transcripts.verdict_history(s, user, fix)]), hide_index=True, width="stretch",
                key="tr_fix_history")
