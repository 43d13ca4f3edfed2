"""A fuzzy quote's differences from the document, as Markdown a person can read: what only
the expert typed in red, what only the document has in green, every piece escaped.

Why not ``~~struck~~``: Markdown strikes only between word boundaries, so a difference inside
or right after a word (``unrecorded~~.~~``) showed its tildes literally (review M1)."""

from __future__ import annotations

from collections.abc import Iterable

from app_pages._shared import md_escape

VISIBLE_SPACE = "␣"  # a space on one side only is still a difference: show it


def diff_markdown(diff: Iterable[tuple[str, str]]) -> str:
    """``diff``: (op, text) pieces, op in equal / quote_only / corpus_only (``char_diff``)."""
    out = []
    for op, text in diff:
        if op == "equal":
            out.append(md_escape(text))
            continue
        shown = text if text.strip() else VISIBLE_SPACE * len(text)
        style = "red-background" if op == "quote_only" else "green-background"
        out.append(f":{style}[{md_escape(shown)}]")
    return "".join(out)
