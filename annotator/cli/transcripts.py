"""Failure transcripts: import, sample, summary."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli.common import _print_json, _Progress, _store, identity


def cmd_transcripts_import(args: argparse.Namespace) -> int:
    from annotator import transcripts
    from golden_store.core.textin import read_text

    read_text(args.file)  # the importers' one text rule, with the line of a bad byte, before the import reads it

    n = transcripts.import_file(_store(args), identity.cli_user(), args.file, progress=_Progress("transcripts"))
    print(f"Imported {n} transcript(s).")
    return 0


def cmd_transcripts_sample(args: argparse.Namespace) -> int:
    from annotator import transcripts

    store, user = _store(args), identity.cli_user()
    draw_id, items = transcripts.draw(store, user, args.n, args.seed)
    rows = [transcripts.transcript(store, user, it) for it in items]
    if args.json:
        _print_json({"draw_id": draw_id, "seed": args.seed, "items": [
            {k: r[k] for k in ("item_id", "evaluation_id", "query_id", "trial", "stratum", "source", "failure_type",
                               "question", "in_golden_set", "trace_id")} for r in rows]})
    elif not rows:
        print("No unreviewed failure left to draw.")
    for r in rows if not args.json else []:
        print(f"{r['item_id']}  [{r['stratum']}]  {r['failure_type'] or '-'}  {r['question'][:80]}")
    return 0


def cmd_transcripts_summary(args: argparse.Namespace) -> int:
    from annotator import transcripts

    rows = transcripts.summary(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
        return 0
    for r in rows:
        rate = "-" if r["grader_failure_rate"] is None else f"{r['grader_failure_rate']:.2f}"
        print(f"{r['stratum']:<14} failures {r['failures']:>4}  reviewed {r['reviewed']:>4}  grader-failure rate "
              f"{rate}  headroom {r['headroom']:.3f}" + ("  SATURATED" if r["saturated"] else ""))
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    tr = sub.add_parser("transcripts", help="failure transcripts").add_subparsers(dest="transcripts_cmd",
                                                                                 required=True, metavar="CMD")
    ti = add("import", cmd_transcripts_import, "import evaluation transcripts (JSONL), all or nothing", tr)
    ti.add_argument("file")
    tsm = add("sample", cmd_transcripts_sample, "draw failures to review, stratified, reproducible with --seed; "
                                                 "draws do not repeat until the failures are exhausted", tr)
    tsm.add_argument("--n", type=int, default=10)
    tsm.add_argument("--seed", type=int, default=0)
    add("summary", cmd_transcripts_summary, "per stratum: failures, reviewed, grader-failure rate, headroom", tr)
