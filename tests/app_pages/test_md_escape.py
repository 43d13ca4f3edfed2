"""Issue 18 item 13: ``md_escape`` keeps untrusted text literal under Streamlit's Markdown,
including Streamlit's own syntax (``:red[...]``, ``:material/x:``, ``:smile:``, ``$math$``).

AppTest shows the Markdown *source* of an element, not what the browser draws, so this
checks the escaped source against a model of Streamlit 1.x's Markdown front end
(StreamlitMarkdown.tsx): what it rewrites in the source before parsing, which plugins it
loads (emoji, KaTeX) from regexes over the source, and what it rewrites in the parsed text
where backslash escapes are gone. tests/browser/test_browser_md_escape.py checks the same cases in
a real browser."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st_
from streamlit.testing.v1 import AppTest

from app_pages._shared import WORD_JOINER, md_escape

ASCII_PUNCT = r"!-/:-@\[-`{-~"
# The front end's regexes (JavaScript \w is ASCII).
W = "A-Za-z0-9_"
NEEDS_EMOJI = re.compile(rf":(?!material/|streamlit:)[{W}+-][{W}+-]*:")  # hm(): load remark-emoji
MATH_SKIP = re.compile(r"(?:^|(?<=\n)) {0,3}(`{3,}|~{3,})[\s\S]*?(?:\n[ \t]*\1|$)|(?<!`)(`+)[^`\n]+\2(?!`)|\\[\\$`]")
MATH_BLOCK = re.compile(r"(?<!\$)\$\$+(?!\$)[\s\S]*?\$\$")
MATH_INLINE = re.compile(r"(?<!\$)\$(?![\s$])[^$\n]*?[^\s$]\$(?!\d)")
# Rewrites of the parsed text (escapes resolved): icons, logo, emoji, typographic arrows.
TEXT_REWRITES = [re.compile(p) for p in (
    rf":material_[{W}]+:", r":streamlit:", rf":\+1:|:-1:|:[{W}-]+:",
    r"(^|\s)(<->|->|<-|--|>=|<=|~=)(\s|$)")]

MARKUP = st_.sampled_from([
    ":", "::", ":red[", ":blue-background[", ":small[", ":material/", ":material_", "material", "home",
    "smile", "+1", "-1", "streamlit", "[", "]", "(", ")", "$", "$$", "\\", "`", "*", "_", "~", "#", "<",
    ">", "-", "->", "<-", "--", ">=", "<=", "~=", "=", "&", "amp;", "|", "!", "@", "www.", "http://", ".",
    "/", "{", "}", "^", " ", "\n", "\t", "a", "1", "é", "\u2060", "<b>", "<img src=x onerror=alert(1)>",
])
TEXT = st_.one_of(st_.lists(MARKUP, max_size=25).map("".join), st_.text(max_size=60))


def unescape(source: str) -> str:
    """The parsed text of a source whose every ASCII punctuation character is escaped,
    failing if one is not (a bare punctuation character could start syntax)."""
    out, i = [], 0
    while i < len(source):
        c = source[i]
        if c == "\\":
            assert i + 1 < len(source) and re.match(f"[{ASCII_PUNCT}]", source[i + 1]), (source, i)
            out.append(source[i + 1])
            i += 2
            continue
        assert not re.match(f"[{ASCII_PUNCT}]", c), (source, i, c)
        out.append(c)
        i += 1
    return "".join(out)


@given(TEXT)
@example(":red[alert]")
@example(":material/home: :material_home:")
@example(":smile: :+1: a:b:c: :streamlit:")
@example("$x^2$ and $$y$$")
@example("a -> b <-> c -- d >= 1 <= 2 ~= 3")
@example("\\$not math\\$")
def test_escaped_text_stays_literal(x: str) -> None:
    source = md_escape(x)
    assert ":material/" not in source  # rewritten to an icon before parsing
    assert not NEEDS_EMOJI.search(source)  # the emoji plugin is not even loaded
    skipped = MATH_SKIP.sub("_", source)
    assert not MATH_BLOCK.search(skipped) and not MATH_INLINE.search(skipped)  # KaTeX not loaded
    text = unescape(source)  # every punctuation escaped: no Markdown, directive or autolink
    for rewrite in TEXT_REWRITES:
        assert not rewrite.search(text), (x, rewrite.pattern)
    assert text.replace(WORD_JOINER, "") == x.replace(WORD_JOINER, "")  # nothing visible added or lost


def test_st_markdown_gets_the_escaped_source():
    at = AppTest.from_string("import streamlit as st\nfrom app_pages._shared import md_escape\n"
                             "st.markdown(md_escape(':red[x] :material/home: :smile: $y$'))").run()
    assert at.markdown[0].value == md_escape(":red[x] :material/home: :smile: $y$")
    assert unescape(at.markdown[0].value).replace(WORD_JOINER, "") == ":red[x] :material/home: :smile: $y$"
