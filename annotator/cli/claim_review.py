"""People against the faithfulness judge: ``golden answers review-report``, the agreement of
reviewers' blind claim verdicts (the Claim review page) with the judge's (METHODOLOGY §11.1)."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli.common import _print_json, _store, answers_group, identity


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "undefined" if x is None else format(x, spec)


def _lines(name: str, f: dict[str, Any]) -> list[str]:
    """One set of figures as text: κ against its bar, raw agreement, FAIL recall with counts."""
    fr = f["fail_recall"]
    ci = fr["interval"]
    bar = ("meets" if f["meets_bar"] else "below") if f["meets_bar"] is not None else "no"
    return [f"{name}: {f['n']} claim review(s); Cohen's kappa {_fmt(f['kappa'])} ({bar} bar {f['kappa_bar']}"
            + (f"; {f['kappa_reason']}" if f["kappa"] is None and f["kappa_reason"] else "") + "), raw agreement "
            f"{_fmt(f['raw_agreement'])}; FAIL recall {_fmt(fr['recall'])}: the judge did not call supported "
            f"{fr['caught']} of the {fr['human_fail']} claim(s) people call contradicted or insufficient"
            + (f" (Wilson 95% {ci[0]:.3f}-{ci[1]:.3f})" if ci else "")]


def _confusion(f: dict[str, Any]) -> list[str]:
    labels = f["labels"]
    width = max(len(x) for x in labels) + 2
    head = "  people \\ judge".ljust(width + 10) + "".join(x.rjust(width) for x in labels)
    return [head] + [f"  {h}".ljust(width + 10) + "".join(str(c).rjust(width) for c in row)
                     for h, row in zip(labels, f["confusion"])]


def cmd_answers_review_report(args: argparse.Namespace) -> int:
    """The agreement report (a report, not a gate: it exits 0)."""
    from annotator.labeling import claim_review

    rep = claim_review.report(_store(args), identity.cli_user(), args.system)
    if args.json:
        _print_json(rep)
        return 0
    if not rep["reviews"]:
        print("No claim reviewed yet" + (f" for {args.system}" if args.system else "")
              + ": reviewers check the judge's claim verdicts on the Claim review page "
                "(after `golden answers check-claims --system NAME`).")
        if rep["left_out_stale"]:
            print(f"{rep['left_out_stale']} review(s) of checks since replaced are left out.")
        return 0
    o = rep["overall"]
    print(*_lines("All reviewers" + (f" ({args.system})" if args.system else ""), o), sep="\n")
    print(*_confusion(o), sep="\n")
    for name, f in rep["per_reviewer"].items():
        print(*_lines(f"  {name}", f), sep="\n")
    print(f"Judge {', '.join(rep['judges'])}; check prompt(s) {', '.join(rep['check_shas'])}; "
          f"{rep['left_out_stale']} review(s) of checks since replaced left out.")
    return 0


def register(sub: Any, add: Any) -> None:
    """This group's parser, beside its handler (``add``: a command with the global options)."""
    rr = add("review-report", cmd_answers_review_report,
             "reviewers' agreement with the faithfulness judge on claim verdicts: Cohen's kappa, raw agreement, "
             "confusion and the judge's FAIL recall on claims people call unsupported (methodology §11.1)",
             answers_group(sub))
    rr.add_argument("--system", help="only this system's claims")
