"""Agreement: live κ and α between annotators (methodology §3.7: docs/methodology.md, agreement), against the bar, by pair,
stratum, round and week, each annotator against the gold; and the rounds that produce them
(calibration on a shared sample, then the split with a permanent overlap)."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd
import streamlit as st

from annotator.labeling import agreement, evidence_rounds, rounds
from annotator.people.roles import Permission
from app_pages._shared import (attempt, clear_form, flash, form_key, md_escape, picked, require_page, show_flash,
                                store)
from golden_store.scoring.agreement_report import GRADED_MEASURES

user = require_page(Permission.RUN_ROUNDS)
s = store()
st.title("Agreement")
show_flash()


def fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


tab_agree, tab_rounds = st.tabs(["Agreement", "Rounds"])

with tab_rounds:
    existing = rounds.list_rounds(s, user)
    if existing:
        # a split's bar check is JSON for the manifest; its verdict shows as the override's reason
        st.dataframe(pd.DataFrame(existing).drop(columns=["bar_check"], errors="ignore"), hide_index=True,
                     width="stretch")
    else:
        st.caption("No rounds yet. Start with a calibration round: everyone labels the same items.")
    people = rounds.labellers(s, user)
    free = rounds.free_item_count(s, user)
    st.caption(f"{free} pool item(s) are free (not graded, not assigned).")

    def pick_people(key: str) -> list[str]:
        if people:
            return st.multiselect("Annotators", people, key=key)
        raw = st.text_input("Annotators (comma-separated usernames)", key=key + "_txt")
        return [p.strip() for p in raw.split(",") if p.strip()]

    with st.form(form_key("calibration")):
        st.subheader("Start a calibration round", anchor=False)
        st.caption("Every chosen annotator labels the same items, blind to each other; the sample is "
                   "stratified so every stratum is met.")
        chosen = pick_people("cal_people")
        c1, c2 = st.columns(2)
        n = c1.number_input("Items", 1, 10_000, rounds.DEFAULT_CALIBRATION_ITEMS, key="cal_n")
        seed = c2.number_input("Seed", 0, 2**31 - 1, 0, key="cal_seed")
        if st.form_submit_button("Start calibration round", type="primary"):
            rid = attempt(lambda: rounds.start_calibration(s, user, chosen, int(n), int(seed)))
            if rid:
                flash(f"Round {rid} started: each annotator finds its items first in their Judge queue.")
                clear_form("calibration", ("cal_people", "cal_people_txt", "cal_n", "cal_seed"))
                st.rerun()

    with st.form(form_key("evidence_round")):
        st.subheader("Start an evidence round", anchor=False)
        st.caption("Every chosen annotator quotes the same questions (answerable, not yet quoted, stratified); "
                   "until a lead settles a question, each sees only their own quotes and their own "
                   "\"no answer\".")
        chosen_ev = pick_people("ev_people")
        e1, e2 = st.columns(2)
        n_ev = e1.number_input("Questions", 1, 10_000, 20, key="ev_n")
        seed_ev = e2.number_input("Seed", 0, 2**31 - 1, 0, key="ev_seed")
        if st.form_submit_button("Start evidence round"):
            rid = attempt(lambda: evidence_rounds.start(s, user, chosen_ev, int(n_ev), int(seed_ev)))
            if rid:
                flash(f"Evidence round {rid} started: its questions come first in each annotator's Evidence queue.")
                clear_form("evidence_round", ("ev_people", "ev_people_txt", "ev_n", "ev_seed"))
                st.rerun()

    bar_in_force, bar_chosen = agreement.bar(s, user)
    with st.expander(f"Agreement bar: {bar_in_force.describe()}", expanded=False):
        st.caption("The methodology (§3.7; docs/methodology.md) sets the bar on Cohen's κ as its own code computes it: unweighted, ≥ 0.7 on "
                   "binary and ≥ 0.6 on 4-grade relevance. A lead may read the graded bar on a weighted κ, or on "
                   "ordinal α ≥ 0.667 for rounds of three or more annotators; the choice, who made it and why "
                   "go into every version frozen under it.")
        if bar_chosen["chosen_by"]:
            st.caption(f"Chosen by {md_escape(bar_chosen['chosen_by'])} at {bar_chosen['chosen_at']}"
                       + (f": {md_escape(bar_chosen['note'])}" if bar_chosen["note"] else ""))
        with st.form(form_key("bar")):
            measures = list(GRADED_MEASURES)
            measure: str = picked(st.selectbox("Graded figure", measures,
                                               index=measures.index(bar_in_force.graded_measure),
                                               format_func=lambda m: GRADED_MEASURES[m][2], key="bar_measure"))
            threshold = st.number_input("Graded threshold (empty: the figure's usual one)", -1.0, 1.0, value=None,
                                        step=0.01, key="bar_threshold")
            why = st.text_input("Why (required when moving off the methodology's bar)", key="bar_note")
            if st.form_submit_button("Set the bar"):
                chosen_bar = attempt(lambda: agreement.choose_bar(s, user, measure, threshold, why))
                if chosen_bar:
                    flash(f"Agreement bar: {chosen_bar.describe()}.")
                    clear_form("bar", ("bar_measure", "bar_threshold", "bar_note"))
                    st.rerun()

    with st.form(form_key("split")):
        st.subheader("Split the remaining work", anchor=False)
        check = rounds.split_check(s, user)
        (st.success if check["cleared"] else st.warning)(
            ("Latest calibration " + md_escape(check["text"])) if check["round_id"] else
            "No calibration round has figures yet: " + check["text"])
        if not check["cleared"]:
            st.caption("Below the bar: adjudicate, clarify the rubric and run a fresh calibration round first. "
                       "To split anyway, give the reason: it is recorded with the round and in the manifest.")
        chosen_split = pick_people("split_people")
        c1, c2 = st.columns(2)
        overlap = c1.number_input("Overlap share labelled twice (%)", 0, 100, 10, key="split_overlap")
        seed_s = c2.number_input("Seed", 0, 2**31 - 1, 0, key="split_seed")
        override = None if check["cleared"] else st.text_input("Reason to split below the bar", key="split_override")
        if st.form_submit_button("Split the work"):
            rid = attempt(lambda: rounds.split_work(s, user, chosen_split, overlap / 100, int(seed_s),
                                                    override=override))
            if rid:
                flash(f"Round {rid}: the free items are split; {overlap}% of each stratum is labelled twice."
                      + ("" if check["cleared"] else " Split below the bar: your reason is recorded with the round."))
                clear_form("split", ("split_people", "split_people_txt", "split_overlap", "split_seed",
                                     "split_override"))
                st.rerun()

# How often the Agreement tab looks for new labels (issue 29, M10): a lead watching a round
# sees the figures move while the annotators grade, without pressing Refresh. Each tick
# asks the store's generation (one small query); the figures are recomputed only when a
# label was written since (annotator.labeling.agreement.compute caches per generation).
LIVE_SECONDS = 3


def over_time_chart(over_time: pd.DataFrame) -> None:
    """κ by week of the latest label: a line once there are two weeks; with one week, its
    figures in a sentence (a line needs two points: one week drew an empty frame)."""
    if len(over_time) >= 2:
        trend = over_time.set_index("period")[["kappa_binary", "kappa_linear"]]
        st.line_chart(trend, y_label="κ", x_label="week of the latest label")
    elif len(over_time) == 1:
        row = over_time.iloc[0]
        week = row["period"].strftime("%Y-%m-%d") if hasattr(row["period"], "strftime") else str(row["period"])
        st.caption(f"All doubly graded items so far fall in one week (the week of {md_escape(week)}): κ binary "
                   f"{fmt(row['kappa_binary'])}, κ linear {fmt(row['kappa_linear'])}. The trend line appears "
                   "once a second week has labels.")


@st.fragment(run_every=LIVE_SECONDS)
def agreement_tab() -> None:
    """The Agreement tab, redrawn every :data:`LIVE_SECONDS` on its own (a fragment: the
    Rounds tab's forms are not rerun under the lead's hands)."""
    # opens on the newest round; "all rounds pooled" stays a choice (issue 36, 7c)
    choices = agreement.scopes(s, user)
    scope: str = picked(st.selectbox("Labels", choices.options, index=choices.options.index(choices.default),
                                     key="agree_scope", format_func=choices.name))
    # cached per store generation: a tick with no new label costs one small query
    rep = agreement.compute(s, user, agreement.round_of(scope))
    g = rep.group
    if not g.n_units:
        st.info("No item has been graded by two annotators yet. Start a calibration round (Rounds tab)."
                if scope == agreement.POOLED else
                f"{md_escape(choices.name(scope))}: No item has been graded by two annotators in this round yet. "
                "Choose \"All rounds pooled\" above for every label so far.")
    else:
        bar_in_force, _ = agreement.bar(s, user)
        c = st.columns(6)
        c[0].metric("κ binary (grade ≥ 2)", fmt(g.kappa_binary), help=f"bar {bar_in_force.binary_threshold:g}")
        c[1].metric("κ graded", fmt(g.kappa_unweighted),
                    help="unweighted on the 0-3 grades: the methodology's κ (§3.7), the one its bar is set on")
        c[2].metric("κ linear", fmt(g.kappa_linear), help="graded, linear weights: a near miss counts part-agreed")
        c[3].metric("κ quadratic", fmt(g.kappa_quadratic), help="graded, quadratic weights")
        c[4].metric("α ordinal", fmt(g.alpha_ordinal))
        c[5].metric("raw agreement", fmt(g.raw))
        verdict = bar_in_force.check(g.summary())
        (st.success if verdict.cleared else st.warning)(md_escape(agreement.headline(g, verdict, choices.name(scope))))

        st.subheader("Pairs", anchor=False)
        st.caption("Each reading names the κ it reads: the unweighted κ counts every disagreement alike (the "
                   "methodology's bar); the linear and quadratic κ weigh near misses less and read higher.")
        table = rep.pair_table()
        st.dataframe(table, hide_index=True, width="stretch")
        st.download_button("Download the pairwise table (CSV)", table.to_csv(index=False).encode(),
                           "agreement_pairs.csv", "text/csv", key="pairs_csv")
        pair: int = picked(st.selectbox("Confusion matrix for", range(len(g.pairs)), key="agree_pair",
                                        format_func=lambda i: f"{g.pairs[i].a} × {g.pairs[i].b}"))
        a, b = g.pairs[pair].a, g.pairs[pair].b
        ci = rep.pair_intervals(a, b)
        st.caption(f"{md_escape(a)} × {md_escape(b)}, {g.pairs[pair].n} items: κ binary "
                   f"{fmt(g.pairs[pair].kappa_binary)} (95% bootstrap CI {fmt(ci['kappa_binary'][0])} to "
                   f"{fmt(ci['kappa_binary'][1])}), κ linear {fmt(g.pairs[pair].kappa_linear)} "
                   f"({fmt(ci['kappa_linear'][0])} to {fmt(ci['kappa_linear'][1])}): a small round gives a wide interval.")
        cm = rep.pair_confusion(a, b)
        long = cm.reset_index(names="row").melt("row", var_name="col", value_name="items")
        heat = alt.Chart(long).mark_rect().encode(
            x=alt.X("col:N", title=b, sort=list(cm.columns)), y=alt.Y("row:N", title=a, sort=list(cm.index)),
            color=alt.Color("items:Q", scale=alt.Scale(scheme="blues")), tooltip=["row", "col", "items"])
        text = alt.Chart(long).mark_text().encode(x=alt.X("col:N", sort=list(cm.columns)),
                                                   y=alt.Y("row:N", sort=list(cm.index)), text="items:Q")
        left, right = st.columns(2)
        left.altair_chart(heat + text, width="stretch")
        pc = pd.DataFrame(rep.pair_per_class(a, b)).T.rename_axis("grade").reset_index()
        right.caption(f"Per grade: precision and recall of {md_escape(b)} taking {md_escape(a)} as reference")
        right.dataframe(pc, hide_index=True, width="stretch")

        st.subheader("Label distributions", anchor=False)
        st.dataframe(rep.distributions.style.format("{:.0%}"), width="stretch")
        st.subheader("Per stratum", anchor=False)
        st.dataframe(rep.per_stratum, hide_index=True, width="stretch")
        st.subheader("Across rounds and over time", anchor=False)
        if len(rep.per_round):
            st.dataframe(rep.per_round, hide_index=True, width="stretch")
        over_time_chart(rep.over_time)
        st.subheader("Each annotator against the gold", anchor=False)
        st.caption("Gold is the adjudicated label, else the unanimous one; adjudicated items are the telling ones.")
        st.dataframe(rep.drift, hide_index=True, width="stretch")

    ev = rep.evidence
    with st.expander("Evidence spans", expanded=bool(ev.n_questions)):
        if ev.n_questions:
            st.write(f"{ev.n_questions} question(s) quoted (or declared unanswerable) by two or more people, "
                     "evidence rounds included: span agreement "
                     f"{fmt(ev.raw_spans)} (same document, overlap ≥ 50% of the shorter span); answerable "
                     f"agreement {fmt(ev.raw_answerable)}, κ {fmt(ev.kappa_answerable)}.")
            st.dataframe(pd.DataFrame(ev.per_question), hide_index=True, width="stretch")
        else:
            st.caption("No question has evidence from two different people yet.")


with tab_agree:
    agreement_tab()
