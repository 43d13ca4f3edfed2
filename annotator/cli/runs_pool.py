"""System runs and the judging pool: runs import/list/retire/restore, pool build/status."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotator.cli.common import _print_json, _Progress, _store, identity


def cmd_runs_import(args: argparse.Namespace) -> int:
    from annotator import runs_import

    rep = runs_import.import_run_file(_store(args), identity.cli_user(), args.file, args.system, args.format,
                                      replace=args.replace, skip_unknown=args.skip_unknown,
                                      progress=_Progress("placing passages"))
    print(rep.summary())
    return 0


def cmd_runs_retire(args: argparse.Namespace) -> int:
    from annotator import runs_import

    runs_import.retire_run(_store(args), identity.cli_user(), args.system, args.reason)
    print(f"Retired run {args.system!r}: it is left out of new pools and the coverage list; its results and the "
          "pool items it contributed stay recorded (golden runs restore undoes it).")
    return 0


def cmd_runs_restore(args: argparse.Namespace) -> int:
    from annotator import runs_import

    runs_import.restore_run(_store(args), identity.cli_user(), args.system)
    print(f"Restored run {args.system!r}.")
    return 0


def cmd_runs_list(args: argparse.Namespace) -> int:
    from annotator import runs_import

    df = runs_import.run_table(_store(args), identity.cli_user())
    _print_json(df.to_dict(orient="records")) if args.json else print(df.to_string(index=False) if len(df) else
                                                                       "No runs imported yet.")
    return 0


def cmd_pool_build(args: argparse.Namespace) -> int:
    from annotator import runs_import

    rep = runs_import.build_pool(_store(args), identity.cli_user(), args.depth, args.runs)
    if args.json:
        _print_json({k: v for k, v in rep.as_dict().items() if k != "new_items"})
    else:
        print(f"Pool: {rep.pool_size} items over {rep.queries} queries; {rep.new_items} added, "
              f"{rep.new_unjudged} of them unjudged.")
        for system, m in rep.per_run.items():
            flag = "  (below 0.8: grade the pool before trusting its metrics)" if m["graded_at_k"] < 0.8 else ""
            print(f"  {system}: graded@{m['k']} {m['graded_at_k']:.3f}{flag}")
    return 0


def cmd_pool_status(args: argparse.Namespace) -> int:
    from annotator import runs_import

    rep = runs_import.pool_status(_store(args), identity.cli_user(), args.k)
    if args.json:
        _print_json(rep)
        return 0
    for system, e in rep["runs"].items():
        extra = f"  AP {e['ap']:.3f} vs Bpref {e['bpref']:.3f}" if "ap" in e else ""
        at_k = f"  graded@{rep['k']} {e['graded_at_' + str(rep['k'])]:.3f}" if rep["k"] != 10 else ""
        print(f"{system}: graded@10 {e['graded_at_10']:.3f}{at_k}  "
              f"{e['queries_below_threshold']}/{e['queries']} queries below {rep['threshold']}{extra}")
    if not rep["runs"]:
        print("No runs imported yet.")
    else:
        print("# graded@k: share of a run's top k pooled passages a person has graded (the pool's progress); "
              "golden score's Judged@10 also counts evidence", file=sys.stderr)
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    rn = sub.add_parser("runs", help="system runs").add_subparsers(dest="runs_cmd", required=True, metavar="CMD")
    ri = add("import", cmd_runs_import, "import a TREC or JSONL passage run (all or nothing)", rn)
    ri.add_argument("file")
    ri.add_argument("--system", required=True, help="the system's name (no spaces)")
    ri.add_argument("--format", choices=["trec", "jsonl"], default=None,
                    help="default: told from the file (a JSON object per line is a passage run)")
    ri.add_argument("--replace", action="store_true", help="replace a run of the same name")
    ri.add_argument("--skip-unknown", action="store_true",
                    help="leave out results for query ids the store does not know (counted in the report) "
                         "instead of refusing the run")
    add("list", cmd_runs_list, "list imported runs (retired ones too, with their status)", rn)
    rr = add("retire", cmd_runs_retire, "retire a run: left out of new pools and the coverage list; its results "
                                        "and pool contributions stay recorded", rn)
    rr.add_argument("system")
    rr.add_argument("--reason", required=True, help="why (kept in the history)")
    rrs = add("restore", cmd_runs_restore, "undo a retirement", rn)
    rrs.add_argument("system")
    po = sub.add_parser("pool", help="the judging pool").add_subparsers(dest="pool_cmd", required=True, metavar="CMD")
    pb = add("build", cmd_pool_build, "add the union of the runs' top-K per query to the pool", po)
    pb.add_argument("--depth", type=int, required=True)
    pb.add_argument("--runs", nargs="+", help="systems to pool (default: all imported)")
    ps = add("status", cmd_pool_status, "grading coverage per run (graded@10, graded@k, AP vs Bpref)", po)
    ps.add_argument("--k", type=int, default=10)
