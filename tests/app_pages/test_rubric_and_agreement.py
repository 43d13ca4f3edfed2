"""Issue 17 item 10: the rubric is rendered (headings, lists, bold, italic) with every piece of
text escaped; re-saving an unchanged rubric makes no new version; people who label see a
banner with the changelog once per change; the Agreement headline and the pairs table read
the same κ the same way."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given

from annotator import demo
from annotator.labeling import agreement, judging
from annotator.people import identity
from annotator.process import context
from app_pages._shared import safe_markdown
from golden_store.live import judging as judging_store
from golden_store.core.errors import ValidationError
from golden_store.scoring.agreement import reading
from tests.app_pages.test_app_roles import app_as
from tests.app_pages.test_md_escape import MATH_BLOCK, MATH_INLINE, MATH_SKIP, NEEDS_EMOJI, TEXT, unescape
from tests.conftest import plain

PASSWORD = "0123456789"
HOSTILE = ("# Grades <script>alert(1)</script>\n\n"
           "**3 - fully answers.** See [the guide](http://evil.example) :red[now] $x$ :material/home:\n"
           "- a *vital* point <img src=x onerror=alert(1)>\n"
           "2. second `code`\n")


def _structure_removed(source: str) -> str:
    """The source less what safe_markdown itself adds (line prefixes, emphasis markers)."""
    lines = []
    for line in source.split("\n"):
        line = re.sub(r"^(#### |\s*- |\s*\d+\. )", "", line)
        kept, i = [], 0
        while i < len(line):  # drop the unescaped '*' (emphasis markers); keep escapes whole
            if line[i] == "\\":
                kept.append(line[i:i + 2])
                i += 2
                continue
            if line[i] != "*":
                kept.append(line[i])
            i += 1
        lines.append("".join(kept))
    return "\n".join(lines)


@given(TEXT)
@example(HOSTILE)
@example("**bold** and *it* and __b__ and _i_ and ** not ** and *a*b*")
def test_safe_markdown_escapes_every_piece_of_text(x: str) -> None:
    source = safe_markdown(x)
    assert ":material/" not in source and not NEEDS_EMOJI.search(source)
    skipped = MATH_SKIP.sub("_", source)
    assert not MATH_BLOCK.search(skipped) and not MATH_INLINE.search(skipped)
    unescape(_structure_removed(source))  # every other punctuation character is escaped


def test_safe_markdown_keeps_the_structure():
    out = safe_markdown(HOSTILE)
    lines = out.split("\n")
    assert lines[0] == "#### Grades \\<script\\>alert\\(1\\)\\<\\/script\\>"
    assert lines[2].startswith("**3 \\- fully answers\\.** See \\[the guide\\]\\(http\\:")
    assert lines[3].startswith("- a *vital* point \\<img")
    assert lines[4] == "2. second \\`code\\`"


def _accounts():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    for role in ("annotator", "lead", "engineer"):
        identity.create_user(store, admin, role, [role], password=PASSWORD)
    demo.load_demo(store, admin)
    return store


def test_an_unchanged_rubric_makes_no_new_version():
    store = _accounts()
    lead = identity.get_user(store, "lead")
    rub = judging.rubric(store, lead)
    n = store.read_one("SELECT count(*) FROM rubric_versions")[0]
    for same in (rub["text"], rub["text"].replace("\n", "\r\n") + "\n\n", "  " + rub["text"] + "  "):
        with pytest.raises(ValidationError, match=f"unchanged \\(still v{rub['version']}\\)"):
            judging.edit_rubric(store, lead, same, "no change")
    assert store.read_one("SELECT count(*) FROM rubric_versions")[0] == n
    assert judging.edit_rubric(store, lead, rub["text"] + "\nA new rule.", "added a rule") == rub["version"] + 1


def test_the_rubric_changelog_banner_shows_once():
    store = _accounts()
    lead = identity.get_user(store, "lead")
    ann = identity.get_user(store, "annotator")
    at = app_as("annotator")
    at.switch_page("app_pages/judge.py").run()
    assert not at.exception
    # a brand-new account: the rubric in force when it was made is no change to it (issue 29, L2)
    assert judging.rubric_news(store, ann) == []
    assert not any("The rubric changed" in m.value for m in at.markdown)
    at.switch_page("app_pages/evidence.py").run()
    assert not any("The rubric changed" in m.value for m in at.markdown)

    v = judging.edit_rubric(store, lead, judging.rubric(store, lead)["text"] + "\nGrade tables as text.",
                            "Tables: <b>grade</b> the :red[cells] as text")
    assert judging.rubric_news(store, lead) == []  # its author has seen it
    assert [n["version"] for n in judging.rubric_news(store, ann)] == [v]
    at = app_as("annotator")
    at.switch_page("app_pages/nuggets.py").run()
    banner = next(m.value for m in at.markdown if "The rubric changed" in m.value)
    assert f"v{v} is in force" in banner and "\\<b\\>grade\\<\\/b\\> the \\:red\\[cells\\]" in banner
    at.button(key="rubric_seen").click().run()
    assert judging.rubric_news(store, ann) == []
    eng = app_as("engineer")  # people who do not label see no banner
    assert not any("The rubric changed" in m.value for m in eng.markdown)


def test_the_judge_page_renders_the_rubric_escaped_and_refuses_an_unchanged_save():
    store = _accounts()
    lead = identity.get_user(store, "lead")
    judging.edit_rubric(store, lead, HOSTILE, "hostile")
    at = app_as("lead")
    at.switch_page("app_pages/judge.py").run()
    assert not at.exception
    assert any(m.value == safe_markdown(HOSTILE).strip() for m in at.markdown)  # st.markdown strips
    n = store.read_one("SELECT count(*) FROM rubric_versions")[0]
    at.text_input(key="rub_change").input("nothing really")
    at.button(key="rub_save").click().run()
    assert any("unchanged" in e.value for e in at.error)
    assert store.read_one("SELECT count(*) FROM rubric_versions")[0] == n


def test_the_headline_and_the_pairs_table_read_the_same_kappa():
    store = _accounts()
    lead = identity.get_user(store, "lead")
    end = store.read_one("SELECT length(raw_text) FROM documents WHERE doc_id = 'pension'")[0]
    # two annotators who are often one grade apart: the quadratic κ reads higher than the linear
    a = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 1, 2]
    b = [1, 2, 3, 3, 0, 0, 1, 2, 1, 1, 3, 2, 0, 3]
    qids = [r[0] for r in store.read("SELECT query_id FROM queries ORDER BY 1 LIMIT 14")]
    for q, ga, gb in zip(qids, a, b):
        judging_store.record(store, "ann", q, "pension", 0, end, op="grade", grade=ga)
        judging_store.record(store, "bob", q, "pension", 0, end, op="grade", grade=gb)
    rep = agreement.compute(store, lead)
    row = rep.pair_table().iloc[0]
    assert reading(row["kappa_linear"]) != reading(row["kappa_quadratic"])  # the case the issue saw
    assert row["reading_linear"] == reading(rep.group.kappa_linear) and "reading_graded" not in row
    at = app_as("lead")
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception
    headline = next(plain(x.value) for x in [*at.success, *at.warning] if "annotators." in plain(x.value))
    assert f"linear {rep.group.kappa_linear:.3f}: {row['reading_linear']}" in headline
    assert f"graded κ unweighted {rep.group.kappa_unweighted:.3f}: {row['reading_unweighted']}" in headline
