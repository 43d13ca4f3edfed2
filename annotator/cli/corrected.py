"""Judge figures corrected by people's samples (prediction-powered, issue 40 item 7):
``golden pool judge-corrected`` (the relevant share of each system's judge-labeled top k,
corrected by the pool's standing human sample) and ``golden answers rubric-corrected`` (the
rubric judge's mean score, corrected by people's grades of the answer sample). Claim-level
faithfulness has its corrected figure in ``golden answers faithfulness``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotator.cli.common import _print_json, _store, answers_group, identity


def cmd_pool_judge_corrected(args: argparse.Namespace) -> int:
    from annotator.evaluation import judge_corrected_retrieval as jcr

    results = jcr.corrected_retrieval(_store(args), identity.cli_user(), system=args.system, k=args.k, cut=args.cut)
    if args.json:
        _print_json({"systems": {name: c.as_dict() for name, c in results.items()}, "not_offered": jcr.NOT_OFFERED})
        return 0
    if not results:
        print(f"No judge-labeled item in any active run's top {args.k}"
              f"{f' of {args.system}' if args.system else ''}: grade the pool with a calibrated judge first "
              "(golden pool judge --calibration ID).")
        return 0
    for c in results.values():
        print(jcr.line(c))
        t = c.top_k
        print(f"  top {c.k}: {t.get('results', 0)} result(s); judge-labeled {c.items} (sampled and graded by people "
              f"{c.sampled}, sampled and waiting {c.sampled_waiting}); graded by people only {t.get('people_only', 0)}; "
              f"unlabeled {t.get('unlabeled', 0)}")
    print(f"# {jcr.NOT_OFFERED}", file=sys.stderr)
    return 0


def cmd_answers_rubric_corrected(args: argparse.Namespace) -> int:
    from annotator.evaluation import judge_corrected_rubric as jcu

    results = jcu.corrected_rubric(_store(args), identity.cli_user(), args.system)
    if args.json:
        _print_json({name: c.as_dict() for name, c in results.items()})
        return 0
    if not results:
        print(f"No answer{f' of {args.system}' if args.system else ''} the rubric judge scored on every criterion: "
              "golden answers judge-rubric --system NAME grades them.")
        return 0
    for c in results.values():
        print(jcu.line(c))
        if c.people_only:
            print(f"  {c.people_only} answer(s) people graded that the judge did not score (not in the estimate)")
        if c.unscorable:
            print(f"  left out, a mark above its criterion's scale (the scale changed since): "
                  f"{', '.join(c.unscorable)}")
    return 0


def _group(sub: Any, name: str) -> Any:
    parser = sub.choices[name]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def register(sub: Any, add: Any) -> None:
    """This group's parsers (``add``: a command with the global options): into ``golden pool``
    and ``golden answers``, which :mod:`annotator.cli.runs_pool` and
    :mod:`annotator.cli.nuggets_answers` make and register first."""
    pc = add("judge-corrected", cmd_pool_judge_corrected,
             "each system's relevant share of its judge-labeled top k: the judge's, and corrected by the standing "
             "human sample (prediction-powered), with their intervals", _group(sub, "pool"))
    pc.add_argument("--system", default=None, help="one system (default: every active run)")
    pc.add_argument("-k", "--k", type=int, default=10, help="the top k of each run (default 10)")
    pc.add_argument("--cut", type=int, default=2, help="relevant = grade >= cut (default 2, as binary measures "
                                                       "count on a version)")
    rc = add("rubric-corrected", cmd_answers_rubric_corrected,
             "each system's mean rubric score: the judge's, and corrected by people's grades of the answer sample "
             "(prediction-powered, per question stratum), with their intervals", answers_group(sub))
    rc.add_argument("--system", default=None, help="one system (default: every system the judge scored)")
