"""System runs and the judging pool: runs import/list/retire/restore, pool build/status."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotator.cli import spend
from annotator.cli.common import COULD_NOT_RUN, _print_json, _Progress, _store, identity


def cmd_runs_import(args: argparse.Namespace) -> int:
    from annotator.evaluation import runs_import

    rep = runs_import.import_run_file(_store(args), identity.cli_user(), args.file, args.system, args.format,
                                      replace=args.replace, skip_unknown=args.skip_unknown,
                                      skip_unknown_docs=args.skip_unknown_docs, progress=_Progress("run import"))
    print(rep.summary())
    return 0


def cmd_runs_retire(args: argparse.Namespace) -> int:
    from annotator.evaluation import runs_import

    runs_import.retire_run(_store(args), identity.cli_user(), args.system, args.reason)
    print(f"Retired run {args.system!r}: it is left out of new pools and the coverage list; its results and the "
          "pool items it contributed stay recorded (golden runs restore undoes it).")
    return 0


def cmd_runs_restore(args: argparse.Namespace) -> int:
    from annotator.evaluation import runs_import

    runs_import.restore_run(_store(args), identity.cli_user(), args.system)
    print(f"Restored run {args.system!r}.")
    return 0


def cmd_runs_list(args: argparse.Namespace) -> int:
    from annotator.evaluation import runs_import

    df = runs_import.run_table(_store(args), identity.cli_user())
    _print_json(df.to_dict(orient="records")) if args.json else print(df.to_string(index=False) if len(df) else
                                                                       "No runs imported yet.")
    return 0


def cmd_pool_build(args: argparse.Namespace) -> int:
    from annotator.evaluation import runs_import

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


def print_pool_runs(rep: dict[str, Any]) -> bool:
    """A pool status's line per run (graded@10, graded@k, questions below the threshold, AP vs
    Bpref), or that no run is imported; True when there are runs. ``golden pool status``
    prints the same lines whether it reads the store or asks a server."""
    for system, e in rep["runs"].items():
        extra = f"  AP {e['ap']:.3f} vs Bpref {e['bpref']:.3f}" if "ap" in e else ""
        at_k = f"  graded@{rep['k']} {e['graded_at_' + str(rep['k'])]:.3f}" if rep["k"] != 10 else ""
        print(f"{system}: graded@10 {e['graded_at_10']:.3f}{at_k}  "
              f"{e['queries_below_threshold']}/{e['queries']} queries below {rep['threshold']}{extra}")
    if not rep["runs"]:
        print("No runs imported yet.")
        return False
    return True


def cmd_pool_status(args: argparse.Namespace) -> int:
    from annotator.evaluation import runs_import

    rep = runs_import.pool_status(_store(args), identity.cli_user(), args.k)
    if args.json:
        _print_json(rep)
        return 0
    if print_pool_runs(rep):
        print("# graded@k: share of a run's top k pooled passages a person has graded (the pool's progress); "
              "golden score's Judged@10 also counts evidence", file=sys.stderr)
        print(f"# {runs_import.pool_ap_note(rep)}", file=sys.stderr)
    return 0


# ---- the pool graded by a calibrated judge (issue 27) ------------------------------------------


def cmd_pool_judge(args: argparse.Namespace) -> int:
    from annotator.judge import pool_grading

    store, user = _store(args), identity.cli_user()
    plan = pool_grading.plan(store, user, args.calibration, mode=args.mode, limit=args.limit,
                             sample_share=args.sample_share)
    for problem in plan.problems:
        print(f"Refused: {problem}", file=sys.stderr)
    if plan.problems:
        return COULD_NOT_RUN
    if not spend.confirm_lines(args, plan.lines(), plan.confirm_label, nothing_to_send=plan.n_items == 0):
        return COULD_NOT_RUN
    job_id = pool_grading.start(store, user, plan, override=args.override, seed=args.seed, limit=args.limit)
    print(f"Job {job_id} started (golden pool judge-pause {job_id} from another terminal pauses it between chunks).")
    summary = pool_grading.run(store, user, job_id, progress=_Progress("judging", "pool items"))
    print("\n".join(summary.lines()))
    return 0


def cmd_pool_judge_resume(args: argparse.Namespace) -> int:
    from annotator.judge import pool_grading

    summary = pool_grading.run(_store(args), identity.cli_user(), args.job, progress=_Progress("judging", "pool items"))
    print("\n".join(summary.lines()))
    return 0


def cmd_pool_judge_pause(args: argparse.Namespace) -> int:
    from annotator.judge import pool_grading

    pool_grading.pause(_store(args), identity.cli_user(), args.job)
    print(f"Job {args.job} pauses after its current chunk; golden pool judge-resume {args.job} goes on.")
    return 0


def cmd_pool_judge_status(args: argparse.Namespace) -> int:
    from annotator.judge import pool_grading

    rep = pool_grading.status(_store(args), identity.cli_user())
    if args.json:
        _print_json(rep)
        return 0
    items, plan = rep["items"], rep["plan"]
    print(f"Pool: {plan['pool_items']} items; the judge's label stands on {items['judge']} (+{items['sample']} also "
          f"sent to people as the standing sample); people grade {items['escalated']} escalated, {items['refused']} "
          f"refused and {items['error']} failed; {plan['to_grade']} not yet judged.")
    for j in rep["jobs"]:
        gate = f"κ {j['gate_kappa']:.2f}" if j["gate_kappa"] is not None else "κ ?"
        over = f", below the gate by override: {j['gate_override']}" if j["gate_override"] else ""
        print(f"  {j['job_id']} [{j['status']}] calibration {j['calibration_id']} ({j['judge_model']}, {gate}{over}), "
              f"{j['mode']}: {j['answered']} answered, {j['judge_labeled']} labeled, {j['sampled']} sampled, "
              f"{j['escalated']} escalated, {j['refused']} refused, {j['errors']} failed; by {j['actor']}")
    if not rep["jobs"]:
        print("No pool-grading job yet: golden pool judge --calibration ID")
    return 0


def cmd_pool_judge_sample(args: argparse.Namespace) -> int:
    from annotator.judge import pool_grading

    rep = pool_grading.sample_report(_store(args), identity.cli_user())
    if args.json:
        _print_json(rep)
        return 0
    print(f"Standing human sample: {rep['sampled_items']} judge-labeled items sent to people blind; "
          f"{rep['graded_by_people']} graded by them so far.")

    def fig(f: dict) -> str:
        return (f"n {f['n']}, κ {f['kappa']:.2f}, FAIL recall {f['fail_recall']:.2f}, "
                f"exact grade agreement {f['grade_agreement']:.2f}" if f["n"] else "n 0")

    for w in rep["windows"]:
        print(f"  {w['window']} ({w['model']}, rubric {w['rubric_sha'][:12]}, calibration {w['calibration_id']}): "
              f"{fig(w)}")
    print(f"  overall: {fig(rep['overall'])}")
    for flag in rep["flags"]:
        print(f"DRIFT: {flag}")
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
    ri.add_argument("--skip-unknown-docs", action="store_true",
                    help="leave out results for doc ids the corpus does not have (counted in the report) "
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
    pj = add("judge", cmd_pool_judge, "grade the pool's ungraded items with a calibrated judge: the band goes "
                                      "to people, the rest is judge-labeled (estimate shown first)", po)
    pj.add_argument("--calibration", required=True, help="a saved calibration id (c1, c2, ...)")
    pj.add_argument("--mode", choices=["batch", "direct"], default=None,
                    help="default: direct up to 20 items, the Batch API (half price) above")
    pj.add_argument("--limit", type=int, default=None, help="grade at most this many items")
    pj.add_argument("--sample-share", type=float, default=0.1,
                    help="share of judge-labeled items also sent to people, blind (default 0.1)")
    pj.add_argument("--override", default=None,
                    help="why to go ahead with a judge whose κ is under the gate (recorded with the job)")
    pj.add_argument("--seed", type=int, default=0, help="seed of the standing sample's draw")
    spend.add_yes(pj)
    pr = add("judge-resume", cmd_pool_judge_resume, "resume a paused (or failed) pool-grading job", po)
    pr.add_argument("job")
    pp = add("judge-pause", cmd_pool_judge_pause, "pause a running pool-grading job after its current chunk", po)
    pp.add_argument("job")
    add("judge-status", cmd_pool_judge_status, "pool-grading jobs and the pool's items by who labels them", po)
    add("judge-sample", cmd_pool_judge_sample, "the standing human sample: judge vs people over time, drift flags", po)
