"""``golden answers evaluate``: a system's answers scored against a frozen version (correctness
against the short references, faithfulness from the checked claims, citation validity, nugget
V/A, abstention), and with ``--record`` kept as an evaluation that ``golden compare`` gates like
a run's."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli.common import _print_json, _store, _vdir, answers_group, identity
from golden_store.core.errors import GoldenError


def _line(name: str, mean: float | None, n: int) -> str:
    shown = "not applicable (no question it applies to)" if mean is None else f"{mean:.4f}"
    return f"  {name:<20} {shown}  (n = {n})"


def cmd_answers_evaluate(args: argparse.Namespace) -> int:
    from annotator.evaluation import answer_evaluation

    if args.trial < 0:
        raise GoldenError(f"--trial is a whole number >= 0 (got {args.trial}).")
    store, user = _store(args), identity.cli_user()
    if args.record:
        rec = answer_evaluation.record_answers(
            store, user, evaluation_id=args.record, version=args.version, system=args.system, trial=args.trial,
            replace=args.replace, git_sha=args.git_sha, versions_dir=_vdir(args))
        sc = rec.scoring
    else:
        sc = answer_evaluation.score_answers(store, user, args.version, args.system, versions_dir=_vdir(args))
    if args.json:
        out: dict[str, Any] = sc.as_dict()
        if args.record:
            out.update(recorded=args.record, trial=args.trial)
        _print_json(out)
        return 0
    print(f"{args.system} against {args.version}: {len(sc.per_query)} question(s) answered"
          + (f", {len(sc.unanswered)} of the version's not answered (left out)" if sc.unanswered else ""))
    counts = sc.counts
    for metric, mean in sc.means.items():
        print(_line(metric, mean, counts[metric]))
    if sc.judge_model:
        print(f"faithfulness judged by {sc.judge_model} ({sc.rubric_sha})")
    if args.record:
        print(f"Recorded as evaluation {args.record} (trial {args.trial}); compare it with another answer "
              f"evaluation: golden compare BASELINE {args.record}")
    return 0


def register(sub: Any, add: Any) -> None:
    """``evaluate`` under ``golden answers``."""
    an = answers_group(sub)
    ev = add("evaluate", cmd_answers_evaluate, "score a system's answers against a frozen version (exact match and "
                                               "token F1, faithfulness, citation validity, nugget V/A, abstention); "
                                               "--record keeps them as an evaluation golden compare gates", an)
    ev.add_argument("--version", required=True, help="the frozen version (its questions and reference answers)")
    ev.add_argument("--system", required=True)
    ev.add_argument("--record", metavar="EVALUATION_ID", help="record the numbers as this evaluation")
    ev.add_argument("--trial", type=int, default=0, metavar="K", help="a repeat of a sampled generation (default 0)")
    ev.add_argument("--replace", action="store_true", help="replace this trial's recorded rows")
    ev.add_argument("--git-sha", help="the system's code commit to record with the numbers")
