"""Freeze conflicts: every conflict that refuses a freeze now, by question, with who labelled
what and when and the fixes that work from here (issue 37 item 9): re-grade the passage (a
lead's decision with a reason), retract the grade or the quote (with a reason), or mark the
question answerable (with a reason). The list is the freeze's own check; it follows every fix,
and says so when nothing refuses a freeze any more."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from annotator.versions import freeze_conflicts as fc
from annotator.people.roles import Permission
from app_pages._shared import attempt, flash, md_escape, require_page, show_flash, store

user = require_page(Permission.ADJUDICATE, Permission.FREEZE)
s = store()
st.title(fc.PAGE_TITLE)
show_flash()
VERSIONS = str(Path(__file__).with_name("versions.py"))
PAGE = 20  # conflicts shown at once (a corpus change can make hundreds)

listed = attempt(lambda: fc.conflicts(s, user))
if listed is None:
    st.stop()
everything: list[fc.Conflict] = listed  # every conflict now, on every page of the list

# The conflicts this tab showed last time. One gone since, and not by a fix pressed here, was
# settled elsewhere (another tab, another lead): a fix pressed on its stale form is not applied
# (the form is gone with it), and the page says so rather than dropping the click in silence.
SEEN = "fc_seen"
settled_elsewhere = set(st.session_state.get(SEEN, ())) - {c.key for c in listed}
st.session_state[SEEN] = [c.key for c in listed]
if settled_elsewhere:
    st.info(f"{len(settled_elsewhere)} conflict(s) shown here before were settled meanwhile, in another tab or by "
            "another person; a fix pressed on one of them was not applied. The list is as it stands now.")


def fixed_here(*keys: str) -> None:
    """A fix pressed on this page settled these: not 'settled elsewhere' on the next run."""
    st.session_state[SEEN] = [k for k in st.session_state.get(SEEN, ()) if k not in keys]


if not listed:
    st.success("Nothing refuses a freeze: the freeze can proceed.")
    if user.can(Permission.FREEZE):
        st.page_link(VERSIONS, label="Freeze on the Versions page", icon=":material/inventory_2:")
    else:
        st.caption("Freezing is an engineer's step (Versions page).")
    st.stop()

kinds: dict[str, int] = {}
for c in listed:
    kinds[c.title] = kinds.get(c.title, 0) + 1
st.error(f"{len(listed)} conflict(s) refuse a freeze: " + "; ".join(f"{n} × {md_escape(t.lower())}"
                                                                  for t, n in kinds.items()) + ".")
st.caption("This is the freeze's own check, listed with the fixes that work from here. Every fix is recorded as an "
           "event with your name and your reason, and the earlier labels stay in the history. The list follows each "
           "fix; when it is empty the freeze can proceed.")

pages = max(1, -(-len(listed) // PAGE))
page_no = int(st.number_input(f"Page (of {pages}, {PAGE} a page)", 1, pages, key="fc_page")) if pages > 1 else 1
shown = listed[(min(page_no, pages) - 1) * PAGE:min(page_no, pages) * PAGE]

answerable_strata = fc.strata_for_answerable(s, user)


def reason_and_submit(form: str, label: str, *, grades: tuple[int, ...] = ()) -> tuple[bool, str, int | None]:
    """A small form: a final grade when asked, the reason, the button."""
    grade = None
    with st.form(form, border=False):
        if grades:
            grade = st.radio("Final grade", grades, horizontal=True, key=f"{form}_grade",
                             format_func=lambda g: f"{g}: {fc.GRADE_NAMES[g]}")
        reason = st.text_input("Reason (required; recorded with the change)", key=f"{form}_reason")
        pressed = st.form_submit_button(label)
    return pressed, reason, grade


def show_fix(c: fc.Conflict, fix: fc.Fix) -> None:
    if not fix.allowed:
        st.caption(f"{md_escape(fix.title)}: {md_escape(fix.why_not or '')}.")
        return
    st.markdown(f"**{md_escape(fix.title)}** · records {md_escape(fix.records)}")
    form = f"fc_{c.key}_{fix.name}"
    button, apply = {
        fc.REGRADE: ("Re-grade", lambda reason, grade: fc.regrade(s, user, c, int(grade or 0), reason)),
        fc.RETRACT_GRADE: ("Retract the grade", lambda reason, _: fc.retract_grade(s, user, c, reason)),
        fc.RETRACT_QUOTE: ("Retract the quote", lambda reason, _: fc.retract_quote(s, user, c, reason)),
    }[fix.name]
    pressed, reason, grade = reason_and_submit(form, button, grades=fix.grades if fix.name == fc.REGRADE else ())
    if pressed and (said := attempt(lambda: apply(reason, grade))):
        fixed_here(c.key)
        flash(said)
        st.rerun()


def mark_answerable_form(qid: str, stratum: str | None, fix: fc.Fix) -> None:
    if not fix.allowed:
        st.caption(f"{md_escape(fix.title)}: {md_escape(fix.why_not or '')}.")
        return
    st.markdown(f"**{md_escape(fix.title)}** (if the corpus does answer it; clears every conflict of this question "
                f"above) · records {md_escape(fix.records)}")
    form = f"fc_answerable_{qid}"
    with st.form(form, border=False):
        new_stratum = None
        if stratum == "negative":
            new_stratum = st.selectbox("Stratum it belongs in", answerable_strata, index=None,
                                       placeholder="choose a stratum", key=f"{form}_stratum")
        reason = st.text_input("Reason (required; recorded with the revision)", key=f"{form}_reason")
        pressed = st.form_submit_button("Mark answerable")
    if pressed and (said := attempt(lambda: fc.mark_answerable(s, user, qid, reason, stratum=new_stratum))):
        fixed_here(*(c.key for c in everything if c.query_id == qid))
        flash(said)
        st.rerun()


by_question: dict[str | None, list[fc.Conflict]] = {}
for c in shown:
    by_question.setdefault(c.query_id, []).append(c)

for qid, group in by_question.items():
    first = group[0]
    if qid is None:
        for c in group:
            st.subheader(md_escape(c.title), anchor=False)
            for line in c.elsewhere:
                st.caption(md_escape(line))
        continue
    st.subheader(f"{md_escape(qid)} · {md_escape(first.query_text or '')}", anchor=False)
    state = "unanswerable" if first.answerable is False else "answerable"
    st.caption(f"Stratum {md_escape(first.stratum or '?')} · marked {state} · {len(group)} conflict(s) here")
    for c in group:
        with st.container(border=True):
            place = f"{md_escape(c.doc_id)} [{c.start}:{c.end}]" if c.doc_id is not None else ""
            st.markdown(f"**{md_escape(c.title)}** · {place}")
            if c.quote is not None:
                st.markdown(f"Quote {md_escape(c.evidence_id)}: “{md_escape(c.quote)}”")
            elif c.passage is not None:
                st.markdown(f"Passage: “{md_escape(' '.join(c.passage.split()))}”")
            else:
                st.caption("The passage's text is no longer in its document.")
            for label in c.labels:
                st.markdown(f"- {md_escape(fc.label_line(label))}")
            st.caption(md_escape(c.sentence))
            for fix in c.fixes:
                if fix.name != fc.MARK_ANSWERABLE:
                    show_fix(c, fix)
            for line in c.elsewhere:
                st.caption(md_escape(line))
    answerable = next((f for c in group for f in c.fixes if f.name == fc.MARK_ANSWERABLE), None)
    if answerable is not None:
        with st.container(border=True):
            mark_answerable_form(qid, first.stratum, answerable)
