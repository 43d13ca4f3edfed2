"""Results: the recorded evaluations with their judged@10 health (methodology §3.6: docs/methodology.md, Judged@k), and the
paired comparison of two with the gate verdict per metric (§13, §14), the same one
`golden compare` prints (annotator.evaluation.evaluations.compare)."""

from __future__ import annotations

import streamlit as st

from annotator.evaluation import evaluations, judge_corrected, judge_corrected_retrieval, judge_corrected_rubric
from annotator.people.roles import Permission
from app_pages._shared import attempt, md_escape, require_page, store
from golden_store.scoring.compare import verdict_text

user = require_page(Permission.VIEW_RESULTS)
s = store()
st.title("Results")
st.caption("Evaluations recorded with `golden score --version NAME --run FILE -m nDCG@10 --record EVALUATION_ID` "
           "(runs) or `golden answers evaluate --version NAME --system S --record EVALUATION_ID` (answers: exact "
           "match, token F1, faithfulness, citation validity, nuggets, abstention): one row per query and metric, "
           "never overwritten. Means are over the queries a metric applies to (each query's mean over trials); an "
           "answer evaluation is compared only with another answer evaluation.")

table = attempt(lambda: evaluations.recorded(s, user))
if table is None:
    st.stop()
if table.empty:
    st.info("No evaluation is recorded in this store. Score a run on a frozen version and keep it: "
            "`golden score --version NAME --run FILE -m nDCG@10 --record EVALUATION_ID`.")
    st.stop()

judged = evaluations.JUDGED_COLUMN
health = evaluations.health_warning(table)
if health:
    st.warning(md_escape(health), icon=":material/warning:")
unrecorded = int((table["judged health"] == evaluations.NOT_RECORDED).sum())
if unrecorded:
    st.caption(f"{judged} not recorded for {unrecorded} evaluation(s): recorded before `golden score --record` "
               "kept each query's judged fraction. Score the run again under a new id to see it.")

metric_cols = [c for c in table.columns if c not in evaluations.LIST_COLUMNS]
order = ["evaluation", "system", "dataset version", "labels", "queries", judged, "judged health", *metric_cols,
         "metric_impl_sha", "recorded", "trials"]
EMPTY = "—"  # a cell with no value (a "too few" cell's interval and p, an unrecorded judged@10), not "None"
st.dataframe(table, hide_index=True, width="stretch", column_order=order, placeholder=EMPTY, column_config={
    "recorded": st.column_config.DatetimeColumn("recorded", format="YYYY-MM-DD HH:mm"),
    "labels": st.column_config.TextColumn("labels", help="which labels the numbers are on: human (people's labels "
                                                         "only) or human+judge (also the judge's grade of passages "
                                                         "no person graded)"),
    judged: st.column_config.NumberColumn(judged, format="%.3f",
                                          help=f"mean share of each query's top 10 that carries a label; below "
                                               f"{evaluations.JUDGED_THRESHOLD} the numbers are suspect"),
    **{m: st.column_config.NumberColumn(m, format="%.4f", help=f"mean {m}") for m in metric_cols},
})

corrected = attempt(lambda: judge_corrected.corrected_faithfulness(s, user))
if corrected:
    with st.expander(f"Faithfulness as people would judge it ({len(corrected)} system(s) with checked claims)"):
        st.caption("The judge decides every claim; reviewers check a sample on the Claim review page, drawn evenly "
                   "across the judge's verdicts. Corrected = the judge's share of supported claims corrected by "
                   "the reviewers' verdicts within each judge verdict (prediction-powered inference): a judge's "
                   "bias moves it and a noisy judge widens it, where the judge's own interval would only narrow. "
                   "95% intervals; the unit is the claim.")
        st.dataframe(judge_corrected.corrected_table(corrected), hide_index=True, width="stretch",
                     placeholder=EMPTY)

retrieval = attempt(lambda: judge_corrected_retrieval.corrected_retrieval(s, user))
if retrieval:
    with st.expander(f"Retrieval on the relevance judge's labels, corrected by people ({len(retrieval)} system(s))"):
        st.caption("Per system, the share of its top-10 results the relevance judge labeled that are relevant "
                   "(grade ≥ 2), item by item. People grade a standing sample of what the judge labels (pool "
                   "grading, the Judge page); corrected = the judge's share corrected by the person − judge "
                   "difference on that sample (prediction-powered inference). 95% intervals; the unit is the item.")
        if not any(c.has_sample for c in retrieval.values()):
            st.info(judge_corrected_retrieval.NO_SAMPLE)
        st.dataframe(judge_corrected_retrieval.corrected_table(retrieval), hide_index=True, width="stretch",
                     placeholder=EMPTY)
        st.caption(judge_corrected_retrieval.NOT_OFFERED)

rubric = attempt(lambda: judge_corrected_rubric.corrected_rubric(s, user))
if rubric:
    with st.expander(f"Rubric scores as people would grade them ({len(rubric)} system(s) the rubric judge scored)"):
        st.caption("The rubric judge marks every answer's criteria; people grade a sample of answers (Answer grading "
                   "page), drawn round the question strata. Corrected = the judge's mean score corrected by the "
                   "person − judge difference within each stratum (prediction-powered inference). 95% intervals; "
                   "the unit is the answer.")
        if not any(c.has_sample for c in rubric.values()):
            st.info(judge_corrected_rubric.NO_SAMPLE)
        st.dataframe(judge_corrected_rubric.corrected_table(rubric), hide_index=True, width="stretch",
                     placeholder=EMPTY)

