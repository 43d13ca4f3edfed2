"""Judge calibration: ``golden calibration upload|analyse|save|list|compare``.

What the Judge calibration page does, for a pipeline that re-validates its judge on every
change of model, prompt or rubric (METHODOLOGY §11.6) and then grades the pool with it
(``golden pool judge --calibration ID``). Exit codes: 0 the set is read / every check of the
fit holds / saved; 1 a check failed (the analysis is still printed; ``save`` refuses unless
``--acknowledge-failed-checks``, and says 1 either way); 2 the command could not run (an
unreadable file, an unknown calibration, a judge run that was not confirmed)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotator.cli import spend
from annotator.cli.common import COULD_NOT_RUN, FAILED, PASSED, _print_json, _Progress, _store, identity
from golden_store.core.errors import GoldenError, ValidationError

if TYPE_CHECKING:
    import pandas as pd

    from annotator.judge.calibration import Analysis


def _read_set(path: str) -> "pd.DataFrame":
    from annotator.judge import calibration

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read the calibration file ({exc.strerror or exc}).") from None
    return calibration.load_upload(p.name, data)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{float(v):.{digits}f}" if isinstance(v, (int, float)) else str(v)


def _rubric(args: argparse.Namespace, store: Any) -> str:
    """The judge's rubric: ``--rubric FILE``, else the studio's default for a relevance judge."""
    from annotator.judge import calibration

    if getattr(args, "rubric", None):
        try:
            return Path(args.rubric).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationError(f"--rubric {args.rubric}: cannot read it as UTF-8 text ({exc}).") from None
    return calibration.default_rubric("upload", store)


def _judged(args: argparse.Namespace, df: "pd.DataFrame") -> tuple["pd.DataFrame", dict[str, Any] | None]:
    """With ``--run-judge``: the Claude judge run on the set (estimate first, confirmed), its
    outputs in place of the file's; held-out items are never sent. Else the set as read."""
    if not args.run_judge:
        return df, None
    from annotator.judge import calibration

    store, user = _store(args), identity.cli_user()
    rubric = _rubric(args, store)
    plan = calibration.plan_run(store, user, df, rubric, batch=args.batch)
    if not spend.confirm(args, plan):
        raise _NotRun("Cancelled: nothing was sent.")
    cut = args.cut if args.cut is not None else None
    judged, run = calibration.judge_set(store, user, df, rubric, batch=args.batch, cut=cut,
                                        progress=_Progress("judging"))
    out = sys.stderr if args.json else sys.stdout
    print(f"Judged {len(run.labels)} item(s) with {run.model}: {run.refusals} refusal(s), {run.quote_backstops} "
          f"grade(s) without a verbatim quote made insufficient, {run.skipped_held_out} held-out item(s) never sent, "
          f"{len(run.errors)} error(s).", file=out)
    spend.report(args, run.usage)
    return judged, {"model": run.model, "rubric": run.rubric, "skipped_held_out": run.skipped_held_out,
                    "refusals": run.refusals, "errors": len(run.errors)}


class _NotRun(GoldenError):
    """The command stopped before doing anything (exit 2)."""


def _analyse(args: argparse.Namespace, df: "pd.DataFrame") -> "Analysis":
    from annotator.judge import calibration

    return calibration.analyze(df, seed=args.seed, fit_share=args.fit_share, recalibrate=not args.no_recalibrate,
                               max_missed_bad=args.max_missed_bad, max_false_fail=args.max_false_fail,
                               cut=args.cut, flip=args.flip)


def _report_lines(rep: dict[str, Any]) -> list[str]:
    jr = rep.get("judge_report") or {}
    scale = "pass/fail labels" if rep["scale"] == "binary" else f"{rep['scale']}, pass = grade ≥ {rep['pass_cut']}"
    lines = [f"Calibration set: {rep['n']} item(s) ({scale}); fit split {rep['n_fit']}, report split "
             f"{rep['n_report']}."]
    if jr:
        gate = "clears the gate 0.7" if jr.get("passes_gate") else "UNDER the gate 0.7"
        lines.append(f"Judge vs people: κ {_fmt(jr.get('kappa'))} ({gate}), FAIL recall {_fmt(jr.get('fail_recall'))}, "
                     f"FAIL precision {_fmt(jr.get('fail_precision'))}, accuracy {_fmt(jr.get('accuracy'))}.")
    if rep.get("ece_raw") is not None:
        lines.append(f"ECE on the report split: {_fmt(rep['ece_raw'])} as given, "
                     f"{_fmt(rep.get('ece_recalibrated'))} after the isotonic map (fitted on the fit split).")
    band, br = rep.get("band"), rep.get("band_report") or {}
    if band:
        lines.append(f"Band (fitted on the fit split): auto-PASS at p(FAIL) ≤ {_fmt(band['low'])}, auto-FAIL at "
                     f"≥ {_fmt(band['high'])}, between them to people. On the report split: escalation "
                     f"{_fmt(br.get('escalation_rate'))}, bad items auto-passed {_fmt(br.get('missed_bad_share'))}, "
                     f"good items auto-failed {_fmt(br.get('false_fail_share'))}.")
    else:
        lines.append("No band: the set gives no judge_p, so nothing tells a sure label from an unsure one.")
    for c in rep.get("checks") or []:
        lines.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['message']}")
    failed = rep.get("checks_failed") or []
    lines.append("Every check holds." if not failed else f"{len(failed)} check(s) failed.")
    return lines


