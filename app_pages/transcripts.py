"""Transcripts: draw a stratified sample of failures and a share of the judge's passes, read
each transcript blind to the judge, say whose failure it was (keys 1-6 system failure classes,
n no failure, g grader, a ambiguous), then see what the judge said; feed failures back into the
golden set (METHODOLOGY §12.5, §15.4); the judge check per evaluation: passes and failures
confirmed and overturned by reviewers (§11.1, Case 3)."""

from __future__ import annotations


import pandas as pd
import streamlit as st

from annotator import transcripts
from annotator.roles import Permission
from app_pages._shared import (
    as_file,
    attempt,
    current_user,
    flash,
    md_escape,
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
                with as_file(data) as path:
                    n = attempt(lambda: transcripts.import_file(s, user, path, progress_callback("Reading transcripts"),
                                                                name=up.name))
                if n is not None:
                    flash(f"Imported {n} transcript(s).")
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
               "(METHODOLOGY Case 3), one they say is right (no failure) confirms it; a judged failure reviewed as "
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
        strata = sorted(transcripts.strata(s, user))
        cur = t["stratum"] if t["stratum"] in strata else None
        stratum = st.selectbox("Stratum", strata, index=strata.index(cur) if cur else 0, key="tr_add_stratum")
        if st.button("Add to the golden set", key="tr_add"):
            qid = attempt(lambda: transcripts.add_to_golden_set(s, user, t["item_id"], stratum))
            if qid:
                flash(f"Added {qid} ({t['source']}, dated today): it waits in the evidence queue.")
                st.rerun()

my_reviews = transcripts.my_reviewed(s, user)
if my_reviews:
    with st.expander(f"Reviewed in my samples ({len(my_reviews)})"):
        st.caption("Your verdicts, and now what the judge said: *judge passed*, its verdict and justification; "
                   "*against judge* marks a verdict that contradicts it (it waits in the lead's Adjudication).")
        st.dataframe(pd.DataFrame([{
            "transcript": r["item_id"], "your verdict": r["verdict"], "judge passed": r["passed"],
            "judge verdict": r["judge_verdict"], "against judge": r["against_judge"],
            "judge justification": r["judge_justification"], "class": r["failure_class"], "note": r["review_note"],
            "stratum": r["stratum"]} for r in my_reviews]), hide_index=True, width="stretch",
            key="tr_my_reviews")
