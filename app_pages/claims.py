"""Claim review: check the faithfulness judge's claim verdicts by hand (methodology §10.2,
§11.1: docs/methodology.md). A seeded sample of claims, stratified by the judge's verdict, one at a time with the
keyboard (1 supported, 2 contradicted, 3 insufficient, Backspace/z undo, arrows to look back,
? for the keys) on the same labeling surface as the Judge page. Blind: the card shows the
question, the claim, the answer and its context, never what the judge said; that shows below
once the reviewer's verdict is saved. After the sample, people's agreement with the judge."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator.labeling import claim_review
from annotator.people.roles import Permission
from app_pages._shared import attempt, current_user, md_escape, require_page, show_flash, store
from app_pages.labeling_surface import labeling_surface

user = require_page(Permission.REVIEW, Permission.CALIBRATE_JUDGE)
s = store()
st.title("Claim review")
show_flash()

systems = claim_review.systems(s, user)
if not systems:
    st.info("No claims to review yet: an engineer or lead checks a system's answers with "
            "`golden answers check-claims --system NAME` (answers imported with their contexts).")
    st.stop()

c1, c2, c3 = st.columns([2, 1, 1])
ALL = "All systems"
picked_system = c1.selectbox("System", [ALL, *systems], key="cr_system")
system = None if picked_system == ALL else picked_system
n = int(c2.number_input("Sample size", 1, claim_review.MAX_SAMPLE, claim_review.DEFAULT_SAMPLE, key="cr_n",
                        help="Claims in the sample, split evenly across the judge's verdicts (supported, "
                             "contradicted, insufficient) as far as each has claims. A larger size keeps the "
                             "claims already in the sample."))
seed = int(c3.number_input("Seed", 0, 2**31 - 1, 0, key="cr_seed",
                           help="The same seed gives every reviewer the same sample, so reviews can be compared."))

drawn = attempt(lambda: claim_review.queue(s, user, n, seed, system))
if drawn is None:
    st.stop()
todo, done, total = drawn
st.progress(done / total if total else 1.0, text=f"{done} of {total} claims reviewed in this sample")
st.caption("Blind review: the judge's verdict, quote and justification stay hidden until you give yours; then they "
           "show under *Your reviews and the judge's verdicts*. Keys: **1** supported (the context says so) · "
           "**2** contradicted (the context says otherwise) · **3** insufficient (the context does not say) · "
           "**Backspace/z** undo · **←/→** look back · **?** all keys. Each verdict is bound to the claim on screen.")
# Not a fragment: a verdict also changes the list of the judge's verdicts and the agreement below.
labeling_surface(
    key="claim_surface", surface=claim_review.SURFACE, actor=user.username,
    cards=claim_review.cards(s, user, todo), keys=claim_review.KEYS,
    submit=lambda labels: claim_review.submit(store(), current_user(), labels),
    progress={"done": done, "total": total}, exhausted=len(todo) <= claim_review.QUEUE_AHEAD, noun="claims",
    empty="Every claim of this sample is reviewed: the agreement with the judge is below. A larger sample "
          "adds claims.")

st.subheader("Your reviews and the judge's verdicts", anchor=False)
mine = claim_review.my_reviews(s, user, system)
if mine:
    st.dataframe(pd.DataFrame([{"claim": r["claim"], "question": r["query_id"], "system": r["system"],
                                "you": r["review"], "judge": r["judge"], "agree": r["agrees"],
                                "judge's quote": r["quote"], "judge's justification": r["justification"]}
                               for r in mine]), hide_index=True, width="stretch")
    st.caption("Latest first. Undo (Backspace or z on the surface) withdraws a review: the claim comes back to "
               "your queue.")
else:
    st.caption("None yet: the judge's verdict of a claim shows here once you have given yours.")


def show_report(rep: dict) -> None:
    """The agreement figures: κ against the §11.1 bar, raw agreement, the FAIL recall with its
    counts, the confusion table and each reviewer's figures (numbers and names as data, not
    Markdown)."""
    o = rep["overall"]
    if not o["n"]:
        st.caption("No review of a current claim yet.")
        return
    fr = o["fail_recall"]
    a, b, c = st.columns(3)
    a.metric("Cohen's κ", "undefined" if o["kappa"] is None else f"{o['kappa']:.3f}",
             help=f"Over the three verdicts; the bar before the judge may gate anything is {o['kappa_bar']}."
                  + (f" Undefined: {o['kappa_reason']}." if o["kappa"] is None and o["kappa_reason"] else ""))
    b.metric("Raw agreement", f"{o['raw_agreement']:.3f}")
    c.metric("FAIL recall", "undefined" if fr["recall"] is None else f"{fr['recall']:.3f}",
             help="Of the claims people called contradicted or insufficient, the share the judge did not call "
                  "supported either.")
    ci = fr["interval"]
    st.caption(f"{rep['reviews']} review(s) of {rep['claims']} claim(s) by {len(rep['reviewers'])} reviewer(s). "
               f"FAIL recall: the judge caught {fr['caught']} of {fr['human_fail']} claims people call unsupported"
               + (f" (Wilson 95% {ci[0]:.2f}-{ci[1]:.2f})" if ci else "") + ". "
               + ("κ meets the bar." if o["meets_bar"] else "κ is below the bar: the judge's faithfulness may not "
                  "gate anything yet." if o["meets_bar"] is False else "")
               + (f" {rep['left_out_stale']} review(s) of checks since replaced are left out."
                  if rep["left_out_stale"] else ""))
    st.markdown("Confusion (rows: people, columns: the judge)")
    st.dataframe(pd.DataFrame(o["confusion"], index=[f"people: {v}" for v in o["labels"]],
                              columns=[f"judge: {v}" for v in o["labels"]]), width="stretch")
    st.dataframe(pd.DataFrame([{"reviewer": name, "claims": f["n"], "κ": f["kappa"], "raw agreement":
                                f["raw_agreement"], "FAIL recall": f["fail_recall"]["recall"],
                                "caught": f["fail_recall"]["caught"], "people: unsupported": f["fail_recall"]["human_fail"]}
                               for name, f in rep["per_reviewer"].items()]), hide_index=True, width="stretch")
    st.caption("Judge " + ", ".join(md_escape(m) for m in rep["judges"]) + "; check prompt "
               + ", ".join(md_escape(x[:12]) for x in rep["check_shas"]) + ".")


report = attempt(lambda: claim_review.report(s, user, system))
if report is not None:
    if todo:
        with st.expander("Agreement with the judge so far"):
            show_report(report)
    else:
        st.subheader("Agreement with the judge", anchor=False)
        show_report(report)
