"""Power: the minimum detectable effect versus the number of queries (methodology §3.3: docs/methodology.md, power)."""

from __future__ import annotations

import streamlit as st

from annotator.evaluation import power
from annotator.people.roles import Permission
from app_pages._shared import attempt, md_escape, require_page, store

user = require_page(Permission.VIEW_VERSIONS)
s = store()
st.title("Power")
st.write("For a paired comparison the detectable difference scales with σ_d, the standard deviation of the "
         "per-query difference between two systems, not with the spread of the scores. Compute it before "
         "building the set, not after a null result.")

evaluations = power.recorded_evaluations(s, user)
source = st.radio("σ_d from", ["a value I enter", "two recorded evaluations"], horizontal=True, key="pw_source")
sigma = None
if source == "two recorded evaluations":
    if len(evaluations) < 2:
        st.info("Record two evaluations first: golden score --version NAME --run FILE -m R@10 --record EVALUATION_ID")
    else:
        ids = evaluations["evaluation_id"].tolist()
        c1, c2, c3 = st.columns(3)
        a = c1.selectbox("Baseline evaluation", ids, key="pw_a")
        b = c2.selectbox("Candidate evaluation", ids, index=1, key="pw_b")
        metrics = sorted({m for ms in evaluations["metrics"] for m in ms.split(", ")})
        metric = c3.selectbox("Metric", metrics, key="pw_metric")
        got = attempt(lambda: power.sigma_from_evaluations(s, user, a, b, metric))
        if got:
            sigma, n = got
            st.caption(f"σ_d = {sigma:.4f} measured on {n} shared queries ({md_escape(metric)})")
else:
    sigma = st.number_input("σ_d", min_value=0.001, max_value=2.0, value=0.15, step=0.01, format="%.3f", key="pw_sigma")

c1, c2 = st.columns(2)
alpha = c1.select_slider("α (two-sided)", [0.01, 0.05, 0.10], value=0.05, key="pw_alpha")
pw = c2.select_slider("Power", [0.7, 0.8, 0.9, 0.95], value=0.8, key="pw_power")
if sigma:
    ns = [20, 30, 40, 50, 60, 80, 100, 150, 200, 250, 300, 400, 500, 750, 1000, 1500, 2000]
    curve = power.mde_curve(sigma, alpha, pw, ns)
    st.line_chart(curve, x_label="queries", y_label="minimum detectable difference")
    left, right = st.columns(2)
    left.dataframe(curve.reset_index().round(4), hide_index=True, width="stretch")
    right.dataframe(power.queries_needed(sigma, alpha, pw, [0.01, 0.02, 0.03, 0.05, 0.10]), hide_index=True,
                    width="stretch")
