"""Answer grading: people mark systems' answers criterion by criterion on a seeded sample
(methodology §10.4's human tier: docs/methodology.md), and those marks calibrate the rubric
judge (§11.1). One answer at a time: the question, the answer, its approved reference answer,
then each criterion with its worked example and a mark to type (Tab to the next, Enter saves).
Blind: the card never names the system that wrote the answer. Everything shown is untrusted
text, escaped. Below, for leads and engineers, the judge against people per criterion."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator.labeling import answer_grading
from annotator.people.roles import Permission
from app_pages._shared import attempt, flash, md_escape, require_page, safe_markdown, show_flash, store

user = require_page(Permission.LABEL)
s = store()
st.title("Answer grading")
show_flash()

c1, c2 = st.columns(2)
n = int(c1.number_input("Sample size per system", 1, answer_grading.MAX_SAMPLE, answer_grading.DEFAULT_SAMPLE,
                        key="ag_n", help="Answers per system, spread over the strata. A larger size keeps the "
                                         "answers already in the sample."))
seed = int(c2.number_input("Seed", 0, 2**31 - 1, 0, key="ag_seed",
                           help="The same seed gives every grader the same sample, so grades can be compared."))

cards = attempt(lambda: answer_grading.sample(s, user, n=n, seed=seed)) or []
if not cards:
    st.info("No answer to grade yet: an engineer imports a system's answers (`golden answers import`) and a lead sets "
            "criteria for their questions (`golden references criteria`).")
todo = [c for c in cards if len(c["mine"]) < len(c["criteria"])]
done = len(cards) - len(todo)
if cards:
    st.progress(done / len(cards), text=f"{done} of {len(cards)} answers graded in this sample")


def show_card(card: dict) -> None:
    """One answer and its form: each criterion's text and worked example, a mark to type."""
    st.caption(f"Answer {md_escape(card['key'])} · question {md_escape(card['query_id'])}"
               + (f" · stratum {md_escape(card['stratum'])}" if card["stratum"] else ""))
    st.markdown("**Question**")
    st.markdown(md_escape(card["question"]))
    st.markdown("**The answer**")
    st.markdown(md_escape(card["answer"]) or "*(empty)*")
    ref = card["reference"]
    if ref:
        with st.container(border=True):
            st.markdown("**Approved reference answer**")
            for label, text in (("Short", ref["short_answer"]), ("Full", ref["full_answer"])):
                if text:
                    st.markdown(f"{label}: {md_escape(text)}")
    else:
        st.caption("No approved reference answer: grade from the criteria and their examples.")
    with st.form(f"ag_form_{card['key']}", clear_on_submit=False, enter_to_submit=True):
        marks: dict[str, int | None] = {}
        for c in card["criteria"]:
            st.markdown(safe_markdown(f"**{c['criterion_id']}**: {c['text']}"))
            st.caption("Worked example: " + md_escape(c["example"]))
            marks[c["criterion_id"]] = st.number_input(
                f"{c['criterion_id']}: mark 0-{c['scale_max']}", min_value=0, max_value=int(c["scale_max"]),
                value=card["mine"].get(c["criterion_id"]), step=1, key=f"ag_{card['key']}_{c['criterion_id']}",
                help="1 = met (0-1); 2 = fully, 1 = partly (0-2); 3/2/1/0 on a 0-3 scale.")
        if st.form_submit_button("Save grades (Enter)", type="primary"):
            missing = [k for k, v in marks.items() if v is None]
            if missing:
                st.error(f"Mark every criterion before saving: {', '.join(missing)} has no mark yet.")
                return
            saved = attempt(lambda: answer_grading.record(store(), user, card["key"],
                                                          {k: int(v) for k, v in marks.items() if v is not None}))
            if saved is not None:
                flash(f"Saved your grades of answer {card['key']}.")
                st.rerun()


if todo:
    st.caption("Blind grading: the card never says which system wrote the answer. Type each mark, Tab to the next "
               "criterion, Enter saves. Each criterion is marked on its own; the score is combined in code.")
    show_card(todo[0])
elif cards:
    st.success("Every answer of this sample is graded. A larger sample adds answers.")


def show_report(rep: dict) -> None:
    """The judge against people per criterion, per judge (names and numbers as data)."""
    if not rep["judges"]:
        st.caption("No criterion graded by both people and the judge yet: the judge grades with "
                   "`golden answers judge-rubric --system NAME`.")
        return
    for j in rep["judges"]:
        st.markdown(f"Judge **{md_escape(j['model'])}**, prompt {md_escape(str(j['prompt_sha'])[:12])}: "
                    f"**{md_escape(j['verdict'])}** on {j['items']} item(s) of {j['answers']} answer(s)")
        st.dataframe(pd.DataFrame([{
            "criterion": c["criterion_id"], "scale": f"0-{c['scale_max']}", "items": c["n"], "κ": c["kappa"],
            "κ weights": c["kappa_weights"] or "none", "raw agreement": c["raw_agreement"],
            "FAIL recall": c["fail_recall"], "caught": c["fail_caught"], "people: 0": c["human_fail"],
            "verdict": c["verdict"]} for c in j["criteria"]]), hide_index=True, width="stretch")
    st.caption(f"Bar: κ ≥ {rep['kappa_bar']} and FAIL recall ≥ {rep['fail_recall_bar']} on every criterion "
               f"(FAIL recall: of the marks people gave 0, the share the judge gave 0). "
               f"{rep['stale_left_out']} stale grade(s) left out.")


if any(user.can(p) for p in answer_grading.READING):
    st.subheader("The rubric judge against people", anchor=False)
    report = attempt(lambda: answer_grading.report(s, user))
    if report is not None:
        show_report(report)
