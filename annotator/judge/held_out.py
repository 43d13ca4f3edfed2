"""Which texts count as held out, for the paths that send text to a hosted model.

A held-out question's flag only protects it while it travels with its query id. Text that
arrives another way (an uploaded calibration file, a copy of the question under a new id, a
passage, document or rubric that quotes it) carries no flag, so every LLM path also checks
what it is about to send against the store's held-out questions, by id and by their words,
before any request is built (METHODOLOGY §3.8).

Why words and not the exact string (issue 37, H2): a copy without its "?", with one
*emphasised* word or with "she's" written "she is" is the same test question to a model, and
an exact-substring check let all three through. Both sides are reduced to normalised words
(:func:`words`) and a text is refused when it shares :data:`NGRAM` consecutive words with a
held-out question, or the whole question when the question is shorter than that. Eight words
is long enough that two unrelated questions about the same policy rarely share them ("how many
days a week" is five), and short enough that a copy with a word changed every eight words or
less is the only near-copy that passes. The questions' n-grams are kept in a hash index
(a dict), so checking a text costs one lookup per word window whatever the number of
held-out questions.

A question that was ever held out stays held out here: a held-out question once sent cannot
be un-sent, and a re-import that clears its flag must not open the way to the model."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from golden_store.core.canonical import canonical_text
from golden_store.db.store import Store
from golden_store.live import queries

# How many consecutive normalised words a text must share with a held-out question to be
# refused (the whole question when it has fewer words).
NGRAM = 8

_TAG = re.compile(r"<[^<>]{0,500}>")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Contractions folded to their long form, so "she's" and "she is" are the same words.
_IRREGULAR = {"can't": "can not", "cannot": "can not", "won't": "will not", "shan't": "shall not",
              "ain't": "is not", "let's": "let us"}
_SUFFIXES = (("n't", " not"), ("'s", " is"), ("'re", " are"), ("'ve", " have"), ("'ll", " will"),
             ("'d", " would"), ("'m", " am"))


def normalize(text: str | None) -> str:
    """Canonicalize (NFKC, curly quotes, zero-width characters...), casefold, collapse
    whitespace runs, strip: how two copies of a question compare as strings."""
    return " ".join(canonical_text(str(text or "")).casefold().split())


def _fold(token: str) -> str:
    if token in _IRREGULAR:
        return _IRREGULAR[token]
    for suffix, long in _SUFFIXES:
        if token.endswith(suffix) and len(token) > len(suffix):
            return token[: -len(suffix)].replace("'", "") + long
    return token.replace("'", "")


def words(text: str | None) -> list[str]:
    """The normalised words of ``text``: HTML entities decoded and tags dropped, canonicalized
    (NFKC, curly apostrophes to ``'``), casefolded, punctuation and Markdown markup dropped
    (only letters and digits make words), contractions folded (``she's`` -> ``she is``,
    ``don't`` -> ``do not``). Two copies of a question that differ only in these have the
    same words."""
    t = normalize(_TAG.sub(" ", html.unescape(str(text or ""))))
    return " ".join(_fold(w) for w in _WORD.findall(t)).split()


@dataclass(frozen=True)
class HeldOut:
    """The ids of every question ever held out and an index of the word n-grams of every
    wording they had (retired questions included), read once per job."""

    ids: frozenset[str]
    grams: dict[str, str] = field(default_factory=dict)  # " ".join(n words) -> query id
    lengths: frozenset[int] = frozenset()  # the n-gram lengths in the index (NGRAM, or shorter questions' lengths)

    @classmethod
    def of(cls, store: Store) -> HeldOut:
        return cls.build(queries.held_out_texts(store))

    @classmethod
    def build(cls, rows: list[tuple[str, str]]) -> HeldOut:
        """The guard for ``rows`` of (query id, text): each wording's windows of ``NGRAM``
        words (its whole words when shorter), first query id in sorted order kept."""
        grams: dict[str, str] = {}
        for qid, text in sorted(rows):
            w = words(text)
            n = min(NGRAM, len(w))
            for i in range(len(w) - n + 1) if n else ():
                grams.setdefault(" ".join(w[i:i + n]), qid)
        return cls(frozenset(qid for qid, _ in rows), grams,
                   frozenset(len(g.split()) for g in grams))

    def id_in(self, item_id: str | None) -> str | None:
        """The held-out query id that ``item_id`` is, or contains as a run of ``|``-separated
        parts (calibration items are ``query|doc|start|end`` or ``system|query|nugget``), else
        None. Matched as a delimited substring, not by splitting: a ``|`` inside a system name
        or another id must not hide the query id next to it."""
        text = "|" + "|".join(p.strip() for p in str(item_id or "").split("|")) + "|"
        return next((qid for qid in sorted(self.ids) if f"|{qid}|" in text), None)

    def text_in(self, *texts: str | None) -> str | None:
        """The held-out query with which any of ``texts`` shares ``NGRAM`` consecutive
        normalised words (or all of its words, when it has fewer), else None."""
        if not self.grams:
            return None
        for text in texts:
            w = words(text)
            for n in sorted(self.lengths, reverse=True):
                for i in range(len(w) - n + 1):
                    if hit := self.grams.get(" ".join(w[i:i + n])):
                        return hit
        return None
