"""Evidence spans outside the store: resolve quotes, span survival across parsers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from annotator.cli.common import _print_json, _Progress, _vdir


def cmd_resolve(args: argparse.Namespace) -> int:
    from golden_store.offline_resolution import resolve_file

    counts = resolve_file(Path(args.corpus), Path(args.quotes), Path(args.out), threshold=args.threshold,
                          progress=_Progress("resolve", "quotes"))
    total = sum(counts.values())
    print(f"{total} quotes: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" -> {args.out}",
          file=sys.stderr)
    if args.json:
        _print_json(counts)
    return 0


def cmd_survival(args: argparse.Namespace) -> int:
    from golden_store.offline_resolution import read_text_folder, span_survival
    from golden_store.versions import load_version

    version = load_version(args.version, _vdir(args))
    rep = span_survival(version, read_text_folder(Path(args.parsed)), threshold=args.threshold)
    if args.json:
        _print_json(rep)
        return 0
    print(f"span survival of {rep['version']} in {args.parsed} (fuzzy threshold {rep['threshold']:g})")
    print(f"{'stratum':<12} {'spans':>6} {'exact':>7} {'+fuzzy':>7} {'lost':>7}")
    for name, r in [*rep["strata"].items(), ("ALL", rep["overall"])]:
        print(f"{name:<12} {r['spans']:>6} {r['exact']:>7.3f} {r['exact_or_fuzzy']:>7.3f} {r['lost']:>7.3f}")
    if rep["documents_missing_from_parse"]:
        print("documents missing from the parse: " + ", ".join(rep["documents_missing_from_parse"]))
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    r = add("resolve", cmd_resolve, "resolve quotes (JSONL) to corpus spans")
    r.add_argument("--corpus", required=True, help="folder of .txt/.md files (doc id = file stem) or a store file")
    r.add_argument("--quotes", required=True, help='JSONL: {"quote_id", "quote", "doc_id"?} per line')
    r.add_argument("--out", required=True, help="JSONL output, one line per quote")
    r.add_argument("--threshold", type=float, default=90.0, help="fuzzy score threshold (default 90)")
    sv_ = add("survival", cmd_survival, "span survival of a version's evidence in another parser's output")
    sv_.add_argument("--version", required=True)
    sv_.add_argument("--parsed", required=True, help="folder of parsed .txt/.md files (doc id = file stem)")
    sv_.add_argument("--threshold", type=float, default=90.0)