st.subheader("Compare two evaluations", anchor=False)
ids = table["evaluation"].tolist()
if len(ids) < 2:
    st.info("Record a second evaluation to compare it with this one.")
    st.stop()
c1, c2, c3 = st.columns([2, 2, 1])
baseline = c1.selectbox("Baseline", ids, index=1, key="res_baseline")
candidate = c2.selectbox("Candidate", ids, index=0, key="res_candidate")
min_meaningful = c3.number_input("Smallest drop that matters", min_value=0.0, max_value=1.0, value=0.02,
                                 step=0.005, format="%.3f", key="res_min_meaningful",
                                 help="a credible drop at least this large fails the gate; a smaller one warns")
if baseline == candidate:
    st.info("Pick two different evaluations.")
    st.stop()

ACROSS = "Compare even across different hit rules"
across = st.checkbox(ACROSS, key="res_across_definitions",
                     help="two evaluations scored under different hit rules measured different things: their delta "
                          "is the rule's, not the system's, so the comparison is refused unless you ask for it")
comparison = attempt(lambda: evaluations.compare(s, user, baseline, candidate, min_meaningful=min_meaningful,
                                                 allow_different_definitions=across,
                                                 compare_anyway=f"tick \"{ACROSS}\" above to compare anyway"))
if comparison is None:
    st.stop()
st.markdown(f"**{md_escape(candidate)}** against **{md_escape(baseline)}**, paired on the queries both scored: "
            f"delta = candidate − baseline, paired-bootstrap interval ({comparison['n_boot']:,} resamples, "
            f"seed {comparison['seed']}).")
st.caption(md_escape(evaluations.gate_rule(comparison)))
st.caption(md_escape(evaluations.labels_line(comparison)))
for note in comparison.get("scope", []):
    st.info(md_escape(note))
for note in evaluations.other_notes(comparison):
    st.warning(md_escape(note), icon=":material/warning:")
under_judged = evaluations.judged_line(comparison)
if under_judged:
    st.warning(md_escape(under_judged), icon=":material/warning:")
if not comparison["metrics"]:
    st.info("The two evaluations share no metric.")
    st.stop()

BOXES = {"PASS": st.success, "WARN": st.warning, "FAIL": st.error}
# the one verdict a CI gate reads (golden compare's exit status, the API's gate), above the metrics
gate = evaluations.gate(comparison)
BOXES[gate](f"**Gate: {gate}** - {md_escape(evaluations.gate_reason(comparison))}")
items = list(comparison["metrics"].items())
per_row = min(len(items), 3)
for start in range(0, len(items), per_row):
    cols = st.columns(per_row)
    for col, (metric, e) in zip(cols, items[start:start + per_row]):
        with col:
            if e["ci95"] is None:  # a metric too few questions carry: no interval, no p, no verdict
                st.info(f"**{md_escape(verdict_text(e))}** · {md_escape(metric)}  \n"
                        + md_escape(f"delta {e['delta']:+.4f} over {e['n']} shared question(s): under "
                                    f"{comparison['min_n']}, no verdict"))
                continue
            lo, hi = e["ci95"]
            p = f"p_adj {e['p_adj']:.4f}" if "p_adj" in e else f"p {e['p']:.4f}"
            BOXES.get(e["verdict"], st.info)(
                f"**{md_escape(e['verdict'])}** · {md_escape(metric)}  \n"
                + md_escape(f"delta {e['delta']:+.4f}, 95% CI [{lo:+.4f}, {hi:+.4f}]") + "  \n"
                + md_escape(f"W/L/T {e['wins']}/{e['losses']}/{e['ties']} · n {e['n']} · {p}"))
            if e["only_in_a"] or e["only_in_b"]:
                st.caption(f"not paired: {e['only_in_a']} queries only in the baseline, "
                           f"{e['only_in_b']} only in the candidate")

st.subheader("Per stratum", anchor=False)
st.caption(f"Per metric, one row over all its paired queries (stratum \"(all)\") and one per stratum, the gate "
           f"applied to that stratum's queries alone: a small stratum has a wide interval, one under "
           f"{comparison['min_n']} questions has no verdict (too few), and under {comparison['small_n']} the p is "
           f"the exact sign-flip test's (column test).")
rows = evaluations.comparison_table(comparison)
VERDICT_STYLE = {"FAIL": "color: #b71c1c; font-weight: 600", "WARN": "color: #8a5a00; font-weight: 600"}
FORMATS = {"delta": "{:+.4f}", "ci95 low": "{:+.4f}", "ci95 high": "{:+.4f}", "p": "{:.4f}", "p_adj": "{:.4f}"}
styled = rows.style.map(lambda v: VERDICT_STYLE.get(v, ""), subset=["verdict"]).format(
    {c: f for c, f in FORMATS.items() if c in rows}, na_rep=EMPTY)
st.dataframe(styled, hide_index=True, width="stretch", placeholder=EMPTY, column_config={
    "p_adj": st.column_config.Column("p_adj", help="p after the multiple-comparison correction"),
})
st.download_button("Download the comparison (CSV)", evaluations.comparison_csv(comparison, baseline, candidate),
                   evaluations.comparison_filename(baseline, candidate), "text/csv", key="res_csv",
                   on_click="ignore")
