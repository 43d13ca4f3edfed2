"""Nuggets: draft a question's atomic facts with Claude (or write them), edit, approve; assign
them to system answers (keys 1/2/3) and read V_strict / V / A_strict / A (methodology §10.9: docs/methodology.md, nuggets)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator.evaluation import answer_checks
from annotator.evidence import nuggets
from annotator.judge import llm
from annotator.process import jobs
from annotator.people.roles import Permission
from app_pages import _cost
from app_pages._shared import (answers_import, attempt, current_user, flash, md_escape, picked, require_page,
                                searchable_picker, show_flash, store)
from app_pages.labeling_surface import labeling_surface
from golden_store.live import llm_log

# reviewers without LABEL come for the Scores section only: marking answers' outcomes
user = require_page(Permission.LABEL, Permission.MARK_OUTCOMES)


def clear_nugget_form(suffix: str) -> None:
    """Ask the next run to draw the one-nugget form (``suffix``: question and nugget) afresh
    from the store. Streamlit keeps a keyed widget's value across reruns and ignores a new
    default, and the browser keeps what it shows unless the value is set through Session
    State before the widget is drawn: :func:`nugget_form_state` does that."""
    st.session_state["nug_form_reset"] = suffix


def nugget_form_state(suffix: str, defaults: dict[str, object], top: int) -> None:
    """Put the form's values in Session State before its widgets are drawn: ``defaults`` (by
    widget key) when the form is new or was just saved (:func:`clear_nugget_form`), else what
    the person typed, kept. A position beyond ``top`` (the list got shorter) goes back to its
    default."""
    fresh = st.session_state.get("nug_form_reset") == suffix
    if fresh:
        del st.session_state["nug_form_reset"]
    for key, value in defaults.items():
        kept = st.session_state.get(key)
        stray = key.startswith("nug_p_") and isinstance(kept, (int, float)) and not 1 <= kept <= top
        if fresh or kept is None or stray:
            st.session_state[key] = value


def deterministic_checks() -> None:
    """The deterministic checks of the systems' answers (§10.7) and their gate: the service
    computes, this renders; system text shows only in table cells and escaped Markdown."""
    st.subheader("Deterministic checks", anchor=False)
    names = answer_checks.answer_systems(store(), user)
    if not names:
        st.info("The deterministic checks appear once system answers are imported.")
        return
    st.caption("Per system, over its answers to live questions, no model asked (§10.7): empty answers, answers over "
               "the length cap, forbidden patterns (prompt-scaffolding markers such as <context> or [INST] always, "
               "and yours), invalid citations - any one fails the gate, as `golden answers checks` exits 1. "
               "Words: whitespace-separated. With a baseline, a length shift is flagged when a two-sample "
               "Kolmogorov-Smirnov test on the questions both answered gives p < 0.01 and the median moved by 25% "
               "or more. Refusal and abstention rates are over the marked answers; unmarked ones are counted apart.")
    c1, c2, c3 = st.columns([2, 3, 1])
    baseline = c1.selectbox("Baseline (length shift)", [None, *names], key="nug_chk_base",
                            format_func=lambda x: "none" if x is None else x)
    forbid = c2.text_area("Forbidden patterns: one regular expression a line (case-insensitive)", key="nug_chk_forbid",
                          height=68)
    cap = c3.number_input("Length cap (characters)", min_value=1, value=answer_checks.DEFAULT_MAX_CHARS, step=500,
                          key="nug_chk_cap")
    patterns = [line.strip() for line in (forbid or "").splitlines() if line.strip()]
    rep = attempt(lambda: answer_checks.checks(store(), user, baseline=baseline, forbid=patterns, max_chars=int(cap)))
    if rep is None:
        return
    if rep.gate == "PASS":
        st.success(f"Gate: PASS ({len(rep.per_system)} system(s) checked).")
    else:
        st.error("Gate: FAIL\n\n" + "\n".join(f"- {md_escape(f)}" for f in rep.failures))
    st.dataframe(answer_checks.system_rows(rep), hide_index=True, width="stretch", key="nug_chk_systems")
    hits = answer_checks.hit_rows(rep)
    if hits:
        st.caption("Forbidden patterns found (what the first hit matched, as the system wrote it):")
        st.dataframe(hits, hide_index=True, width="stretch", key="nug_chk_hits")
    st.caption("Refusal and abstention per stratum:")
    st.dataframe(answer_checks.strata_rows(rep), hide_index=True, width="stretch", key="nug_chk_strata")


s = store()
st.title("Nuggets")
show_flash()

# One section at a time (not tabs): hidden tabs would still bind the assignment keys 1/2/3.
# Scores name each answer's system: shown to those who see systems (leads, reviewers, admins),
# never to graders, whose assignment is blind (M6; annotator.evidence.nuggets refuses them too).
show_scores = nuggets.sees_systems(user)
sections = (["Author", "Assign to answers"] if user.can(Permission.LABEL) else []) + (["Scores"] if show_scores else [])
mode = st.radio("Section", sections, horizontal=True, key="nug_mode", label_visibility="collapsed")

# ---- author ---------------------------------------------------------------------------------
if mode == "Author":
    # plain rows, not a frame: building, sorting and walking a 20,000-row frame for the picker
    # was ~0.5 s of every render at team scale (issue 19)
    status = nuggets.status(s, user)
    if not status:
        st.info("No questions yet: add queries on the Queries page.")
        st.stop()
    # questions with evidence and no approved nuggets first
    status.sort(key=lambda r: (not (r["n_approved"] == 0 and r["n_evidence"] > 0), r["query_id"]))
    meta = {r["query_id"]: r for r in status}
    # labels that a save does not change: the browser sends the picked option back by its label,
    # and a label with the nugget counts in it no longer matched after a save, so the next click
    # jumped to the first question (whose History was empty: M7). The counts are in the caption.
    labels = {r["query_id"]: f"{r['query_id']} · {r['stratum']} · {r['text'][:80]}" for r in status}
    qid = searchable_picker("Question", labels, key="nug_q")
    row = meta[qid]
    st.subheader(md_escape(row["text"]), anchor=False)
    st.caption(f"{qid} · {md_escape(row['stratum'])} · {row['n_approved']}/{row['n_nuggets']} nugget(s) approved"
               + (" · held out: never sent to a hosted model" if row["held_out"] else ""))
    include_judged = st.checkbox("Also use pooled passages graded 2 or 3", value=True, key="nug_judged")
    ps = nuggets.passages(s, qid, include_judged, user)
    with st.expander(f"Evidence ({len(ps)} passage(s))", expanded=False):
        for i, p in enumerate(ps, 1):
            st.caption(f"[{i}] {md_escape(p.doc_id)} [{p.start}:{p.end}] · {p.kind}")
            st.text(p.text)
        if not ps:
            st.caption("No evidence yet: add quotes on the Evidence page, or write nuggets by hand.")

    key_ok = llm.api_key_present()
    c1, c2 = st.columns([1, 3])
    # the button shows the estimate first (§11.7); only its confirmation sends anything
    if c1.button("Draft with Claude", type="primary", key="nug_draft",
                 disabled=not key_ok or bool(row["held_out"]) or not ps):
        plan = attempt(lambda: nuggets.plan(s, user, [qid], include_judged=include_judged))
        if plan is not None and plan.skipped:
            st.error(md_escape(plan.skipped[0][1]))
        elif plan is not None:
            _cost.propose("nug_plan", plan, (qid, include_judged))
    if not key_ok:
        c2.info(llm.how_to_enable() + " You can write nuggets by hand below.")
    elif row["held_out"]:
        c2.caption("Held-out questions are never sent to Claude (contamination, §3.8): write them by hand.")
    if _cost.confirmed("nug_plan", (qid, include_judged)) is not None:
        out = attempt(lambda: nuggets.draft(s, user, qid, include_judged=include_judged))
        if out is not None:
            flash(f"{out.outcome}: {out.message}" + (f" (cost ${out.cost_usd:.4f})" if out.cost_usd else ""))
            st.session_state["nug_used"] = (qid, nuggets.job_usage([out]).lines())
            st.rerun()
    used = st.session_state.get("nug_used")
    if used and used[0] == qid:
        _cost.show_usage("The last draft used:", used[1])

    current = nuggets.current(s, user, qid)
    frame = pd.DataFrame([{"nugget_id": n["nugget_id"], "position": i + 1, "text": n["text"],
                           "importance": n["importance"], "quote": n["quote"] or "",
                           "quote in evidence": not n["flagged"] if n["quote"] else None, "approved": n["approved"],
                           "by": n["actor"] + (f" ({n['model']})" if n["model"] else "")}
                          for i, n in enumerate(current)],
                         columns=["nugget_id", "position", "text", "importance", "quote", "quote in evidence",
                                  "approved", "by"])
    st.caption("Edit in place; add a row for a new nugget, delete rows to drop them, change position to "
               "reorder. Nuggets are 1-12 words; the quote must be verbatim from the evidence.")
    edited = st.data_editor(
        frame, key=f"nug_editor_{qid}", num_rows="dynamic", hide_index=True, width="stretch",
        column_config={
            "nugget_id": st.column_config.TextColumn("id", disabled=True),
            "position": st.column_config.NumberColumn("position", min_value=1, step=1),
            "text": st.column_config.TextColumn("nugget", required=True, max_chars=200),
            "importance": st.column_config.SelectboxColumn("importance", options=["vital", "okay"], required=True),
            "quote": st.column_config.TextColumn("supporting quote"),
            "quote in evidence": st.column_config.CheckboxColumn(disabled=True),
            "approved": st.column_config.CheckboxColumn(disabled=True),
            "by": st.column_config.TextColumn(disabled=True),
        })
    b1, b2, _ = st.columns([1, 1, 3])
    if b1.button("Save edits", key="nug_save"):
        rows = edited.assign(position=edited["position"].fillna(len(edited) + 1)).sort_values("position", kind="stable")
        payload = [{"nugget_id": r["nugget_id"] if isinstance(r["nugget_id"], str) and r["nugget_id"] else None,
                    "text": r["text"] if isinstance(r["text"], str) else "",
                    "importance": r["importance"] if isinstance(r["importance"], str) else "",
                    "quote": r["quote"] if isinstance(r["quote"], str) else ""} for _, r in rows.iterrows()]
        counts = attempt(lambda: nuggets.save(s, user, qid, payload))
        if counts is not None:
            st.session_state.pop(f"nug_editor_{qid}", None)  # its edits are stored now: start from the store
            flash(f"Saved: {counts['add']} added, {counts['edit']} edited, {counts['delete']} deleted.")
            st.rerun()
    if b2.button("Approve the list", key="nug_approve"):
        n = attempt(lambda: nuggets.approve(s, user, qid))
        if n is not None:
            flash(f"Approved {n} nugget(s) of {qid}: they go into the next frozen version.")
            st.rerun()

    # keyed: it stays open after a save (its default, open while the list is empty, would fold it
    # under the person adding their second nugget)
    with st.expander("Edit one nugget, or add one", expanded=not current, key=f"nug_one_box_{qid}"):
        ids = [None] + [n["nugget_id"] for n in current]
        target = st.selectbox("Nugget", ids, key=f"nug_one_{qid}",
                              format_func=lambda nid: "a new nugget" if nid is None else
                              f"{nid}: {next(n['text'] for n in current if n['nugget_id'] == nid)}")
        base = next((n for n in current if n["nugget_id"] == target), None)
        suffix = f"{qid}_{target}"
        # a new nugget starts empty and goes at the end of the list (append); an existing one
        # shows what is stored. Set through Session State, so a save resets what the browser shows.
        top = len(current) + (0 if base else 1)
        nugget_form_state(suffix, {f"nug_t_{suffix}": base["text"] if base else "",
                                   f"nug_i_{suffix}": base["importance"] if base else "vital",
                                   f"nug_qt_{suffix}": (base["quote"] or "") if base else "",
                                   f"nug_p_{suffix}": (current.index(base) + 1) if base else len(current) + 1},
                          max(1, top))
        one_text = st.text_input("Nugget (1-12 words)", key=f"nug_t_{suffix}")
        one_imp: str = picked(st.radio("Importance", ["vital", "okay"], horizontal=True, key=f"nug_i_{suffix}"))
        one_quote = st.text_input("Supporting quote (verbatim from the evidence; optional)", key=f"nug_qt_{suffix}")
        one_pos = st.number_input("Position", 1, max(1, top), key=f"nug_p_{suffix}", step=1,
                                  help="Where the nugget goes in the list; a new one goes at the end unless you "
                                       "change it.")
        e1, e2, _ = st.columns([1, 1, 3])
        if e1.button("Save nugget" if base else "Add nugget", key="nug_one_save"):
            counts = attempt(lambda: nuggets.edit_one(s, user, qid, target, text=one_text, importance=one_imp,
                                                      quote=one_quote, position=int(one_pos)))
            if counts is not None:
                # the form starts over from what is stored: empty for the next new nugget, its
                # position the end of the list (M8: the old text and position stayed, and the
                # third nugget went in at the second's place)
                clear_nugget_form(suffix)
                flash(f"Saved: {counts['add']} added, {counts['edit']} edited.")
                st.rerun()
        if base and e2.button("Delete nugget", key="nug_one_delete"):
            if attempt(lambda: nuggets.edit_one(s, user, qid, target, delete=True)) is not None:
                clear_nugget_form(f"{qid}_None")  # the new-nugget form's position: the list got shorter
                flash(f"Deleted {target}.")
                st.rerun()

    with st.expander("History (what the model proposed, what people changed)"):
        hist = nuggets.history(s, user, qid)
        if hist:
            # a count in words above the table: the table is drawn on a canvas, whose text a screen
            # reader or a copy does not get (an open History read as empty; M7)
            st.caption(md_escape(nuggets.history_summary(qid, hist)))
            st.dataframe(pd.DataFrame(hist), hide_index=True, width="stretch", key=f"nug_hist_{qid}")
        else:
            st.caption("No nugget events yet.")

    with st.expander("Draft many questions (background job)"):
        strata = sorted({r["stratum"] for r in status})
        which = st.selectbox("Questions", ["all without nuggets", *strata], key="nug_bulk_scope",
                             format_func=lambda v: v if v == "all without nuggets" else f"stratum {v} (without nuggets)")
        use_batch = st.checkbox("Use the Message Batches API (half price, can take up to 24 h)", key="nug_batch")
        targets = [r["query_id"] for r in status
                   if r["n_nuggets"] == 0 and (which == "all without nuggets" or r["stratum"] == which)]
        st.caption(f"{len(targets)} question(s); held-out ones and ones without evidence are skipped with the reason.")
        bulk_params = (tuple(targets), use_batch)
        if st.button("Start drafting", key="nug_bulk", disabled=not key_ok or not targets):
            plan = attempt(lambda: nuggets.plan(s, user, targets, batch=use_batch))
            if plan is not None:
                _cost.propose("nug_bulk_plan", plan, bulk_params)
        if _cost.confirmed("nug_bulk_plan", bulk_params) is not None:
            job = jobs.start(f"Drafting nuggets for {len(targets)} question(s)", user.username,
                             lambda progress: nuggets.summarize(nuggets.draft_many(
                                 s, user, targets, batch=use_batch, progress=progress)))
            st.session_state["nug_job"] = job.job_id

        @st.fragment(run_every=1.0)
        def job_panel() -> None:
            job = jobs.get(st.session_state.get("nug_job"))
            if job is None:
                return
            if job.status == "running":
                st.progress(job.done / job.total if job.total else 0.0,
                            text=f"{job.label}: {job.done}/{job.total or '?'}")
            elif job.status == "failed":
                st.error(md_escape(job.error))
            else:
                r = job.result
                st.success(f"{job.label}: done. Outcomes {r['outcomes']}; {r['nuggets_added']} nugget(s) added, "
                           f"{r['flagged']} flagged; tokens in {r['input_tokens']}, out {r['output_tokens']}, "
                           f"cache read {r['cache_read_tokens']}; cost "
                           + (f"${r['cost_usd']:.4f}" if r["cost_usd"] is not None else "unknown"))
                _cost.show_usage("The job used:", r["usage_lines"])

        job_panel()
        u = llm_log.usage_summary(s, nuggets.PURPOSE)
        st.caption(f"All nugget drafting so far: {u['calls']} call(s), {u['refusals']} refusal(s), "
                   f"{u['errors']} failed, "
                   f"{u['input_tokens']} input / {u['output_tokens']} output tokens "
                   f"({u['cache_write_tokens']} cache-write, {u['cache_read_tokens']} cache-read), "
                   + (f"${u['cost_usd']:.4f}" if u["cost_usd"] is not None else "no priced calls"))

# ---- assign ----------------------------------------------------------------------------------
if mode == "Assign to answers":
    have_answers = nuggets.has_answers(s, user)
    if user.can(Permission.IMPORT_RUNS):
        with st.expander("Import system answers", expanded=not have_answers, key="nug_ans_box"):
            answers_import(user, "nug_ans")
    if not have_answers:
        st.info("No system answer yet." + ("" if user.can(Permission.IMPORT_RUNS) else
                " An engineer imports answers on the Runs & pool page or with "
                "`golden answers import FILE --system NAME` (JSONL: query_id, answer)."))
    else:
        done, total = nuggets.assignment_progress(s, user)
        st.progress(done / total if total else 1.0, text=f"{done} / {total} nuggets assigned")
        st.caption("Does the answer support the nugget? **1** support · **2** partial · **3** none · "
                   "**Backspace/z** undo · **←** look back. Answers are named by a reference, never by the "
                   "system that wrote them; all nuggets of one answer come in a row.")
        labeling_surface(
            key="assignment_surface", surface=nuggets.ASSIGN_SURFACE, actor=user.username,
            cards=nuggets.assignment_cards(s, user), keys=nuggets.ASSIGN_KEYS,
            submit=lambda labels: nuggets.submit_assignments(store(), current_user(), labels),
            progress={"done": done, "total": total}, exhausted=True,
            empty="Every nugget of every answer is assigned." if total else
                  "No answer to a question with approved nuggets yet.")

# ---- scores ----------------------------------------------------------------------------------
if mode == "Scores" and user.can(Permission.VIEW_RESULTS):
    no_vital: str = picked(st.radio(
        "A question with no vital nugget", list(nuggets.NO_VITAL_DEFINITIONS), horizontal=True, key="nug_no_vital",
        format_func=lambda c: {"methodology": "V undefined, left out (§10.9)", "nuggetizer": "V = 0 (nuggetizer)"}[c]))
    per_answer, per_system = nuggets.scores(s, user, no_vital=no_vital)
    if per_answer.empty:
        st.info("Nugget scores appear once answers are imported and their nuggets assigned.")
    else:
        st.caption("V_strict: share of vital nuggets fully supported; V: partial counts 0.5; A_strict / A: the "
                   "same over all nuggets. Compare systems on these means, not single answers (§10.9). "
                   f"Here {nuggets.NO_VITAL_DEFINITIONS[no_vital]}: `no_vital` counts those answers, `v_answers` is how "
                   "many answers the V means are over.")
        if not per_system.empty:
            st.dataframe(per_system, hide_index=True, width="stretch")
        st.dataframe(per_answer, hide_index=True, width="stretch")

if mode == "Scores":
    st.subheader("Abstention", anchor=False)
    reports = nuggets.abstention(s, user)
    if not reports:
        st.info("Abstention figures appear once system answers are imported (with an outcome per answer, or "
                "marked below).")
    else:
        first = next(iter(reports.values()))
        st.caption(
            "Per system, over its answers to live questions (§10.5). **Abstention recall**: unanswerable questions it "
            "declined (1 − fabrication rate). **Abstention precision**: of its declines, those on unanswerable "
            "questions. **Over-refusal rate**: answerable questions it declined. **Refusal rate**: safety refusals "
            "among every scored answer. Refused answers are their own category: left out of the three abstention "
            "rates and counted apart. Unmarked answers (no outcome yet) are left out of every number. Each rate: "
            f"value [95% percentile bootstrap interval over questions, n_boot {first.n_boot}, seed {first.seed}] "
            "(numerator/denominator); *undefined* when its denominator is empty.")
        st.dataframe(nuggets.abstention_table(reports), hide_index=True, width="stretch", key="nug_abstention")
        for why in nuggets.undefined_reasons(reports):
            st.caption(md_escape(why))
        unmarked = {name: r.n_unmarked for name, r in reports.items() if r.n_unmarked}
        if unmarked:
            st.warning(md_escape("Incomplete: answers without an outcome are left out - "
                                 + ", ".join(f"{name}: {n}" for name, n in unmarked.items()) + "."))

    if user.can(Permission.VIEW_RESULTS):
        deterministic_checks()

    if user.can(Permission.MARK_OUTCOMES):
        rows = nuggets.answer_outcomes(s, user)
        with st.expander("Mark an answer's outcome", expanded=bool(rows) and any(r["basis"] == "unmarked"
                                                                                   for r in rows)):
            if not rows:
                st.caption("No system answer to mark yet.")
            else:
                # unmarked first; an answer is named by its reference, not its system (as when assigning)
                rows.sort(key=lambda r: (r["basis"] != "unmarked", r["query_id"], nuggets.answer_ref(r["system"],
                                                                                                   r["query_id"])))
                by_ref = {nuggets.answer_ref(r["system"], r["query_id"]): r for r in rows}
                ref = searchable_picker(
                    "Answer", {k: f"{k} · {r['query_id']} · {r['outcome']} ({r['basis']}) · {r['query_text'][:70]}"
                               for k, r in by_ref.items()}, key="nug_out_pick", noun="answer")
                row = by_ref[ref]
                st.caption(f"Question {md_escape(row['query_id'])} · "
                           + ("answerable" if row["answerable"] else "unanswerable (the corpus lacks the answer)"))
                st.text(row["query_text"])
                st.caption(f"Answer {ref}")
                st.text(row["answer"])
                who = f" by {row['marked_by']} at {row['marked_at']:%Y-%m-%d %H:%M}" if row["marked_by"] else ""
                st.caption(md_escape(f"Now: {row['outcome']} ({row['basis']}{who}); imported as "
                                     f"{row['imported_outcome']}."))
                with st.form(f"nug_out_form_{ref}", clear_on_submit=True, enter_to_submit=True):
                    now = row["outcome"] if row["outcome"] in nuggets.OUTCOMES else nuggets.OUTCOMES[0]
                    choice: str = picked(st.radio(
                        "Outcome", nuggets.OUTCOMES, index=nuggets.OUTCOMES.index(now), horizontal=True,
                        key=f"nug_out_choice_{ref}",
                        help="answered: it gave an answer · abstained: it declined (\"the documents do not say\") · "
                             "refused: a safety refusal"))
                    note = st.text_input("Note (optional, kept in the history)", key=f"nug_out_note_{ref}")
                    saved = st.form_submit_button("Save outcome", type="primary")
                if saved:
                    ev = attempt(lambda: nuggets.mark_outcome(s, user, row["system"], row["query_id"], choice,
                                                              note=note))
                    if ev is not None:
                        flash(f"Answer {ref} to {row['query_id']} marked {choice}.")
                        st.rerun()
                if row["basis"] == "marked" and st.button("Undo the marks (back to the imported outcome)",
                                                          key="nug_out_undo"):
                    if attempt(lambda: nuggets.mark_outcome(s, user, row["system"], row["query_id"],
                                                            "withdrawn")) is not None:
                        flash(f"Answer {ref}: back to its imported outcome ({row['imported_outcome']}).")
                        st.rerun()
