"""Correctness by rubric from the command line (METHODOLOGY §10.4, §11.1): ``golden answers
grade-sample`` (the seeded sample people grade), ``golden answers grade`` (a person's mark of one
criterion), ``golden answers judge-rubric`` (the judge grades every answer; estimate first) and
``golden answers rubric-report`` (the judge calibrated against people, per criterion)."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli import spend
from annotator.cli.common import COULD_NOT_RUN, _print_json, _Progress, _store, answers_group, identity


def cmd_answers_grade_sample(args: argparse.Namespace) -> int:
    """The sample's answers, blind: an opaque key per answer, never its system."""
    from annotator.labeling import answer_grading

    cards = answer_grading.sample(_store(args), identity.cli_user(), system=args.system, n=args.n, seed=args.seed)
    if args.json:
        _print_json(cards)
        return 0
    if not cards:
        print("No answer to grade: import answers (golden answers import) and set criteria for their questions "
              "(golden references criteria).")
    for c in cards:
        mine = ", ".join(f"{k}={v}" for k, v in c["mine"].items()) or "not graded by you"
        crit = ", ".join(f"{x['criterion_id']} (0-{x['scale_max']})" for x in c["criteria"])
        print(f"{c['key']}  {c['query_id']} [{c['stratum'] or '-'}]  criteria: {crit}; {mine}")
    return 0


def cmd_answers_grade(args: argparse.Namespace) -> int:
    """A person's mark of one criterion of one answer."""
    from annotator.labeling import answer_grading

    store, user = _store(args), identity.cli_user()
    answer_grading.grade(store, user, system=args.system, query_id=args.query_id, marks={args.criterion: args.mark})
    print(f"Graded {args.system}'s answer to {args.query_id}: {args.criterion} = {args.mark} (by {user.username}).")
    return 0


def cmd_answers_judge_rubric(args: argparse.Namespace) -> int:
    """The rubric judge over a system's answers, after the estimate."""
    from annotator.judge import rubric_grading

    store, user = _store(args), identity.cli_user()
    plan = rubric_grading.plan(store, user, args.system, query_ids=args.query, redo=args.redo)
    for qid, why in plan.skipped:
        print(f"skipped {qid}: {why}", file=spend._out(args))
    if not spend.confirm(args, plan):
        return COULD_NOT_RUN
    done = rubric_grading.run(store, user, args.system, query_ids=args.query, redo=args.redo,
                              progress=_Progress("grading", "answers"))
    if args.json:
        _print_json(done.as_dict())
        return 1 if done.failed else 0
    print(f"{args.system}: {done.graded} answer(s) graded ({done.refused} refused by the model, counted apart), "
          f"{done.marks} criterion mark(s), {len(done.unmarked)} left unmarked, {len(done.failed)} failed, "
          f"{len(done.skipped)} skipped; tokens in {done.input_tokens}, out {done.output_tokens}. "
          "`golden answers rubric-report` compares the judge with people's grades.")
    for qid, crit, why in done.unmarked:
        print(f"  unmarked {qid} {crit}: {why}")
    for qid, why in done.failed:
        print(f"  failed {qid}: {why}")
    return 1 if done.failed else 0


def _fmt(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def _criterion_line(c: dict[str, Any]) -> str:
    kind = f"{c['kappa_weights']}-weighted" if c["kappa_weights"] else "unweighted"
    ci = c["fail_interval"]
    return (f"  {c['criterion_id']} (0-{c['scale_max']}): {c['verdict'].upper()}; {c['n']} item(s); Cohen's kappa "
            f"{_fmt(c['kappa'])} ({kind}; bar {c['kappa_bar']})"
            + (f" [{c['kappa_reason']}]" if c["kappa"] is None and c["kappa_reason"] else "")
            + f", raw agreement {_fmt(c['raw_agreement'])}; FAIL recall {_fmt(c['fail_recall'])} (bar "
            f"{c['fail_recall_bar']}): the judge gave 0 to {c['fail_caught']} of the {c['human_fail']} mark(s) "
            "people gave 0" + (f" (Wilson 95% {ci[0]:.3f}-{ci[1]:.3f})" if ci else ""))


def cmd_answers_rubric_report(args: argparse.Namespace) -> int:
    """The calibration report (a report, not a gate: it exits 0)."""
    from annotator.labeling import answer_grading

    rep = answer_grading.report(_store(args), identity.cli_user(), args.system)
    if args.json:
        _print_json(rep)
        return 0
    where = f" for {args.system}" if args.system else ""
    print(f"{rep['human_grades']} current human grade(s) and {rep['judge_grades']} judge grade(s){where}; "
          f"{rep['stale_left_out']} stale grade(s) (answer text changed since) left out.")
    if not rep["judges"]:
        print("No answer criterion graded by both people and the judge yet: people grade the sample "
              "(golden answers grade-sample, then golden answers grade), the judge grades with "
              "golden answers judge-rubric --system NAME.")
    for j in rep["judges"]:
        print(f"Judge {j['model']}, prompt {str(j['prompt_sha'])[:12]}: {j['verdict'].upper()} on {j['items']} "
              f"item(s) of {j['answers']} answer(s), graded by {', '.join(j['graders'])}")
        for c in j["criteria"]:
            print(_criterion_line(c))
    return 0


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside their handlers (``add``: a command with the global options)."""
    an = answers_group(sub)
    gs = add("grade-sample", cmd_answers_grade_sample, "the seeded sample of answers people grade per rubric "
                                                       "criterion, per system stratified by stratum, blind to the "
                                                       "system (an opaque key per answer)", an)
    gs.add_argument("--system", help="only this system's answers (default: every system, mixed)")
    gs.add_argument("--n", type=int, default=20, help="answers per system (default 20)")
    gs.add_argument("--seed", type=int, default=0, help="the sample's seed (the same seed, the same sample)")
    gr = add("grade", cmd_answers_grade, "a person's mark of one rubric criterion of one answer (kept as an event, "
                                         "with the answer text's sha)", an)
    gr.add_argument("query_id")
    gr.add_argument("--system", required=True)
    gr.add_argument("--criterion", required=True, help="the criterion's id")
    gr.add_argument("--mark", type=int, required=True, help="0 up to the criterion's scale (1, 2 or 3)")
    jr = add("judge-rubric", cmd_answers_judge_rubric, "grade a system's answers per rubric criterion with Claude "
                                                       "(one call per answer; estimate first; held-out questions "
                                                       "are never sent)", an)
    jr.add_argument("--system", required=True)
    jr.add_argument("--query", nargs="+", help="only these query ids")
    jr.add_argument("--redo", action="store_true",
                    help="grade again the answers this judge already graded (by default they are skipped)")
    spend.add_yes(jr)
    rr = add("rubric-report", cmd_answers_rubric_report, "the rubric judge against people's grades per criterion: "
                                                         "Cohen's kappa, raw agreement, FAIL recall, against the "
                                                         "0.7 / 0.9 bar (methodology §11.1)", an)
    rr.add_argument("--system", help="only this system's answers")
