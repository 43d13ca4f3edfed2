"""Transcripts: import, sample (draw), summary, the judge check."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli.common import _print_json, _Progress, _store, identity


def cmd_transcripts_import(args: argparse.Namespace) -> int:
    from annotator.evaluation import transcripts
    from golden_store.core.textin import read_text

    read_text(args.file)  # the importers' one text rule, with the line of a bad byte, before the import reads it

    n = transcripts.import_file(_store(args), identity.cli_user(), args.file, progress=_Progress("reading transcripts", "transcripts"))
    print(f"Imported {n} transcript(s).")
    return 0


def cmd_transcripts_sample(args: argparse.Namespace) -> int:
    """The draw, blind to the judge as the review is: which items are the judge's passes is not
    printed (the reviewer reads them on the Transcripts page before seeing the judge's verdict;
    ``judge-check`` counts them afterwards)."""
    from annotator.evaluation import transcripts

    store, user = _store(args), identity.cli_user()
    draw_id, items = transcripts.draw(store, user, args.n, args.seed, args.pass_share)
    rows = [transcripts.transcript(store, user, it) for it in items]
    if args.json:
        _print_json({"draw_id": draw_id, "seed": args.seed, "pass_share": args.pass_share, "items": [
            {k: r[k] for k in ("item_id", "evaluation_id", "query_id", "trial", "stratum", "source", "question",
                               "in_golden_set", "trace_id")} for r in rows]})
    elif not rows:
        print("No unreviewed transcript left to draw.")
    for r in rows if not args.json else []:
        print(f"{r['item_id']}  [{r['stratum']}]  {r['question'][:80]}")
    if rows and not args.json and args.pass_share:
        print(f"Failures and about {args.pass_share:g} of the judge's passes, mixed: review them blind on the "
              "Transcripts page.")
    return 0


def cmd_transcripts_summary(args: argparse.Namespace) -> int:
    from annotator.evaluation import transcripts

    rows = transcripts.summary(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
        return 0
    for r in rows:
        rate = "-" if r["grader_failure_rate"] is None else f"{r['grader_failure_rate']:.2f}"
        print(f"{r['stratum']:<14} failures {r['failures']:>4}  reviewed {r['reviewed']:>4}  grader-failure rate "
              f"{rate}  headroom {r['headroom']:.3f}" + ("  SATURATED" if r["saturated"] else ""))
    return 0


def _rate(rate: float | None, low: float | None, high: float | None) -> str:
    return "-" if rate is None else f"{rate:.2f} [{low:.2f}, {high:.2f}]"


def cmd_transcripts_judge_check(args: argparse.Namespace) -> int:
    from annotator.evaluation import transcripts

    rows = transcripts.judge_check(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("No transcripts yet.")
    for r in rows:
        print(f"{r['evaluation_id']}\n"
              f"  passes   {r['passes']:>5}  reviewed {r['passes_reviewed']:>4}  confirmed {r['passes_confirmed']:>4}"
              f"  overturned {r['passes_overturned']:>4}  ambiguous {r['passes_ambiguous']:>4}  false-pass rate "
              f"{_rate(r['false_pass_rate'], r['false_pass_low'], r['false_pass_high'])}\n"
              f"  failures {r['failures']:>5}  reviewed {r['failures_reviewed']:>4}  confirmed "
              f"{r['failures_confirmed']:>4}  overturned {r['failures_overturned']:>4}  ambiguous "
              f"{r['failures_ambiguous']:>4}  false-fail rate "
              f"{_rate(r['false_fail_rate'], r['false_fail_low'], r['false_fail_high'])}")
    if rows:
        print("Rates: overturned / (confirmed + overturned), each transcript by its latest verdict (ambiguous left "
              "out), with the Wilson 95% interval.")
    return 0


def _pass_share(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"a share from 0 to 1, not {text!r}")
    return v


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    tr = sub.add_parser("transcripts", help="failure transcripts").add_subparsers(dest="transcripts_cmd",
                                                                                 required=True, metavar="CMD")
    ti = add("import", cmd_transcripts_import, "import evaluation transcripts (JSONL), all or nothing", tr)
    ti.add_argument("file")
    from annotator.evaluation.transcript_sampling import DEFAULT_PASS_SHARE  # cheap: the CLI starts without the store

    for name in ("sample", "draw"):  # two names, one command
        tsm = add(name, cmd_transcripts_sample, "draw transcripts to review: failures and (--pass-share) a share "
                                                "of the judge's passes; stratified, reproducible with --seed; never "
                                                "an item reviewed already; draws do not repeat until exhausted", tr)
        tsm.add_argument("--n", type=int, default=10)
        tsm.add_argument("--seed", type=int, default=0)
        tsm.add_argument("--pass-share", type=_pass_share, default=DEFAULT_PASS_SHARE,
                         help=f"share of the draw taken from the judge's passes, 0 to 1 (default {DEFAULT_PASS_SHARE:g}; "
                              "0: failures only); rounded half up, e.g. 0.2 of 10 is 2; which items are passes "
                              "is not printed (the review is blind to the judge)")
    add("summary", cmd_transcripts_summary, "per stratum: failures, reviewed, grader-failure rate, headroom", tr)
    add("judge-check", cmd_transcripts_judge_check, "per evaluation: reviewed passes confirmed and overturned "
                                                    "(judge false passes), the false-pass rate with its 95 percent "
                                                    "Wilson interval, reviewed failures confirmed and overturned (false "
                                                    "fails)", tr)