def cmd_calibration_upload(args: argparse.Namespace) -> int:
    from annotator.judge import calibration

    summary = calibration.set_summary(_read_set(args.file))
    if args.json:
        _print_json(summary)
        return PASSED
    s = summary
    print(f"{args.file}: {s['n']} item(s), {s['scale']}; people say FAIL on {s['human_fail']}. Judge outputs: "
          f"{s['with_judge_label']} label(s), {s['with_judge_p']} p(FAIL); {s['judgeable']} item(s) with a question "
          f"and a text a Claude judge can be run on (--run-judge).")
    if not s["enough_for_the_gate"]:
        print(f"Note: {s['n']} item(s) is under the {calibration.MIN_ITEMS} pool grading asks of a calibration "
              "(at least 100 human-labelled items).")
    print(f"Next: golden calibration analyse {args.file}")
    return PASSED


def cmd_calibration_analyse(args: argparse.Namespace) -> int:
    from annotator.judge import calibration

    df, ran = _judged(args, _read_set(args.file))
    rep = calibration.report(_analyse(args, df))
    if args.json:
        _print_json({**rep, "judge_run": ran})
    else:
        print("\n".join(_report_lines(rep)))
    return PASSED if rep["passed"] else FAILED


def cmd_calibration_save(args: argparse.Namespace) -> int:
    from annotator.judge import calibration

    df, ran = _judged(args, _read_set(args.file))
    store, user = _store(args), identity.cli_user()
    model = args.judge_model or (ran or {}).get("model")
    if not model:
        raise ValidationError("--judge-model is needed: the model id of the judge whose outputs the file holds (it is "
                              "pinned with the calibration), or --run-judge to run this studio's judge on the set.")
    rubric = (ran or {}).get("rubric") or _rubric(args, store)
    a = _analyse(args, df)
    rep = calibration.report(a)
    if a.failed_checks and not args.acknowledge_failed_checks:  # a check failed: exit 1, nothing stored
        if args.json:
            _print_json({"calibration_id": None, **rep, "judge_run": ran})
        else:
            print("\n".join(_report_lines(rep)))
        print(f"golden: not saved: this calibration fails {len(a.failed_checks)} check(s). Fix the fit (more items, "
              "other targets, another judge), or pass --acknowledge-failed-checks to keep it marked as failing.",
              file=sys.stderr)
        return FAILED
    cid = calibration.save(store, user, df, a, judge_model=model, rubric=rubric, question_sha=None,
                           source=f"cli:{Path(args.file).name}", seed=args.seed, fit_share=args.fit_share,
                           max_missed_bad=args.max_missed_bad, max_false_fail=args.max_false_fail, note=args.note,
                           acknowledge_failed_checks=args.acknowledge_failed_checks)
    if args.json:
        _print_json({"calibration_id": cid, **rep, "judge_run": ran})
    else:
        print("\n".join(_report_lines(rep)))
        print(f"Saved calibration {cid} (judge {model})" + ("." if rep["passed"] else
              ", MARKED AS FAILING its checks: it is kept for comparison and cannot drive pool grading."))
        if rep["passed"]:
            print(f"Next: golden pool judge --calibration {cid}")
    return PASSED if rep["passed"] else FAILED


