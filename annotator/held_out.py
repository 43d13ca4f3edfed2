"""Which texts count as held out, for the paths that send text to a hosted model.

A held-out question's flag only protects it while it travels with its query id. Text that
arrives another way (an uploaded calibration file, a copy of the question under a new id, a
passage or rubric that quotes it) carries no flag, so every LLM path also checks what it is
about to send against the store's held-out questions, by id and by normalized text, before
any request is built (METHODOLOGY §3.8)."""

from __future__ import annotations

from dataclasses import dataclass

from golden_store.live import queries
from golden_store.core.canonical import canonical_text
from golden_store.db.store import Store


def normalize(text: str | None) -> str:
    """Canonicalize (NFKC, curly quotes, zero-width characters...), casefold, collapse
    whitespace runs, strip: how two copies of a question are compared."""
    return " ".join(canonical_text(str(text or "")).casefold().split())


@dataclass(frozen=True)
class HeldOut:
    """The store's held-out question ids and the normalized text of every wording they had
    (retired questions included), read once per job."""

    ids: frozenset[str]
    texts: tuple[tuple[str, str], ...]  # (normalized text, query id)

    @classmethod
    def of(cls, store: Store) -> HeldOut:
        rows = queries.held_out_texts(store)
        return cls(frozenset(qid for qid, _ in rows),
                   tuple(sorted({(t, qid) for qid, text in rows if (t := normalize(text))})))

    def id_in(self, item_id: str | None) -> str | None:
        """The held-out query id that ``item_id`` is, or contains as a run of ``|``-separated
        parts (calibration items are ``query|doc|start|end`` or ``system|query|nugget``), else
        None. Matched as a delimited substring, not by splitting: a ``|`` inside a system name
        or another id must not hide the query id next to it."""
        text = "|" + "|".join(p.strip() for p in str(item_id or "").split("|")) + "|"
        return next((qid for qid in sorted(self.ids) if f"|{qid}|" in text), None)

    def text_in(self, *texts: str | None) -> str | None:
        """The held-out query whose text any of ``texts`` is or contains (normalized), else None."""
        for text in texts:
            t = normalize(text)
            if t:
                hit = next((qid for h, qid in self.texts if h in t), None)
                if hit:
                    return hit
        return None
