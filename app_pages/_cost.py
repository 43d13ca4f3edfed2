"""Cost you can see (methodology §11.7: docs/methodology.md, LLM cost), the pages' side: a button that would call Claude
first shows the job's estimate, and only "Confirm: spend ≈ $X" sends anything; afterwards the
real usage is shown. The estimate is kept with the choices it was made for (question, scope,
batch): change one and it is gone, so a confirmation always confirms what was shown."""

from __future__ import annotations

from collections.abc import Hashable

import streamlit as st

from annotator.judge.llm_cost import JobPlan
from app_pages._shared import md_escape


def propose(key: str, plan: JobPlan, params: Hashable) -> None:
    """Keep ``plan`` (made for ``params``) to be shown and confirmed."""
    st.session_state[key] = (params, plan)


def forget(key: str) -> None:
    st.session_state.pop(key, None)


def confirmed(key: str, params: Hashable) -> JobPlan | None:
    """Show the kept estimate for ``params`` with its confirm and cancel buttons; the plan
    when the person confirms (then forgotten), else None. Nothing is shown for other params."""
    kept = st.session_state.get(key)
    if not kept or kept[0] != params:
        return None
    plan: JobPlan = kept[1]
    with st.container(border=True):
        st.info(md_escape("\n\n".join(["Before anything is sent:", *plan.lines()])))
        if not plan.items:
            st.caption("Nothing would be sent: every item is skipped.")
        c1, c2, _ = st.columns([2, 1, 2])
        go = c1.button(md_escape(plan.confirm_label), type="primary", key=f"{key}_confirm",
                       disabled=not plan.items)
        if c2.button("Cancel", key=f"{key}_cancel"):
            forget(key)
            st.rerun()
    if go:
        forget(key)
        return plan
    return None


def show_usage(title: str, lines: list[str]) -> None:
    """A job's real usage: tokens, cache writes and reads, hit rate, $ (from the API's counts)."""
    st.info(md_escape("\n\n".join([title, *lines])))