def cmd_calibration_list(args: argparse.Namespace) -> int:
    from annotator.judge import calibration

    rows = calibration.list_saved(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
        return PASSED
    if not rows:
        print("No saved calibration yet: golden calibration save FILE --judge-model MODEL")
    for r in rows:
        failed = f", {len(r['checks_failed'])} failed check(s)" if r["checks_failed"] else ""
        band = (f"band ({_fmt(r['band_low'])}, {_fmt(r['band_high'])})" if r["band_low"] is not None else "no band")
        print(f"{r['calibration_id']}  {r['judge_model']}  rubric {str(r['rubric_sha'])[:12]}  {r['scale']}  "
              f"n {r['n']}  κ {_fmt(r['kappa'])}  FAIL recall {_fmt(r['fail_recall'])}  {band}{failed}")
    return PASSED


def cmd_calibration_compare(args: argparse.Namespace) -> int:
    from annotator.judge import calibration

    rep = calibration.compare(_store(args), identity.cli_user(), args.old, args.new)
    if args.json:
        _print_json(rep)
        return PASSED
    for side in ("old", "new"):
        r = rep[side]
        print(f"{side}: {r['calibration_id']} judge {r['judge_model']} rubric {str(r['rubric_sha'])[:12]}: n {r['n']}, "
              f"κ {_fmt(r['kappa'])}, FAIL recall {_fmt(r['fail_recall'])}, escalation {_fmt(r['escalation_rate'])}"
              + (f", {len(r['checks_failed'])} failed check(s)" if r["checks_failed"] else ""))
    d = rep["delta"]
    print(f"Changed: {', '.join(rep['judge_changed']) or 'nothing of the judge'}; κ {_signed(d['kappa'])}, "
          f"FAIL recall {_signed(d['fail_recall'])}, escalation {_signed(d['escalation_rate'])} (new − old).")
    off = rep["offset"]
    print(f"On the {off['shared_items']} item(s) both archived: " + (", ".join(
        f"{k.replace('_', ' ')} {_fmt(v) if isinstance(v, float) else v}" for k, v in off.items() if k != "shared_items")
        if off["shared_items"] else "none in common, so no offset (calibrate both judges on the same set)") + ".")
    return PASSED


def _signed(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.3f}"


def _analysis_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="calibration set: CSV (header row) or JSONL with item_id, human_label and judge_label "
                                "and/or judge_p (the judge's probability of FAIL); question and text to run a judge")
    p.add_argument("--cut", type=int, help="pass/fail cut on a graded scale: pass = grade ≥ CUT (default 2)")
    p.add_argument("--flip", action="store_true", help="judge_p is P(pass): use 1 − judge_p (refused when it already "
                                                       "rises with FAIL)")
    p.add_argument("--seed", type=int, default=0, help="seed of the fit/report split (default 0)")
    p.add_argument("--fit-share", type=float, default=0.5, help="share of items the band is fitted on (default 0.5)")
    p.add_argument("--no-recalibrate", action="store_true", help="fit the band on judge_p as given (no isotonic map)")
    p.add_argument("--max-missed-bad", type=float, default=0.02,
                   help="target share of bad items the band may auto-pass (default 0.02)")
    p.add_argument("--max-false-fail", type=float, default=0.02,
                   help="target share of good items the band may auto-fail (default 0.02)")
    p.add_argument("--run-judge", action="store_true",
                   help="run this studio's Claude judge on the set (items need question and text; held-out ones are "
                        "never sent) and analyse its outputs instead of the file's; the estimate is shown first")
    p.add_argument("--rubric", metavar="FILE", help="the judge's rubric (default: the studio's rubric inside the "
                                                     "judge's rules); its sha and text are saved with a calibration")
    p.add_argument("--batch", action="store_true", help="with --run-judge: through the Batch API (half price)")
    spend.add_yes(p)
    p.set_defaults(error_exit=COULD_NOT_RUN)


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    grp = sub.add_parser("calibration", help="judge calibration: check a judge against people before it grades the "
                                             "pool").add_subparsers(dest="calibration_cmd", required=True, metavar="CMD")
    up = add("upload", cmd_calibration_upload, "read a calibration set and say what it holds (nothing is stored)", grp)
    up.add_argument("file", help="calibration set (CSV or JSONL)")
    up.set_defaults(error_exit=COULD_NOT_RUN)
    an = add("analyse", cmd_calibration_analyse, "the judge against people: κ, FAIL recall, ECE, the band fitted on "
                                                 "one split and checked on the other; exit 1 when a check fails", grp)
    _analysis_options(an)
    sv = add("save", cmd_calibration_save, "analyse and save a calibration pinned to its judge (model id, rubric) "
                                           "for golden pool judge; exit 1 when a check fails", grp)
    _analysis_options(sv)
    sv.add_argument("--judge-model", help="model id of the judge whose outputs the file holds (with --run-judge: "
                                          "the studio's, $GOLDEN_LLM_MODEL)")
    sv.add_argument("--note", help="why this calibration (kept with it)")
    sv.add_argument("--acknowledge-failed-checks", action="store_true",
                    help="save even though a check fails, marked as failing (kept for comparison; it cannot drive "
                         "pool grading)")
    ls = add("list", cmd_calibration_list, "saved calibrations: judge, κ, FAIL recall, band, failed checks", grp)
    ls.set_defaults(error_exit=COULD_NOT_RUN)
    cp = add("compare", cmd_calibration_compare, "two saved calibrations side by side, and the new judge against the "
                                                 "old on the items both archived", grp)
    cp.add_argument("old", help="calibration id (e.g. c1)")
    cp.add_argument("new", help="calibration id")
    cp.set_defaults(error_exit=COULD_NOT_RUN)
