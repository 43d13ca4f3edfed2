"""Double annotation: rounds start/split/list/bar, agreement."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotator.cli.common import _print_json, _store, identity
from golden_store.core.errors import GoldenError


def _people(raw: str) -> list[str]:
    return [p.strip() for p in raw.split(",") if p.strip()]


def cmd_rounds_start(args: argparse.Namespace) -> int:
    from annotator.labeling import rounds

    if args.evidence:
        from annotator.labeling import evidence_rounds

        rid = evidence_rounds.start(_store(args), identity.cli_user(), _people(args.annotators), args.n, args.seed,
                                    args.note)
    else:
        rid = rounds.start_calibration(_store(args), identity.cli_user(), _people(args.annotators), args.n,
                                       args.seed, args.note)
    _print_json({"round_id": rid}) if args.json else print(
        f"Calibration round {rid} started for {args.annotators}: their Judge queues show its items first.")
    return 0


def cmd_rounds_split(args: argparse.Namespace) -> int:
    from annotator.labeling import rounds

    store, user = _store(args), identity.cli_user()
    check = rounds.split_check(store, user)
    rid = rounds.split_work(store, user, _people(args.annotators), args.overlap, args.seed, args.note,
                            override=args.override)
    if args.json:
        _print_json({"round_id": rid, "bar_check": check, "override": None if check["cleared"] else args.override})
        return 0
    print(f"Round {rid}: free pool items split among {args.annotators}, {args.overlap:.0%} of each stratum twice.")
    if not check["cleared"]:
        print(f"warning: split below the agreement bar ({check['text']}); the override reason is recorded with "
              f"round {rid}.", file=sys.stderr)
    return 0


def cmd_rounds_bar(args: argparse.Namespace) -> int:
    from annotator.labeling import agreement

    store, user = _store(args), identity.cli_user()
    if args.measure:
        agreement.choose_bar(store, user, args.measure, args.threshold, args.note)
    elif args.threshold is not None or args.note:
        raise GoldenError("--threshold and --note go with --measure (the figure the graded bar reads).")
    bar, chosen = agreement.bar(store, user)
    if args.json:
        _print_json({**bar.as_dict(), **chosen})
        return 0
    who = (f"chosen by {chosen['chosen_by']} at {chosen['chosen_at']}" + (f": {chosen['note']}" if chosen["note"] else "")
           if chosen["chosen_by"] else "the methodology's default (§3.7)")
    print(f"Agreement bar: {bar.describe()} - {who}")
    return 0


def cmd_rounds_list(args: argparse.Namespace) -> int:
    from annotator.labeling import rounds

    rows = rounds.list_rounds(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
    elif not rows:
        print("No rounds yet: golden rounds start --annotators a,b --n 50")
    for r in rows if not args.json else []:
        what = "questions" if r["item_kind"] == "evidence" else "items"
        print(f"{r['round_id']}  {r['kind']:<11} {','.join(r['annotators'])}  {r['n_items']} {what}, "
              f"{r['n_done']}/{r['n_assignments']} assignments done")
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    from annotator.labeling import agreement

    store, user = _store(args), identity.cli_user()
    scope = agreement.scope_of(store, user, args.round)  # the newest round unless asked, as the page opens
    rep = agreement.compute(store, user, scope.round_id)
    summary = rep.group.summary()
    bar, chosen = agreement.bar(store, user)
    check = bar.check(summary)
    summary["bar"] = {**bar.as_dict(), **chosen, **check.as_dict()}
    if args.json:
        _print_json({"scope": scope.as_dict(), **summary, "pairs": rep.pair_table().to_dict(orient="records"),
                     "per_round": rep.per_round.to_dict(orient="records"),
                     "per_stratum": rep.per_stratum.to_dict(orient="records")})
        return 0
    print(agreement.count_line(scope.as_dict(), summary["n_units"], len(summary["annotators"])))
    if not summary["n_units"]:
        return 0

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    print(f"kappa binary {f(summary['kappa_binary'])} ({summary['reading_binary']})  "
          f"kappa graded unweighted {f(summary['kappa_unweighted'])} ({summary['reading_unweighted']})  "
          f"linear {f(summary['kappa_linear'])} ({summary['reading_linear']})  "
          f"quadratic {f(summary['kappa_quadratic'])}  "
          f"alpha ordinal {f(summary['alpha_ordinal'])}  raw {f(summary['raw_agreement'])}")
    print(f"bar ({bar.describe()}): {check.text}")
    for p in rep.group.pairs:
        print(f"  {p.a} x {p.b}: n={p.n} kappa_binary={p.kappa_binary:.3f} unweighted={p.kappa_unweighted:.3f} "
              f"linear={p.kappa_linear:.3f} quadratic={p.kappa_quadratic:.3f} raw={p.raw:.3f}")
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    ro = sub.add_parser("rounds", help="double-annotation rounds").add_subparsers(dest="rounds_cmd", required=True,
                                                                                metavar="CMD")
    rst = add("start", cmd_rounds_start, "calibration round: every annotator grades the same stratified sample "
                                         "of free pool items", ro)
    rst.add_argument("--annotators", required=True, help="comma-separated usernames (two or more)")
    rst.add_argument("--n", type=int, default=50, help="items (default 50)")
    rst.add_argument("--seed", type=int, default=0)
    rst.add_argument("--note")
    rst.add_argument("--evidence", action="store_true",
                     help="an evidence round: the annotators quote the same questions, blind to each other")
    rsp = add("split", cmd_rounds_split, "split the free pool items, an overlap share graded twice", ro)
    rsp.add_argument("--annotators", required=True, help="comma-separated usernames")
    rsp.add_argument("--overlap", type=float, default=0.10, help="share of each stratum graded twice (default 0.10)")
    rsp.add_argument("--seed", type=int, default=0)
    rsp.add_argument("--note")
    rsp.add_argument("--override", metavar="REASON",
                     help="split even though the latest calibration round is below the agreement bar; the reason "
                          "is recorded with the round and in the manifest")
    add("list", cmd_rounds_list, "list rounds and their progress", ro)
    rb = add("bar", cmd_rounds_bar, "show the agreement bar in force, or choose the figure it reads (recorded)", ro)
    rb.add_argument("--measure", choices=["kappa_unweighted", "kappa_linear", "kappa_quadratic", "alpha_ordinal"],
                    help="graded figure the bar reads (default kappa_unweighted, methodology §3.7; alpha_ordinal "
                         "is for rounds of three or more annotators)")
    rb.add_argument("--threshold", type=float, help="graded threshold (default 0.6 for kappa, 0.667 for alpha)")
    rb.add_argument("--note", help="why (required when moving off the methodology's bar)")
    ag = add("agreement", cmd_agreement, "inter-annotator agreement on the grades (kappa, alpha), per pair: of the "
                                         "newest round unless --round says otherwise (as the Agreement page opens), "
                                         "the round named on the first line")
    ag.add_argument("--round", metavar="ROUND",
                    help="the labels to read: a round id (golden rounds list), or 'all' for every label, every round "
                         "pooled (default: the newest round of graded items; every label when there is no round)")
