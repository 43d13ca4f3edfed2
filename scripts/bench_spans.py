#!/usr/bin/env python3
"""Quote -> span benchmark: how well and how fast `golden_store.corpus.resolver` places evidence
quotes in a large corpus, against the naive "align with every document" baseline measured
in the same run.

What it does, in order:

1. generates a corpus (fixed seed) of ``--mb`` MiB of raw UTF-8 text: documents of 2-8 KB
   of prose over a 40,000-word pseudo-vocabulary with Zipf-Mandelbrot frequencies (short
   words are the frequent ones), with headings, bullet lists, commas, numbers, dates,
   prices, codes (``ERR-1234``, ``SKU 12-345``, ``v2.3.1``), curly and straight quotes,
   apostrophes, em/en dashes, a few accented words and ligatures, no-break spaces, some
   hard-wrapped paragraphs with line-break hyphenation (``reim-\\nbursement``) and a few
   CRLF documents.
2. samples ``--quotes`` positive quotes: a document (weighted by length), then 8-40
   whole whitespace-delimited words of its canonical text; the ground truth is the raw span
   that produced them (``canonicalize(raw).to_raw``), and the verbatim quote is that raw
   slice (newlines, curly quotes and hyphenation included, as a copy from the document
   would be). Duplicates are avoided, not scored: a draw is rejected when the 6-word shingle
   of its interior words (lower-cased, punctuation stripped) occurs more than once in the
   corpus, so every kept quote has exactly one true place. 70% stay verbatim; 30% are
   perturbed, in equal shares, with one of:

   * ``whitespace``: whitespace runs changed (doubled, newlines, tabs; leading/trailing
     added), and in a third of them one inter-word space removed (two words glued);
   * ``case``: all lower, ALL UPPER, Title Case, or 1-3 words with the first letter flipped;
   * ``punctuation``: 1-3 edits: a mark deleted, replaced by another, or a comma/period added;
   * ``typos``: 1-3 character edits (substitution, deletion, insertion, transposition);
   * ``drop_word``: one interior word removed (never the first or last word).

   Plus ``--negatives`` quotes that are nowhere in the corpus, with the same length
   distribution: 60% ``fresh`` (new sentences from the same vocabulary), 20% ``stitched``
   (two halves from two different documents), 20% ``substituted`` (a real passage with
   every third word replaced: ~33% of words changed). Each is checked to contain at least
   one interior 6-word shingle absent from the corpus.
3. in a fresh child process, measures ``CorpusIndex.from_raw`` (canonicalization + index)
   and ``SpanResolver.resolve`` on all quotes (shuffled, one call each, timed one by one).
   Peak memory is the child's ``VmHWM`` (whole process: interpreter, numpy, rapidfuzz, the
   raw corpus it was handed); growth = peak during build+resolve - RSS just before.
4. in another fresh child, the naive baseline on ``--baseline-sample`` quotes drawn from
   the same 11,000: ``rapidfuzz.fuzz.partial_ratio_alignment`` of the canonical lower-cased
   quote against every document's canonical lower-cased text, keeping the best (then one
   ``canonicalize`` to map it to raw offsets). Also a stronger variant that passes the best
   score so far as ``score_cutoff``. The lower-cased corpus is prepared before timing.
5. scores: a positive is *located correctly* when its status is ``exact`` or ``fuzzy``, the
   document is the true one and the returned raw span covers >= 80% of the true raw span;
   *exact boundaries*: both ends within 3 characters of the truth. A negative is a *false
   match* when it resolves to ``exact`` or ``fuzzy`` (``ambiguous`` reported separately).
   Prints a table, failure examples, then one JSON line (``--json``: only the JSON line).

``--batch`` measures ``golden resolve --corpus FOLDER`` end to end instead: the baseline
code (main before issue 41), this code with and without its kept folder index, and a naive
exact-first scan, with accuracy counts and a line-by-line comparison of the answers (see
"batch mode" below).

Usage::

    python scripts/bench_spans.py [--mb 20] [--quotes 10000] [--negatives 1000]
                                  [--baseline-sample 30] [--seed S] [--json] [--profile]
    python scripts/bench_spans.py --batch [--mb 25] [--quotes 2000] [--negatives 200] [--reps 3]
                                  [--naive-sample 20] [--baseline-rev c33c183 | --baseline-dir DIR]
                                  [--profile] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from benchlib import _mark_before, _maxrss_kib, _status_kib, child_runner, git_head, log, print_profile, set_quiet  # noqa: E402  (scripts/ is on sys.path)

run_child = child_runner(__file__)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # runs from a checkout even without `pip install -e .`

SEED = 20240611
VOCAB_SIZE = 40_000
VERBATIM_SHARE = 0.70
PERTURBATIONS = ("whitespace", "case", "punctuation", "typos", "drop_word")
NEGATIVE_KINDS = (("fresh", 0.6), ("stitched", 0.2), ("substituted", 0.2))
MIN_WORDS, MAX_WORDS = 8, 40
SHINGLE = 6             # words per uniqueness shingle (interior words of an 8-word quote)
COVER = 0.80            # located: returned span covers >= 80% of the true span
BOUNDARY_TOL = 3        # exact boundaries: both ends within 3 characters
THRESHOLD = 90.0        # the resolver's default; the baseline uses the same


# ---- corpus generation -------------------------------------------------------------------------

_ONSETS = ["", "", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v",
           "w", "z", "br", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "st", "th", "tr", "ch", "sp", "sl"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y"]
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "rt", "x", "ng"]
_SPECIAL = ["café", "naïve", "façade", "Zürich", "résumé", "coöperate", "ﬁle", "ﬂow", "Ångström",
            "São Paulo", "…", "½", "m²", "déjà vu"]


def make_vocab(rng: random.Random, n: int = VOCAB_SIZE) -> list[str]:
    """``n`` distinct pseudo-words, in frequency-rank order (shorter words rank higher)."""
    words: set[str] = set()
    while len(words) < n:
        k = rng.choices([1, 2, 3, 4], weights=[20, 40, 28, 12])[0]
        words.add("".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(k)))
    ranked = sorted(words)
    rng.shuffle(ranked)
    ranked.sort(key=lambda w: len(w) + rng.gauss(0, 2.5))
    return ranked


class WordStream:
    """Zipf-Mandelbrot word draws (p ~ 1 / (rank + 2.7)), in numpy chunks."""

    def __init__(self, vocab: list[str], seed: int) -> None:
        import numpy as np

        self.vocab = vocab
        self._np = np.random.default_rng(seed)
        w = 1.0 / (np.arange(len(vocab)) + 2.7)
        self._p = w / w.sum()
        self._buf: list[str] = []
        self._pos = 0

    def take(self, k: int) -> list[str]:
        if self._pos + k > len(self._buf):
            ids = self._np.choice(len(self.vocab), size=max(500_000, k), p=self._p)
            self._buf = self._buf[self._pos:] + [self.vocab[i] for i in ids.tolist()]
            self._pos = 0
        out = self._buf[self._pos:self._pos + k]
        self._pos += k
        return out

    def one(self) -> str:
        return self.take(1)[0]


def _number(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.30:
        return str(rng.randint(2, 999))
    if r < 0.45:
        return f"{rng.randint(1, 99)}.{rng.randint(0, 9)}%"
    if r < 0.55:
        return f"{rng.randint(1, 99)}\u00a0%"  # no-break space before the unit
    if r < 0.68:
        return f"{rng.randint(1, 9)},{rng.randint(0, 999):03d}"
    if r < 0.80:
        return f"{rng.randint(2015, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if r < 0.90:
        return f"${rng.randint(5, 999)}.{rng.randint(0, 99):02d}"
    a = rng.randint(1, 50)
    return f"{a}\u2013{a + rng.randint(1, 50)}"  # en dash range


def _code(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.40:
        return f"ERR-{rng.randint(1000, 9999)}"
    if r < 0.65:
        return f"SKU {rng.randint(10, 99)}-{rng.randint(100, 999)}"
    if r < 0.85:
        return f"v{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
    return f"INC{rng.randint(100000, 999999)}"


def _sentence(rng: random.Random, ws: WordStream, n: int | None = None) -> str:
    n = n or rng.randint(6, 26)
    toks = ws.take(n)
    for i in range(n):
        if rng.random() < 0.03:
            toks[i] = toks[i].capitalize()  # proper nouns
    if rng.random() < 0.15:
        toks[rng.randrange(n)] = _number(rng)
    if rng.random() < 0.07:
        toks[rng.randrange(n)] = _code(rng)
    if rng.random() < 0.015:
        toks[rng.randrange(n)] = rng.choice(_SPECIAL)
    if rng.random() < 0.05:
        i = rng.randrange(n)
        toks[i] += rng.choice(["\u2019s", "'s"])
    if rng.random() < 0.06 and n > 4:
        i = rng.randrange(n - 3)
        j = i + rng.randint(0, 2)
        o, c = ("\u201c", "\u201d") if rng.random() < 0.7 else ('"', '"')
        toks[i], toks[j] = o + toks[i], toks[j] + c
    if rng.random() < 0.04 and n > 6:
        i = rng.randrange(1, n - 3)
        j = i + rng.randint(1, 2)
        toks[i], toks[j] = "(" + toks[i], toks[j] + ")"
    for i in range(n - 1):
        if rng.random() < 0.08:
            toks[i] += ","
    if rng.random() < 0.05 and n > 3:  # an em dash, spaced or not
        i = rng.randrange(1, n - 1)
        if rng.random() < 0.5:
            toks[i] += " \u2014"
        else:
            toks[i] += "\u2014" + toks.pop(i + 1)
    s = " ".join(toks)
    return s[0].upper() + s[1:] + rng.choices([".", "?", "!", ";", ":"], weights=[80, 8, 3, 5, 4])[0]


def _wrap(rng: random.Random, para: str) -> str:
    """Hard-wrap a paragraph at 60-80 columns; long words at a line end are sometimes
    hyphenated across the break (``reim-\\nbursement``)."""
    width = rng.randint(60, 80)
    lines: list[str] = []
    cur = ""
    for w in para.split(" "):
        if cur and len(cur) + 1 + len(w) > width:
            if len(w) >= 8 and w.isalpha() and rng.random() < 0.5:
                k = rng.randint(3, len(w) - 3)
                lines.append(f"{cur} {w[:k]}-")
                cur = w[k:]
                continue
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    return "\n".join(lines)


def make_document(rng: random.Random, ws: WordStream, i: int) -> str:
    target = rng.randint(2000, 8000)
    parts = [f"# {' '.join(ws.take(rng.randint(2, 5))).title()} {i}\n\n"]
    size = len(parts[0])
    while size < target:
        r = rng.random()
        if r < 0.05:
            block = f"## {' '.join(ws.take(rng.randint(1, 4))).title()}\n\n"
        elif r < 0.12:
            items = [f"- {_sentence(rng, ws, rng.randint(3, 12))}" for _ in range(rng.randint(2, 5))]
            block = "\n".join(items) + "\n\n"
        else:
            para = " ".join(_sentence(rng, ws) for _ in range(rng.randint(2, 7)))
            if rng.random() < 0.3:
                para = _wrap(rng, para)
            block = para + "\n\n"
        parts.append(block)
        size += len(block)
    text = "".join(parts).rstrip() + "\n"
    if rng.random() < 0.05:
        text = text.replace("\n", "\r\n")
    return text


def generate_corpus(rng: random.Random, ws: WordStream, mb: float) -> dict[str, str]:
    target = int(mb * 2**20)
    docs: dict[str, str] = {}
    total = 0
    i = 0
    while total < target:
        text = make_document(rng, ws, i)
        docs[f"doc-{i:05d}.md"] = text
        total += len(text.encode("utf-8"))
        i += 1
    return docs


# ---- uniqueness: 6-word shingles of normalized words -------------------------------------------

_NORM = re.compile(r"\W+")


class Shingles:
    """Every 6-word shingle of the corpus (canonical words lower-cased, punctuation stripped),
    as sorted 64-bit hashes: ``count(words)`` says how often a run of 6 words occurs."""

    def __init__(self, canon_texts: list[str]) -> None:
        import numpy as np

        self.np = np
        self.ids: dict[str, int] = {}
        seq: list[int] = []
        ids = self.ids
        for text in canon_texts:
            for w in text.split(" "):
                k = _NORM.sub("", w.lower())
                seq.append(ids.setdefault(k, len(ids)))
            seq.append(ids.setdefault("\x00doc", len(ids)))  # document boundary
        arr = np.asarray(seq, dtype=np.uint64)
        self.sorted = np.sort(self._hash(arr))

    def _hash(self, arr):  # polynomial hash of every window of SHINGLE ids (uint64 wraps)
        np = self.np
        n = arr.size - SHINGLE + 1
        if n <= 0:
            return np.zeros(0, np.uint64)
        h = np.zeros(n, np.uint64)
        with np.errstate(over="ignore"):
            for j in range(SHINGLE):
                h = h * np.uint64(1_000_003) + arr[j:j + n] + np.uint64(1)
        return h

    def counts(self, words: list[str]) -> list[int]:
        """Occurrences in the corpus of each 6-word shingle of ``words``."""
        np = self.np
        ids = [self.ids.get(_NORM.sub("", w.lower()), -1) for w in words]
        if len(ids) < SHINGLE:
            return []
        if any(i < 0 for i in ids):  # an unknown word: windows containing it occur 0 times
            out = []
            for s in range(len(ids) - SHINGLE + 1):
                win = ids[s:s + SHINGLE]
                out.append(0 if min(win) < 0 else self._count(np.asarray(win, np.uint64)))
            return out
        h = self._hash(np.asarray(ids, np.uint64))
        lo = np.searchsorted(self.sorted, h, "left")
        hi = np.searchsorted(self.sorted, h, "right")
        return (hi - lo).tolist()

    def _count(self, win) -> int:
        h = self._hash(win)
        np = self.np
        return int(np.searchsorted(self.sorted, h[0], "right") - np.searchsorted(self.sorted, h[0], "left"))


# ---- quotes ------------------------------------------------------------------------------------


def _perturb(rng: random.Random, q: str, kind: str) -> tuple[str, str]:
    """Return (perturbed quote, sub-variant)."""
    if kind == "whitespace":
        parts = re.split(r"(\s+)", q)
        for i in range(1, len(parts), 2):
            if rng.random() < 0.5:
                parts[i] = rng.choice(["  ", "\n", " \n", "\t", "   ", "\n\n"])
        sub = "runs"
        if rng.random() < 1 / 3:
            gaps = [i for i in range(1, len(parts) - 1, 2)
                    if parts[i - 1][-1:].isalnum() and parts[i + 1][:1].isalnum()]
            if gaps:
                parts[rng.choice(gaps)] = ""
                sub = "runs+glued"
        return rng.choice(["", " ", "\n", "  "]) + "".join(parts) + rng.choice(["", " ", "\n"]), sub
    if kind == "case":
        sub = rng.choice(["lower", "upper", "title", "flip"])
        if sub == "lower":
            return q.lower(), sub
        if sub == "upper":
            return q.upper(), sub
        if sub == "title":
            return q.title(), sub
        words = q.split(" ")
        cands = [i for i, w in enumerate(words) if w[:1].isalpha()]
        for i in rng.sample(cands, k=min(len(cands), rng.randint(1, 3))):
            w = words[i]
            words[i] = (w[0].lower() if w[0].isupper() else w[0].upper()) + w[1:]
        return " ".join(words), sub
    if kind == "punctuation":
        s = list(q)
        n = rng.randint(1, 3)
        for _ in range(n):
            marks = [i for i, c in enumerate(s) if c in ".,;:!?\"'()\u201c\u201d\u2019"]
            if marks and rng.random() < 0.6:
                i = rng.choice(marks)
                if rng.random() < 0.5:
                    del s[i]
                else:
                    s[i] = rng.choice([c for c in ".,;:!?" if c != s[i]])
            else:
                spaces = [i for i, c in enumerate(s) if c == " "]
                if spaces:
                    s.insert(rng.choice(spaces), rng.choice([",", ",", ".", ";"]))
        return "".join(s), f"{n} edit{'s' * (n > 1)}"
    if kind == "typos":
        s = list(q)
        n = rng.randint(1, 3)
        for _ in range(n):
            letters = [i for i, c in enumerate(s) if c.isalpha()]
            i = rng.choice(letters)
            op = rng.choice(["sub", "del", "ins", "swap"])
            if op == "sub":
                s[i] = rng.choice([c for c in "abcdefghijklmnopqrstuvwxyz" if c != s[i].lower()])
            elif op == "del":
                del s[i]
            elif op == "ins":
                s.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz"))
            elif i + 1 < len(s):
                s[i], s[i + 1] = s[i + 1], s[i]
        return "".join(s), f"{n} typo{'s' * (n > 1)}"
    if kind == "drop_word":
        parts = re.split(r"(\s+)", q.strip())
        words = parts[0::2]
        i = rng.randrange(1, len(words) - 1)
        size = len(words[i])
        del parts[2 * i - 1:2 * i + 1]  # the word and the whitespace before it
        where = "next to an end" if i in (1, len(words) - 2) else "inner"
        return "".join(parts), f"{'1-4' if size <= 4 else '5-8' if size <= 8 else '9+'} chars, {where}"
    raise ValueError(kind)


def make_quotes(rng: random.Random, ws: WordStream, raw: dict[str, str], n_pos: int, n_neg: int) -> dict:
    from golden_store.core.canonical import canonical_text, canonicalize

    t0 = time.perf_counter()
    ids = list(raw)
    canon = {d: canonicalize(raw[d]) for d in ids}
    spans = {d: [(m.start(), m.end()) for m in re.finditer(r"\S+", canon[d].text)] for d in ids}
    t_canon = time.perf_counter() - t0
    sh = Shingles([canon[d].text for d in ids])
    t_sh = time.perf_counter() - t0 - t_canon
    weights = [len(spans[d]) for d in ids]
    rejected = {"duplicate": 0, "too_short_doc": 0}

    def draw_span(k: int, avoid: str | None = None):
        while True:
            d = rng.choices(ids, weights=weights)[0]
            if d == avoid:
                continue
            toks = spans[d]
            if len(toks) < k + 2:
                rejected["too_short_doc"] += 1
                continue
            i = rng.randrange(0, len(toks) - k + 1)
            cs, ce = toks[i][0], toks[i + k - 1][1]
            return d, cs, ce

    def unique(d: str, cs: int, ce: int) -> bool:
        words = canon[d].text[cs:ce].split(" ")
        interior = words[1:-1]
        c = sh.counts(interior[:SHINGLE])
        return bool(c) and c[0] == 1

    positives = []
    kinds = ["verbatim"] * round(n_pos * VERBATIM_SHARE)
    kinds += [PERTURBATIONS[i % len(PERTURBATIONS)] for i in range(n_pos - len(kinds))]
    rng.shuffle(kinds)
    mismatched = 0
    for kind in kinds:
        while True:
            k = rng.randint(MIN_WORDS, MAX_WORDS)
            d, cs, ce = draw_span(k)
            if unique(d, cs, ce):
                break
            rejected["duplicate"] += 1
        rs, re_ = canon[d].to_raw(cs, ce)
        verbatim = raw[d][rs:re_]
        if canonicalize(verbatim).text != canon[d].text[cs:ce]:
            mismatched += 1  # would make the ground truth inconsistent; never seen, checked anyway
        quote, sub = (verbatim, "") if kind == "verbatim" else _perturb(rng, verbatim, kind)
        positives.append({"quote": quote, "kind": kind, "sub": sub, "doc": d, "start": rs, "end": re_,
                          "words": k, "canon_len": ce - cs})

    negatives = []
    neg_kinds = []
    for name, share in NEGATIVE_KINDS:
        neg_kinds += [name] * round(n_neg * share)
    neg_kinds = (neg_kinds + ["fresh"] * n_neg)[:n_neg]
    rng.shuffle(neg_kinds)
    vocab = ws.vocab
    for kind in neg_kinds:
        while True:
            k = rng.randint(MIN_WORDS, MAX_WORDS)
            if kind == "fresh":
                words: list[str] = []
                while len(words) < k + 1:
                    words += _sentence(rng, ws).split(" ")
                s = rng.randrange(0, len(words) - k + 1)
                quote = " ".join(words[s:s + k])
            elif kind == "stitched":
                k1 = k // 2
                d1, a1, b1 = draw_span(k1)
                d2, a2, b2 = draw_span(k - k1, avoid=d1)
                quote = canon[d1].text[a1:b1] + " " + canon[d2].text[a2:b2]
            else:  # substituted: every third word replaced
                d, cs, ce = draw_span(k)
                words = canon[d].text[cs:ce].split(" ")
                off = rng.randrange(3)
                for i in range(off, len(words), 3):
                    new = rng.choice(vocab)
                    while new == words[i]:
                        new = rng.choice(vocab)
                    words[i] = new
                quote = " ".join(words)
            c = sh.counts(canonical_text(quote).split(" ")[1:-1])
            if c and min(c) == 0:
                break
        negatives.append({"quote": quote, "kind": kind, "sub": "", "doc": None, "start": None, "end": None,
                          "words": k, "canon_len": len(quote)})
    return {"positives": positives, "negatives": negatives, "rejected_draws": rejected,
            "truth_mismatches": mismatched, "canon_s": round(t_canon, 2), "shingles_s": round(t_sh, 2),
            "corpus_words": len(sh.sorted)}


# ---- child side: measured work in a fresh process ----------------------------------------------


def child_resolve(data_path: str, out_path: str, profile_to: str | None) -> dict:
    import hashlib

    from golden_store.corpus import resolver
    from golden_store.corpus.resolver import CorpusIndex, SpanResolver

    # the code measured (the resolver may be edited between runs): sha256 of the module file
    code = hashlib.sha256(Path(resolver.__file__).read_bytes()).hexdigest()[:16]

    with open(data_path, "rb") as fh:
        data = pickle.load(fh)
    raw, quotes = data["raw"], data["quotes"]
    if profile_to:  # profile only: a subsample, no figures
        import cProfile

        index = CorpusIndex.from_raw(raw)
        res = SpanResolver(index)
        prof = cProfile.Profile()
        prof.enable()
        for q in quotes[:1000]:
            res.resolve(q)
        prof.disable()
        prof.dump_stats(profile_to)
        return {}
    pre_peak, before = _mark_before()
    t0 = time.perf_counter()
    index = CorpusIndex.from_raw(raw)
    t1 = time.perf_counter()
    build_peak, after_build = _maxrss_kib(), _status_kib("VmRSS") or 0
    resolver = SpanResolver(index)
    results = []
    perf = time.perf_counter
    t2 = perf()
    for q in quotes:
        a = perf()
        r = resolver.resolve(q)
        b = perf()
        c = r.best or (r.candidates[0] if r.candidates else None)
        results.append([r.status, b - a, c.doc_id if c else None, c.start if c else None,
                        c.end if c else None, round(c.score, 2) if c else None, len(r.candidates)])
    t3 = perf()
    peak = _maxrss_kib()
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(results, fh)
    return {"index_build_s": t1 - t0, "resolve_s": t3 - t2, "n_tokens": index.n_tokens, "resolver_sha256": code,
            "maxrss_kib": max(pre_peak, peak, build_peak), "pre_rss_kib": before,
            "rss_after_build_kib": after_build, "build_peak_kib": build_peak, "call_peak_kib": max(peak, build_peak)}


def child_baseline(data_path: str, out_path: str) -> dict:
    from rapidfuzz import fuzz

    from golden_store.core.canonical import canonical_text, canonicalize

    with open(data_path, "rb") as fh:
        data = pickle.load(fh)
    raw, quotes, sample = data["raw"], data["quotes"], data["sample"]
    t0 = time.perf_counter()
    docs = []
    for d, text in raw.items():
        c = canonical_text(text)
        low = c.lower()
        if len(low) != len(c):  # never with this corpus; keeps offsets valid if it happens
            low = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in c)
        docs.append((d, low))
    prep_s = time.perf_counter() - t0
    out = []
    perf = time.perf_counter
    for j in sample:
        # plain naive: align against every document, keep the best
        a = perf()
        q = canonical_text(quotes[j]).lower()
        best, best_d = None, None
        for d, text in docs:
            al = fuzz.partial_ratio_alignment(q, text)
            if best is None or al.score > best.score:
                best, best_d = al, d
        rs, re_ = canonicalize(raw[best_d]).to_raw(best.dest_start, best.dest_end)
        b = perf()
        # stronger naive: the best score so far is the cutoff for the next document
        cut, best2 = 0.0, None
        for d, text in docs:
            al = fuzz.partial_ratio_alignment(q, text, score_cutoff=cut)
            if al is not None and (best2 is None or al.score > best2[0]):
                best2, cut = (al.score, d), al.score
        canonicalize(raw[best2[1]])
        c = perf()
        out.append([j, b - a, c - b, best_d, rs, re_, round(best.score, 2)])
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    return {"prep_s": prep_s}


# ---- scoring -----------------------------------------------------------------------------------


def _judge(item: dict, status: str, doc, start, end) -> dict:
    """Outcome of one positive quote: located / boundary / failure class."""
    out = {"located": False, "boundary": False, "fail": None}
    if status not in ("exact", "fuzzy"):
        out["fail"] = status
        return out
    if doc != item["doc"]:
        out["fail"] = "wrong_doc"
        return out
    ts, te = item["start"], item["end"]
    overlap = max(0, min(te, end) - max(ts, start))
    out["located"] = overlap >= COVER * (te - ts)
    out["boundary"] = abs(start - ts) <= BOUNDARY_TOL and abs(end - te) <= BOUNDARY_TOL
    if not out["located"]:
        out["fail"] = "wrong_span"
    return out


def _pct(a: int, b: int) -> float | None:
    return round(100.0 * a / b, 2) if b else None


def _ms(xs: list[float]) -> dict:
    if not xs:
        return {}
    s = sorted(xs)
    return {"median_ms": round(1000 * statistics.median(s), 3),
            "p95_ms": round(1000 * s[min(len(s) - 1, int(0.95 * len(s)))], 3),
            "max_ms": round(1000 * s[-1], 3), "mean_ms": round(1000 * statistics.fmean(s), 3)}


def _clip(s: str, n: int = 160) -> str:
    s = s.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    return s if len(s) <= n else s[: n // 2 - 2] + " .. " + s[-(n // 2 - 2):]


def score(items: list[dict], results: list[list], raw: dict[str, str]) -> dict:
    pos_groups: dict[str, list[int]] = {}
    neg_groups: dict[str, list[int]] = {}
    judged = []
    for i, (it, r) in enumerate(zip(items, results)):
        status, _, doc, start, end, sc, ncand = r
        if it["doc"] is None:
            neg_groups.setdefault(it["kind"], []).append(i)
            judged.append(None)
        else:
            pos_groups.setdefault(it["kind"], []).append(i)
            judged.append(_judge(it, status, doc, start, end))

    def pos_row(idx: list[int]) -> dict:
        n = len(idx)
        st = [results[i][0] for i in idx]
        js = [judged[i] for i in idx]
        fails: dict[str, int] = {}
        for j in js:
            if j["fail"]:
                fails[j["fail"]] = fails.get(j["fail"], 0) + 1
        return {"n": n, "located_pct": _pct(sum(j["located"] for j in js), n),
                "boundary_pct": _pct(sum(j["boundary"] for j in js), n),
                "exact_status_pct": _pct(st.count("exact"), n), "fuzzy_status_pct": _pct(st.count("fuzzy"), n),
                "failures": fails}

    def neg_row(idx: list[int]) -> dict:
        n = len(idx)
        st = [results[i][0] for i in idx]
        return {"n": n, "false_match_pct": _pct(st.count("exact") + st.count("fuzzy"), n),
                "ambiguous_pct": _pct(st.count("ambiguous"), n), "unresolved_pct": _pct(st.count("unresolved"), n),
                "max_best_score": max((results[i][5] or 0) for i in idx) if idx else None}

    all_pos = [i for v in pos_groups.values() for i in v]
    all_neg = [i for v in neg_groups.values() for i in v]
    perturbed = [i for k, v in pos_groups.items() if k != "verbatim" for i in v]
    by_kind = {k: pos_row(pos_groups[k]) for k in ("verbatim", *PERTURBATIONS) if k in pos_groups}
    # perturbation sub-variants (e.g. which case change, how many typos)
    subs: dict[str, dict] = {}
    for k in PERTURBATIONS:
        groups: dict[str, list[int]] = {}
        for i in pos_groups.get(k, []):
            groups.setdefault(items[i]["sub"], []).append(i)
        subs[k] = {s: {"n": len(v), "located_pct": _pct(sum(judged[i]["located"] for i in v), len(v))}
                   for s, v in sorted(groups.items())}
    # by quote length
    by_len: dict[str, list[int]] = {}
    for i in all_pos:
        w = items[i]["words"]
        b = "8-12" if w <= 12 else "13-20" if w <= 20 else "21-40"
        by_len.setdefault(b, []).append(i)
    lat = {"all": _ms([r[1] for r in results])}
    for s in ("exact", "fuzzy", "ambiguous", "unresolved"):
        xs = [r[1] for r in results if r[0] == s]
        if xs:
            lat[s] = {"n": len(xs), **_ms(xs)}
    lat["negatives"] = _ms([results[i][1] for i in all_neg])

    fails = []
    for i in all_pos:
        j = judged[i]
        if j["fail"]:
            it, r = items[i], results[i]
            ts, te = it["start"], it["end"]
            got = raw[r[2]][r[3]:r[4]] if r[2] is not None and r[3] is not None else None
            fails.append({"kind": it["kind"], "sub": it["sub"], "words": it["words"], "fail": j["fail"],
                          "status": r[0], "score": r[5], "n_candidates": r[6],
                          "quote": _clip(it["quote"]), "truth": _clip(raw[it["doc"]][ts:te]),
                          "truth_span": [it["doc"], ts, te],
                          "returned": _clip(got) if got is not None else None,
                          "returned_span": [r[2], r[3], r[4]] if r[2] is not None else None})
    false_matches = []
    for i in all_neg:
        r = results[i]
        if r[0] in ("exact", "fuzzy", "ambiguous"):
            got = raw[r[2]][r[3]:r[4]] if r[2] is not None else None
            false_matches.append({"kind": items[i]["kind"], "status": r[0], "score": r[5],
                                  "quote": _clip(items[i]["quote"]), "returned": _clip(got) if got else None})
    n_pos, n_neg = len(all_pos), len(all_neg)
    neg_st = [results[i][0] for i in all_neg]
    return {
        "positives": n_pos, "negatives_n": n_neg,
        "located_rate": round(sum(judged[i]["located"] for i in all_pos) / n_pos, 5) if n_pos else None,
        "boundary_rate": round(sum(judged[i]["boundary"] for i in all_pos) / n_pos, 5) if n_pos else None,
        "located_verbatim_rate": round(sum(judged[i]["located"] for i in pos_groups.get("verbatim", [])) /
                                       max(1, len(pos_groups.get("verbatim", []))), 5),
        "located_perturbed_rate": round(sum(judged[i]["located"] for i in perturbed) / max(1, len(perturbed)), 5),
        "false_match_rate": round((neg_st.count("exact") + neg_st.count("fuzzy")) / n_neg, 5) if n_neg else None,
        "negative_ambiguous_rate": round(neg_st.count("ambiguous") / n_neg, 5) if n_neg else None,
        "by_kind": by_kind, "perturbation_variants": subs,
        "by_length": {b: pos_row(v) for b, v in sorted(by_len.items(), key=lambda kv: int(kv[0].split("-")[0]))},
        "negatives": {**{k: neg_row(v) for k, v in neg_groups.items()}, "all": neg_row(all_neg)},
        "latency": lat, "failures": fails, "false_matches": false_matches, "judged": judged,
    }


# ---- batch mode: `golden resolve --corpus FOLDER` end to end (issue 41 item 2) ----------------
#
# ``--batch``: the folder case a team meets on day one. One corpus folder (``--mb`` MiB of
# ``.md`` files), ``--quotes`` positives + ``--negatives`` negatives drawn as above, shuffled,
# in one quotes JSONL; then, in each of ``--reps`` rounds (the order of the codes rotated per
# round), fresh processes each:
#
# * **baseline**: ``golden resolve`` with the code of ``--baseline-rev`` (main before issue
#   41, c33c183; a detached git worktree made for the run and removed after it, or
#   ``--baseline-dir``), a temporary index per run as that code does;
# * **new, cold**: ``golden resolve`` with this checkout, the folder's kept index removed
#   first (it is made and kept: what a first run costs);
# * **new, warm**: the same again, the kept index opened (what every later run costs).
#
# Wall time from the parent's ``subprocess.run`` to the child's exit (interpreter start-up,
# reading the folder, indexing, resolving, writing the output) and the child's CPU seconds
# (user + system, ``/usr/bin/time``; the steadier figure on a shared machine) and peak RSS.
# Medians over the rounds; ratios baseline/new.
#
# **Naive exact-first scan** (one child): every document's canonical text (prepared before
# timing); per quote, its canonical form is looked for with ``str.find`` in every document
# (one place: exact, several: ambiguous); a quote found nowhere is aligned with
# ``rapidfuzz.fuzz.partial_ratio_alignment`` against every lower-cased document, the best
# score so far as the cutoff, and is fuzzy when the best reaches 90 (raw offsets through one
# ``canonicalize``). The exact pass runs on every quote; the fuzzy pass (~1 s per quote
# here) on ``--naive-sample`` of the quotes the exact pass did not find, and its total is
# that sample's mean times their number. Its accuracy counts are the exact pass's on every
# quote plus the sample's, scaled.
#
# Accuracy of each run (the judge of the default mode): located (exact or fuzzy, the true
# document, >= 80% of the true raw span), false matches (a negative exact or fuzzy),
# ambiguous; and every new run's output is compared line by line with the baseline's.

BATCH_BASELINE = "c33c183"  # main before issue 41
TIME_BIN = "/usr/bin/time"


def _golden_resolve(code_root: Path, folder: Path, quotes: Path, out: Path, profile_to: Path | None = None) -> dict:
    import subprocess

    env = dict(os.environ)
    env["PYTHONPATH"] = str(code_root)
    env.pop("GOLDEN_DB", None)
    py = [sys.executable] + (["-m", "cProfile", "-o", str(profile_to)] if profile_to else [])
    cmd = [*py, "-m", "annotator.cli", "resolve", "--corpus", str(folder), "--quotes", str(quotes), "--out", str(out)]
    timed = os.path.exists(TIME_BIN)
    if timed:
        cmd = [TIME_BIN, "-f", "@@%U %S %M", *cmd]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(code_root))
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"golden resolve ({code_root}) failed:\n{proc.stderr[-3000:]}")
    cpu = rss = None
    if timed:
        line = [ln for ln in proc.stderr.splitlines() if ln.startswith("@@")][-1]
        u, s, m = line[2:].split()
        cpu, rss = float(u) + float(s), int(m) / 1024
    return {"wall_s": wall, "cpu_s": cpu, "peak_mib": rss}


def _judge_lines(items: list[dict], lines: list[dict]) -> dict:
    located = false = amb_pos = amb_neg = npos = nneg = 0
    for it, r in zip(items, lines):
        if it["doc"] is None:
            nneg += 1
            false += r["status"] in ("exact", "fuzzy")
            amb_neg += r["status"] == "ambiguous"
        else:
            npos += 1
            amb_pos += r["status"] == "ambiguous"
            doc = r["doc_id"] + ".md" if r["doc_id"] is not None else None
            located += _judge(it, r["status"], doc, r["start"], r["end"])["located"]
    return {"positives": npos, "negatives": nneg, "located": located, "false_matches": false,
            "ambiguous_positives": amb_pos, "ambiguous_negatives": amb_neg,
            "statuses": {s: sum(r["status"] == s for r in lines) for s in STATUSES_ALL}}


STATUSES_ALL = ("exact", "fuzzy", "ambiguous", "unresolved")


def child_naive(data_path: str, out_path: str, sample: int, seed: int) -> dict:
    """The naive exact-first scan (see the batch-mode notes); writes its per-quote answers."""
    from rapidfuzz import fuzz

    from golden_store.core.canonical import canonical_text, canonicalize

    with open(data_path, "rb") as fh:
        data = pickle.load(fh)
    raw, quotes = data["raw"], data["quotes"]
    ids = sorted(raw)
    canon = [canonical_text(raw[d]) for d in ids]
    low = [c.lower() if len(c.lower()) == len(c) else "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in c)
           for c in canon]
    perf = time.perf_counter
    answers: list[dict | None] = [None] * len(quotes)
    exact_times, missed = [], []
    t0 = perf()
    for j, q in enumerate(quotes):
        a = perf()
        cq = canonical_text(q)
        places = []
        for k, text in enumerate(canon):
            i = text.find(cq)
            while i != -1 and len(places) < 2:
                places.append((k, i))
                i = text.find(cq, i + 1)
        if len(places) == 1:
            k, i = places[0]
            rs, re_ = canonicalize(raw[ids[k]]).to_raw(i, i + len(cq))
            answers[j] = {"status": "exact", "doc_id": ids[k][:-3], "start": rs, "end": re_}
        elif places:
            answers[j] = {"status": "ambiguous", "doc_id": None, "start": None, "end": None}
        else:
            missed.append(j)
        exact_times.append(perf() - a)
    exact_s = perf() - t0
    rng = random.Random(seed)  # a quarter of the sample from the negatives among them, the rest positives
    negative = set(data["negatives"])
    neg = [j for j in missed if j in negative]
    pos = [j for j in missed if j not in negative]
    k_neg = min(len(neg), max(1, sample // 4) if neg else 0)
    picked = sorted(rng.sample(neg, k=k_neg) + rng.sample(pos, k=min(len(pos), sample - k_neg)))
    fuzzy_times = []
    for j in picked:
        a = perf()
        cq = canonical_text(quotes[j]).lower()
        cut, best = 0.0, None
        for k, text in enumerate(low):
            al = fuzz.partial_ratio_alignment(cq, text, score_cutoff=cut)
            if al is not None and (best is None or al.score > best[0].score):
                best, cut = (al, k), al.score
        if best is not None and best[0].score >= THRESHOLD:
            al, k = best
            rs, re_ = canonicalize(raw[ids[k]]).to_raw(al.dest_start, al.dest_end)
            answers[j] = {"status": "fuzzy", "doc_id": ids[k][:-3], "start": rs, "end": re_}
        else:
            answers[j] = {"status": "unresolved", "doc_id": None, "start": None, "end": None}
        fuzzy_times.append(perf() - a)
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump({"answers": answers, "missed": missed, "sample": picked}, fh)
    # the total: the exact pass measured, the fuzzy pass as the sample's mean per quote, each
    # of positives and negatives weighted by how many of them the exact pass did not find
    mean_pos = statistics.fmean([t for j, t in zip(picked, fuzzy_times) if j not in negative] or [0.0])
    mean_neg = statistics.fmean([t for j, t in zip(picked, fuzzy_times) if j in negative] or [mean_pos])
    return {"exact_pass_s": exact_s, "exact_median_ms": 1000 * statistics.median(exact_times),
            "fuzzy_sample": len(picked), "fuzzy_median_s": statistics.median(fuzzy_times) if fuzzy_times else 0.0,
            "fuzzy_mean_s": statistics.fmean(fuzzy_times) if fuzzy_times else 0.0, "not_found_exactly": len(missed),
            "estimated_total_s": exact_s + len(pos) * mean_pos + len(neg) * mean_neg}


def _baseline_tree(args, work: Path):
    """(code root of the baseline, a clean-up to call at the end)."""
    import subprocess

    if args.baseline_dir:
        return Path(args.baseline_dir), lambda: None
    tree = work / "baseline-tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.baseline_rev], cwd=ROOT, check=True,
                   capture_output=True)

    def clean() -> None:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    return tree, clean


def batch_main(args) -> int:
    import shutil

    rng = random.Random(args.seed)
    ws = WordStream(make_vocab(rng), args.seed)
    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench_spans_batch-")
        work = Path(tmp.name)
    cleanup = None
    try:
        log(f"batch: generating a {args.mb:g} MiB folder, {args.quotes} quotes + {args.negatives} negatives")
        raw = generate_corpus(rng, ws, args.mb)
        qs = make_quotes(rng, ws, raw, args.quotes, args.negatives)
        items = qs["positives"] + qs["negatives"]
        rng.shuffle(items)
        folder = work / "corpus"
        folder.mkdir(exist_ok=True)
        for d, t in raw.items():
            (folder / d).write_bytes(t.encode("utf-8"))
        qfile = work / "quotes.jsonl"
        qfile.write_text("".join(json.dumps({"quote_id": f"q{i}", "quote": it["quote"]}, ensure_ascii=False) + "\n"
                                 for i, it in enumerate(items)), encoding="utf-8")
        data_path = work / "data.pkl"
        with open(data_path, "wb") as fh:
            pickle.dump({"raw": raw, "quotes": [it["quote"] for it in items],
                         "negatives": [j for j, it in enumerate(items) if it["doc"] is None]}, fh,
                        protocol=pickle.HIGHEST_PROTOCOL)
        base_root = None
        if args.baseline_rev or args.baseline_dir:
            base_root, cleanup = _baseline_tree(args, work)
        kept = folder.with_name(folder.name + ".golden-index")
        codes = (["baseline"] if base_root else []) + ["new_cold", "new_warm"]
        runs: dict[str, list[dict]] = {c: [] for c in codes}
        outputs: dict[str, list[dict]] = {}
        for r in range(args.reps):
            order = codes[r % len(codes):] + codes[:r % len(codes)]
            if "new_warm" in order and order.index("new_warm") < order.index("new_cold") and not kept.exists():
                order.remove("new_warm")
                order.insert(order.index("new_cold") + 1, "new_warm")  # warm needs the index a cold run keeps
            for code in order:
                out = work / f"out-{code}.jsonl"
                if code == "new_cold":
                    shutil.rmtree(kept, ignore_errors=True)
                root = base_root if code == "baseline" else ROOT
                assert root is not None
                m = _golden_resolve(root, folder, qfile, out)
                runs[code].append(m)
                lines = [json.loads(ln) for ln in out.read_text(encoding="utf-8").splitlines()]
                if code in outputs and outputs[code] != lines:
                    raise SystemExit(f"{code}: round {r + 1} wrote other answers than round 1")
                outputs[code] = lines
                log(f"  round {r + 1} {code:<9} wall {m['wall_s']:6.2f} s  cpu {m['cpu_s']} s  peak {m['peak_mib']} MiB")
        log(f"naive exact-first scan: every quote's exact pass, fuzzy pass on {args.naive_sample} quotes")
        nout = work / "naive.json"
        naive = run_child("naive", data=data_path, out=nout, sample=args.naive_sample, seed=args.seed)
        ndata = json.loads(nout.read_text(encoding="utf-8"))
        nlines = ndata["answers"]
        # accuracy: every run's; the naive scan's over the quotes it answered, the sample scaled
        acc = {c: _judge_lines(items, outputs[c]) for c in codes}
        answered = [j for j, a in enumerate(nlines) if a is not None]
        nacc = _judge_lines([items[j] for j in answered], [nlines[j] for j in answered])
        in_sample = _judge_lines([items[j] for j in ndata["sample"]], [nlines[j] for j in ndata["sample"]])
        exact_only = [j for j in answered if j not in set(ndata["sample"])]
        eacc = _judge_lines([items[j] for j in exact_only], [nlines[j] for j in exact_only])
        missed_pos = sum(items[j]["doc"] is not None for j in ndata["missed"])
        missed_neg = len(ndata["missed"]) - missed_pos
        s_pos = max(1, in_sample["positives"])
        s_neg = max(1, in_sample["negatives"])
        nacc["estimated"] = {  # the sample's rates scaled to every quote the exact pass missed
            "located": round(eacc["located"] + in_sample["located"] * missed_pos / s_pos),
            "false_matches": round(in_sample["false_matches"] * missed_neg / s_neg),
            "ambiguous_positives": eacc["ambiguous_positives"], "ambiguous_negatives": eacc["ambiguous_negatives"]}
        same = {c: outputs[c] == outputs["baseline"] for c in codes if c != "baseline" and "baseline" in outputs}
        med = {c: {k: round(statistics.median(m[k] for m in runs[c]), 3) for k in ("wall_s", "cpu_s", "peak_mib")
                   if runs[c][0][k] is not None} for c in codes}
        ratios = {}
        for c in ("new_cold", "new_warm"):
            ratios[c] = {"vs_naive_wall": round(naive["estimated_total_s"] / med[c]["wall_s"], 1)}
            if "baseline" in med:
                ratios[c]["vs_baseline_wall"] = round(med["baseline"]["wall_s"] / med[c]["wall_s"], 2)
                if "cpu_s" in med[c]:
                    ratios[c]["vs_baseline_cpu"] = round(med["baseline"]["cpu_s"] / med[c]["cpu_s"], 2)
        if "baseline" in med:
            ratios["baseline"] = {"vs_naive_wall": round(naive["estimated_total_s"] / med["baseline"]["wall_s"], 1)}
        result = {
            "bench": "spans-batch", "date": date.today().isoformat(),
            "params": {"mb": args.mb, "quotes": args.quotes, "negatives": args.negatives, "reps": args.reps,
                       "naive_sample": args.naive_sample, "seed": args.seed, "baseline_rev": args.baseline_rev},
            "code": {"git_head": git_head(ROOT)}, "machine": {"nproc": os.cpu_count(), "load1": os.getloadavg()[0]},
            "corpus": {"documents": len(raw), "bytes_utf8": sum(len(t.encode("utf-8")) for t in raw.values())},
            "runs": runs, "median": med, "naive": naive, "ratios": ratios,
            "accuracy": {**acc, "naive": nacc}, "identical_to_baseline": same,
        }
        if args.profile:
            profs = {}
            for c in codes:
                if c == "new_cold":
                    shutil.rmtree(kept, ignore_errors=True)
                pf = work / f"{c}.prof"
                _golden_resolve(base_root if c == "baseline" else ROOT, folder, qfile, work / "prof.jsonl", pf)
                profs[c] = pf
        if not args.json:
            _print_batch(result)
            if args.profile:
                for c, pf in profs.items():
                    print_profile(str(pf), f"golden resolve, {c}", 14)
        print(json.dumps(result))
    finally:
        if cleanup is not None:
            cleanup()
        if tmp is not None:
            tmp.cleanup()
    return 0


def _print_batch(r: dict) -> None:
    c = r["corpus"]
    print(f"\ngolden resolve --corpus FOLDER: {c['documents']} files, {c['bytes_utf8'] / 2**20:.1f} MiB, "
          f"{r['params']['quotes']} quotes + {r['params']['negatives']} negatives; {r['params']['reps']} rounds, "
          f"nproc {r['machine']['nproc']}, load {r['machine']['load1']:.1f}")
    print(f"{'code':<22}{'wall s':>9}{'cpu s':>9}{'peak MiB':>10}{'located':>9}{'false':>7}{'ambig':>7}  ratios")
    n = r["naive"]
    na = r["accuracy"]["naive"]["estimated"]
    print(f"{'naive exact-first':<22}{n['estimated_total_s']:>9.1f}{'':>9}{'':>10}{na['located']:>9}"
          f"{na['false_matches']:>7}{na['ambiguous_positives'] + na['ambiguous_negatives']:>7}  "
          f"(exact pass {n['exact_pass_s']:.1f} s; fuzzy {n['fuzzy_mean_s']:.2f} s/quote x {n['not_found_exactly']})")
    for code, m in r["median"].items():
        a = r["accuracy"][code]
        print(f"{code:<22}{m['wall_s']:>9.2f}{m.get('cpu_s', float('nan')):>9.2f}{m.get('peak_mib', float('nan')):>10.0f}"
              f"{a['located']:>9}{a['false_matches']:>7}{a['ambiguous_positives'] + a['ambiguous_negatives']:>7}  "
              f"{r['ratios'].get(code, {})}")
    print(f"identical answers to the baseline: {r['identical_to_baseline']}")


# ---- parent ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=20.0, help="corpus size, MiB of raw UTF-8 text")
    ap.add_argument("--quotes", type=int, default=10_000, help="positive quotes (70%% verbatim)")
    ap.add_argument("--negatives", type=int, default=1_000, help="quotes that are not in the corpus")
    ap.add_argument("--baseline-sample", type=int, default=30, help="quotes aligned by the naive baseline")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--json", action="store_true", help="print only the JSON result line")
    ap.add_argument("--examples", type=int, default=3, help="failure examples printed per kind")
    ap.add_argument("--profile", action="store_true",
                    help="also cProfile the resolver on 1,000 quotes in an extra child and print the top functions")
    ap.add_argument("--keep", metavar="DIR", help="write the data and results to DIR and keep them")
    ap.add_argument("--batch", action="store_true",
                    help="golden resolve --corpus FOLDER end to end: baseline code, this code cold and warm, and "
                         "the naive exact-first scan (defaults then: --mb 25 --quotes 2000 --negatives 200)")
    ap.add_argument("--reps", type=int, default=3, help="--batch: rounds of the golden resolve runs")
    ap.add_argument("--naive-sample", type=int, default=20, help="--batch: quotes the naive fuzzy pass aligns")
    ap.add_argument("--baseline-rev", default=BATCH_BASELINE, help="--batch: git revision of the baseline ('' none)")
    ap.add_argument("--baseline-dir", help="--batch: an existing checkout of the baseline instead of a worktree")
    ap.add_argument("--_child", dest="op", choices=["resolve", "baseline", "naive"], help=argparse.SUPPRESS)
    ap.add_argument("--sample", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--profile-to", help=argparse.SUPPRESS)
    batch_defaults = {"mb": 25.0, "quotes": 2000, "negatives": 200}
    args = ap.parse_args(argv)
    if args.batch and not args.op:
        given = set(argv if argv is not None else sys.argv[1:])
        for k, v in batch_defaults.items():
            if f"--{k}" not in given:
                setattr(args, k, v)
        set_quiet(args.json)
        return batch_main(args)
    if args.op == "naive":
        print(json.dumps(child_naive(args.data, args.out, args.sample, args.seed)))
        return 0
    if args.op:
        fn = child_resolve if args.op == "resolve" else child_baseline
        res = fn(args.data, args.out, args.profile_to) if args.op == "resolve" else fn(args.data, args.out)
        print(json.dumps(res))
        return 0
    if args.mb <= 0 or args.quotes < 1 or args.negatives < 0 or args.baseline_sample < 0:
        ap.error("--mb and --quotes must be > 0, --negatives and --baseline-sample >= 0")
    set_quiet(args.json)

    import numpy
    import rapidfuzz

    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench_spans-")
        work = Path(tmp.name)
    try:
        t0 = time.perf_counter()
        rng = random.Random(args.seed)
        vocab = make_vocab(rng)
        ws = WordStream(vocab, args.seed)
        log(f"generating: {args.mb:g} MiB corpus, {args.quotes} quotes, {args.negatives} negatives (seed {args.seed})")
        raw = generate_corpus(rng, ws, args.mb)
        t_corpus = time.perf_counter() - t0
        qs = make_quotes(rng, ws, raw, args.quotes, args.negatives)
        items = qs["positives"] + qs["negatives"]
        rng.shuffle(items)
        sample = sorted(rng.sample(range(len(items)), k=min(args.baseline_sample, len(items))))
        gen_s = time.perf_counter() - t0
        corpus = {"documents": len(raw), "chars": sum(map(len, raw.values())),
                  "bytes_utf8": sum(len(t.encode("utf-8")) for t in raw.values()),
                  "vocabulary": len(vocab), "words": qs["corpus_words"] - len(raw)}
        log(f"  corpus {corpus['documents']} docs, {corpus['bytes_utf8'] / 2**20:.1f} MiB in {t_corpus:.1f} s; "
            f"quotes in {gen_s - t_corpus:.1f} s (canonicalize {qs['canon_s']} s, shingles {qs['shingles_s']} s); "
            f"rejected draws {qs['rejected_draws']}")
        data_path = work / "data.pkl"
        with open(data_path, "wb") as fh:
            pickle.dump({"raw": raw, "quotes": [it["quote"] for it in items], "sample": sample}, fh,
                        protocol=pickle.HIGHEST_PROTOCOL)

        log("resolver: index + resolve all quotes in a fresh child")
        rout = work / "resolve.json"
        rs = run_child("resolve", data=data_path, out=rout)
        results = json.loads(rout.read_text(encoding="utf-8"))
        n = len(items)
        log(f"  index {rs['index_build_s']:.2f} s, resolve {rs['resolve_s']:.2f} s ({n / rs['resolve_s']:.0f} quotes/s)")

        base = None
        if sample:
            log(f"baseline: naive alignment against all {len(raw)} documents, {len(sample)} quotes")
            bout = work / "baseline.json"
            bmeta = run_child("baseline", data=data_path, out=bout)
            bres = json.loads(bout.read_text(encoding="utf-8"))
            b_plain = [r[1] for r in bres]
            b_cut = [r[2] for r in bres]
            ours = [results[j][1] for j in sample]
            located = false = npos = nneg = 0
            for j, _, _, d, s, e, sc in bres:
                it = items[j]
                status = "fuzzy" if sc >= THRESHOLD else "unresolved"
                if it["doc"] is None:
                    nneg += 1
                    false += status == "fuzzy"
                else:
                    npos += 1
                    located += _judge(it, status, d, s, e)["located"]
            ours_located = sum(judged["located"] for j in sample
                               if items[j]["doc"] is not None
                               for judged in [_judge(items[j], results[j][0], *results[j][2:5])])
            base = {
                "sample": len(sample), "positives": npos, "negatives": nneg,
                "naive_median_ms": round(1000 * statistics.median(b_plain), 2),
                "naive_cutoff_median_ms": round(1000 * statistics.median(b_cut), 2),
                "resolver_median_ms": round(1000 * statistics.median(ours), 3),
                "baseline_ratio": round(statistics.median(b_plain) / statistics.median(ours), 1),
                "baseline_ratio_mean": round(statistics.fmean(b_plain) / statistics.fmean(ours), 1),
                "baseline_cutoff_ratio": round(statistics.median(b_cut) / statistics.median(ours), 1),
                "naive_located": located, "naive_false_matches": false,
                "resolver_located": ours_located,
                "naive_prep_s": round(bmeta["prep_s"], 2),
            }
            log(f"  naive {base['naive_median_ms']:.0f} ms/quote, with cutoff {base['naive_cutoff_median_ms']:.0f} ms, "
                f"resolver {base['resolver_median_ms']:.2f} ms: x{base['baseline_ratio']}")

        sc = score(items, results, raw)
        total_s = rs["index_build_s"] + rs["resolve_s"]
        result = {
            "bench": "spans",
            "date": date.today().isoformat(),
            "params": {"mb": args.mb, "quotes": args.quotes, "negatives": args.negatives,
                       "baseline_sample": args.baseline_sample, "seed": args.seed, "threshold": THRESHOLD},
            "code": {"git_head": git_head(ROOT), "resolver_sha256_16": rs["resolver_sha256"]},
            "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                        "numpy": numpy.__version__, "rapidfuzz": rapidfuzz.__version__,
                        "platform": platform.platform()},
            "corpus": {**corpus, "index_tokens": rs["n_tokens"]},
            "generation_s": round(gen_s, 1),
            "rejected_draws": qs["rejected_draws"], "truth_mismatches": qs["truth_mismatches"],
            "located_rate": sc["located_rate"], "boundary_rate": sc["boundary_rate"],
            "located_verbatim_rate": sc["located_verbatim_rate"],
            "located_perturbed_rate": sc["located_perturbed_rate"],
            "false_match_rate": sc["false_match_rate"], "negative_ambiguous_rate": sc["negative_ambiguous_rate"],
            "quotes_per_s": round(n / rs["resolve_s"], 1),
            "resolve_s": round(rs["resolve_s"], 3),
            "index_build_s": round(rs["index_build_s"], 3),
            "total_s": round(total_s, 3),
            "peak_rss_mib": round(rs["maxrss_kib"] / 1024, 1),
            "rss_before_mib": round(rs["pre_rss_kib"] / 1024, 1),
            "rss_after_build_mib": round(rs["rss_after_build_kib"] / 1024, 1),
            "rss_growth_mib": round((rs["call_peak_kib"] - rs["pre_rss_kib"]) / 1024, 1),
            "baseline_ratio": base["baseline_ratio"] if base else None,
            "baseline": base,
            "by_kind": sc["by_kind"], "perturbation_variants": sc["perturbation_variants"],
            "by_length": sc["by_length"], "negatives": sc["negatives"], "latency": sc["latency"],
            "failures_n": len(sc["failures"]), "failures": sc["failures"][:40],
            "false_matches": sc["false_matches"][:20],
            "targets": {"located_rate": ">= 0.99", "false_match_rate": "<= 0.005",
                        "resolve_s_11000": "< 15 s", "baseline_ratio": ">= 100"},
            "rss_metric": "peak_rss_mib = VmHWM of the fresh child that built the index and resolved (whole "
                          "process: interpreter, numpy, rapidfuzz, the raw corpus it was given); rss_growth_mib = "
                          "peak during build+resolve - VmRSS just before",
        }

        if args.profile:
            prof = str(work / "resolve.prof")
            run_child("resolve", data=data_path, out=work / "unused.json", profile_to=prof)

        if not args.json:
            _print_report(result, sc, args.examples)
            if args.profile:
                print_profile(prof, "resolve (1,000 quotes)")
            print()
        print(json.dumps(result, sort_keys=False))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


def _print_report(r: dict, sc: dict, n_examples: int) -> None:
    c = r["corpus"]
    print(f"\nQuote -> span benchmark: {c['documents']} docs, {c['bytes_utf8'] / 2**20:.1f} MiB "
          f"({c['index_tokens']:,} index tokens), {r['params']['quotes']} quotes + {r['params']['negatives']} "
          f"negatives; nproc {r['machine']['nproc']}, Python {r['machine']['python']}, "
          f"rapidfuzz {r['machine']['rapidfuzz']}")
    print(f"index build {r['index_build_s']:.2f} s; resolve {r['resolve_s']:.2f} s "
          f"({r['quotes_per_s']:.0f} quotes/s); total {r['total_s']:.2f} s; peak RSS {r['peak_rss_mib']:.0f} MiB "
          f"(before {r['rss_before_mib']:.0f}, after build {r['rss_after_build_mib']:.0f}, growth "
          f"{r['rss_growth_mib']:.0f})")
    hdr = f"{'kind':<13}{'n':>7}{'located %':>11}{'bounds %':>10}{'exact %':>9}{'fuzzy %':>9}  failures"
    print(hdr)
    print("-" * (len(hdr) + 20))
    for k, row in r["by_kind"].items():
        print(f"{k:<13}{row['n']:>7}{row['located_pct']:>11.2f}{row['boundary_pct']:>10.2f}"
              f"{row['exact_status_pct']:>9.2f}{row['fuzzy_status_pct']:>9.2f}  {row['failures'] or ''}")
    print(f"{'ALL':<13}{sc['positives']:>7}{100 * r['located_rate']:>11.2f}{100 * r['boundary_rate']:>10.2f}")
    print("by length (words): " + ", ".join(f"{b}: {v['located_pct']}% of {v['n']}" for b, v in r["by_length"].items()))
    for k, subs in r["perturbation_variants"].items():
        print(f"  {k}: " + ", ".join(f"{s} {v['located_pct']}% of {v['n']}" for s, v in subs.items()))
    print("negatives: " + "; ".join(
        f"{k}: n {v['n']}, false {v['false_match_pct']}%, ambiguous {v['ambiguous_pct']}%, max score {v['max_best_score']}"
        for k, v in r["negatives"].items()))
    print("latency: " + "; ".join(f"{k} {v}" for k, v in r["latency"].items()))
    b = r["baseline"]
    if b:
        print(f"baseline on {b['sample']} quotes: naive {b['naive_median_ms']:.0f} ms/quote (with running cutoff "
              f"{b['naive_cutoff_median_ms']:.0f} ms), resolver {b['resolver_median_ms']:.2f} ms -> "
              f"x{b['baseline_ratio']} (x{b['baseline_cutoff_ratio']} vs cutoff); located: naive "
              f"{b['naive_located']}/{b['positives']}, resolver {b['resolver_located']}/{b['positives']}; "
              f"naive false matches {b['naive_false_matches']}/{b['negatives']}")
    shown: dict[str, int] = {}
    if sc["failures"]:
        print(f"\n{len(sc['failures'])} positives not located; examples:")
    for f in sc["failures"]:
        if shown.get(f["kind"], 0) >= n_examples:
            continue
        shown[f["kind"]] = shown.get(f["kind"], 0) + 1
        print(f"- [{f['kind']} {f['sub']}, {f['words']} words] {f['fail']} (status {f['status']}, score {f['score']}, "
              f"{f['n_candidates']} candidates)\n    quote:    {f['quote']!r}\n    truth:    {f['truth']!r} "
              f"{f['truth_span']}\n    returned: {f['returned']!r} {f['returned_span']}")
    for f in sc["false_matches"][:n_examples * 2]:
        print(f"- false match [{f['kind']}] {f['status']} score {f['score']}\n    quote:    {f['quote']!r}\n"
              f"    returned: {f['returned']!r}")


if __name__ == "__main__":
    sys.exit(main())
