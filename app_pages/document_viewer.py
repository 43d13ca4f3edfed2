"""A document viewer where a selection becomes a quote: the document's raw text (set as text,
never HTML), and on mouse-up (or a Shift+arrow selection) the selected range's raw offsets,
in Python's code points, go back to Python as the "selected" trigger, with the text that was
selected and the digest of the document shown (Components v2, inline JS/CSS; light DOM so
the browser's selection works as everywhere else on the page)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

_JS = """
export default function (component) {
  const { data, setTriggerValue, parentElement } = component;
  let box = parentElement.querySelector(".gdv-text");
  if (!box) {
    box = document.createElement("div");
    box.className = "gdv-text";
    box.setAttribute("role", "document");
    box.setAttribute("aria-label", "Document text: select the passage that answers the question");
    parentElement.appendChild(box);
    const report = () => {
      const st = box.__state;
      const sel = window.getSelection();
      if (!st || !sel || !sel.rangeCount || sel.isCollapsed) return;
      const r = sel.getRangeAt(0);
      if (!box.contains(r.startContainer) || !box.contains(r.endContainer)) return;
      const text = box.textContent;
      const at = (node, off) => {  // UTF-16 offset of (node, off) inside box
        if (node === box) return off === 0 ? 0 : text.length;
        const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
        let n = 0, cur;
        while ((cur = walker.nextNode())) { if (cur === node) return n + off; n += cur.textContent.length; }
        return n;
      };
      const a = at(r.startContainer, r.startOffset), b = at(r.endContainer, r.endOffset);
      const cp = (i) => Array.from(text.slice(0, i)).length;  // Python counts code points
      st.setTrigger("selected", { doc_id: st.doc_id, digest: st.digest, start: cp(a), end: cp(b),
                                  text: text.slice(a, b) });
    };
    box.addEventListener("mouseup", report);
    box.addEventListener("keyup", (e) => { if (e.shiftKey) report(); });
    box.tabIndex = 0;
  }
  box.__state = { setTrigger: setTriggerValue, doc_id: data.doc_id, digest: data.digest };
  if (box.dataset.digest !== data.digest) {
    box.textContent = data.text;
    box.dataset.digest = data.digest;
    box.scrollTop = 0;
    // the viewer sits below the search results, the width of the page: a document just
    // opened is brought into view (once per document, never while the person reads it)
    requestAnimationFrame(() => box.scrollIntoView({ block: "nearest" }));
  }
}
"""
_CSS = """
.gdv-text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 72vh; overflow-y: auto;
  border: 1px solid var(--st-border-color, rgba(128, 128, 128, 0.3)); border-radius: 0.5rem;
  padding: 0.5rem 0.75rem; line-height: 1.55; font-family: var(--st-font); color: var(--st-text-color); }
.gdv-text::selection, .gdv-text *::selection { background: rgba(33, 195, 84, 0.35); }
"""
_COMPONENT = st.components.v2.component("golden_document_viewer", js=_JS, css=_CSS, isolate_styles=False)


def document_viewer(*, key: str, doc_id: str, text: str, digest: str,
                    on_select: Callable[[dict], None]) -> None:
    """Show ``text``; ``on_select(selection)`` runs (before the page) when the person selects
    a passage: ``{doc_id, digest, start, end, text}`` with raw code-point offsets."""

    def received() -> None:
        result = st.session_state.get(key)
        sel = getattr(result, "selected", None) if result is not None else None
        if isinstance(sel, dict):
            on_select(sel)

    _COMPONENT(key=key, data={"doc_id": doc_id, "text": text, "digest": digest}, on_selected_change=received)
