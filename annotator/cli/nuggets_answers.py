"""Generation: nuggets draft/export/scores, answers import/score/mark."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from annotator.cli import spend
from annotator.cli.common import COULD_NOT_RUN, _print_json, _Progress, _store, identity
from golden_store.scoring.answer_checks import DEFAULT_MAX_CHARS


def cmd_nuggets_draft(args: argparse.Namespace) -> int:
    from annotator.evidence import nuggets

    store, user = _store(args), identity.cli_user()
    rows = nuggets.status(store, user)
    targets = [r["query_id"] for r in rows
               if (not args.query or r["query_id"] in args.query)
               and (not args.stratum or r["stratum"] == args.stratum)
               and (args.query or r["n_nuggets"] == 0)]
    if not targets:
        print("No question to draft (questions that already have nuggets are skipped unless named with --query).")
        return 0
    plan = nuggets.plan(store, user, targets, batch=args.batch)
    if not spend.confirm(args, plan):
        return COULD_NOT_RUN
    outs = nuggets.draft_many(store, user, targets, batch=args.batch, progress=_Progress("drafting", "questions"))
    summary = nuggets.summarize(outs)
    if args.json:
        _print_json({**summary, "estimate": {"lines": plan.lines(), "usd": plan.usd, "caches": plan.estimate.caches},
                     "per_question": [{"query_id": o.query_id, "outcome": o.outcome, "added": o.added,
                                       "flagged": o.flagged, "message": o.message} for o in outs]})
        return 0
    for o in outs:
        print(f"{o.query_id}: {o.outcome}" + (f" - {o.message}" if o.message else ""))
    cost = f"${summary['cost_usd']:.4f}" if summary["cost_usd"] is not None else "unknown"
    print(f"{summary['questions']} question(s): {summary['outcomes']}; {summary['nuggets_added']} nugget(s) added, "
          f"{summary['flagged']} flagged; tokens in {summary['input_tokens']}, out {summary['output_tokens']}, "
          f"cache read {summary['cache_read_tokens']}; cost {cost}" + (" (batch price)" if args.batch else ""))
    spend.report(args, nuggets.job_usage(outs))
    return 0


def cmd_nuggets_export(args: argparse.Namespace) -> int:
    from annotator.evidence import nuggets

    rows = nuggets.export_rows(_store(args), identity.cli_user())
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    print(f"Wrote {len(rows)} approved nugget(s) to {args.out}.")
    return 0


def cmd_nuggets_import(args: argparse.Namespace) -> int:
    """An approved-nuggets export read back onto its questions; the same file again changes nothing."""
    from annotator.integration import dataset_import

    rep = dataset_import.import_nuggets(_store(args), identity.cli_user(), args.file)
    if args.json:
        _print_json(rep)
    else:
        print(f"Nuggets import: {len(rep['added'])} question(s) got their approved nuggets, {len(rep['unchanged'])} "
              "had them already.")
    return 0


def cmd_nuggets_scores(args: argparse.Namespace) -> int:
    from annotator.evidence import nuggets

    from golden_store.scoring.generation import NO_VITAL_DEFINITIONS

    per_answer, per_system = nuggets.scores(_store(args), identity.cli_user(), no_vital=args.no_vital)
    if args.json:
        _print_json({"no_vital_convention": args.no_vital, "no_vital_definition": NO_VITAL_DEFINITIONS[args.no_vital],
                     "per_system": per_system.to_dict(orient="records"),
                     "per_answer": per_answer.to_dict(orient="records")})
    elif per_system.empty:
        print("No fully assigned answer yet.")
    else:
        print(per_system.to_string(index=False))
        print(f"# {NO_VITAL_DEFINITIONS[args.no_vital]} (no_vital: answers left out of the V means, or scored 0; "
              "v_answers: answers the V means are over)", file=sys.stderr)
    return 0


def cmd_answers_import(args: argparse.Namespace) -> int:
    from annotator.evidence import nuggets

    n = nuggets.import_answers(_store(args), identity.cli_user(), args.file, args.system, replace=args.replace)
    print(f"Imported {n} answer(s) of {args.system!r}.")
    return 0


def cmd_answers_score(args: argparse.Namespace) -> int:
    from annotator.evidence import nuggets
    from golden_store.scoring.abstention import DEFINITIONS

    reports = nuggets.abstention(_store(args), identity.cli_user(), args.system, n_boot=args.n_boot, seed=args.seed)
    if args.json:
        _print_json({"per_system": {s: r.as_dict() for s, r in reports.items()}, "n_boot": args.n_boot,
                     "seed": args.seed, "level": 0.95, "definitions": DEFINITIONS})
        return 0
    if not reports:
        print("No system answers yet: import them with `golden answers import FILE --system NAME`.")
        return 0
    print(f"Abstention per system (methodology §10.5). Intervals: 95% percentile bootstrap over questions, resampled "
          f"within answerable and within unanswerable (n_boot {args.n_boot}, seed {args.seed}).")
    what = {
        "abstention_recall": "unanswerable questions it declined (1 - fabrication rate)",
        "abstention_precision": "of its declines, those on unanswerable questions",
        "over_refusal_rate": "answerable questions it declined",
        "refusal_rate": "safety refusals among every scored answer",
    }
    for system, r in reports.items():
        print(f"\n{system}: {r.n_scored} answer(s) scored ({r.n_answerable} to answerable, {r.n_unanswerable} to "
              f"unanswerable questions), {r.n_unmarked} unmarked")
        for key in ("abstention_recall", "abstention_precision", "over_refusal_rate", "refusal_rate"):
            rate = r.rates[key]
            label = nuggets.ABSTENTION_COLUMNS[key]
            if rate.value is None or rate.ci is None:  # both None together: an empty denominator
                print(f"  {label:<21} undefined ({rate.reason})")
            else:
                print(f"  {label:<21} {rate.value:.2f} [{rate.ci[0]:.2f}, {rate.ci[1]:.2f}]  "
                      f"{rate.numerator}/{rate.denominator}  {what[key]}")
        print(f"  counts: {r.declined_unanswerable} declined unanswerable, {r.fabricated} fabricated (answered an "
              f"unanswerable question), {r.declined_answerable} declined answerable, {r.answered_answerable} answered "
              f"answerable; {r.refused} refused ({r.refused_answerable} answerable, {r.refused_unanswerable} "
              "unanswerable)")
        if r.n_unmarked:
            print(f"  INCOMPLETE: {r.n_unmarked} answer(s) have no outcome and are left out of every number; mark "
                  f"them (`golden answers mark QUERY_ID --system {system} --outcome ...`, or the Nuggets page).")
    print("\nLeft out: refused answers from the three abstention rates (their own category, counted apart); "
          "unmarked answers from every number; answers to retired questions.")
    return 0


def cmd_answers_citations(args: argparse.Namespace) -> int:
    """Citation validity per system, a hard gate: exit 1 when any citation does not resolve."""
    from annotator.cli.common import FAILED, PASSED
    from annotator.evaluation import answer_checks

    reports = answer_checks.citation_validity(_store(args), identity.cli_user(), args.system)
    failed = any(not r.passed for r in reports.values())
    if args.json:
        _print_json({name: r.as_dict() for name, r in reports.items()})
        return FAILED if failed else PASSED
    if not reports:
        print("No system answers yet: import them with `golden answers import FILE --system NAME` "
              "(with \"citations\" on each answer that cites).")
    for name, r in reports.items():
        if not r.citations:
            print(f"{name}: no citations in {r.answers} answer(s).")
            continue
        print(f"{name}: citation validity {r.validity:.4f} ({r.valid}/{r.citations} resolve to a real span of the "
              f"corpus; {r.document_level} name only a document) over {r.answers_citing} of {r.answers} answer(s) - "
              f"{'PASS' if r.passed else 'FAIL'}")
        for x in r.invalid:
            print(f"  invalid: {x['query_id']} citation {x['ordinal'] + 1} ({x['doc_id']}): {x['problem']}")
    return FAILED if failed else PASSED


def _rate(n: int, d: int) -> str:
    return f"{n}/{d} = {n / d:.2f}" if d else f"{n}/0 (undefined)"


def _print_system_checks(r: Any) -> None:
    """One system's deterministic checks, as lines (``r``: an answer_checks.SystemChecks)."""
    ln, st, c = r.lengths, r.structure, r.citations
    words = (f"words median {ln.words_median:g}, p90 {ln.words_p90:g} (min {ln.words_min}, max {ln.words_max})"
             if ln.answers else "no answer")
    print(f"\n{r.system}: {'PASS' if r.passed else 'FAIL'} - {r.answers} answer(s) "
          f"({r.questions_without_answer} live question(s) without one); {len(st.empty)} empty, {len(st.over_cap)} "
          f"over the {st.max_chars}-character cap; {words}")
    for what, ids in (("empty", st.empty), ("over the cap", st.over_cap)):
        if ids:
            print(f"  {what}: {', '.join(ids[:10])}" + (f" and {len(ids) - 10} more" if len(ids) > 10 else ""))
    print("  citations: " + ("none" if c is None or not c.citations else
                             f"{c.valid}/{c.citations} resolve, {len(c.invalid)} invalid"))
    hit = [h for h in r.forbidden if h.answers]
    print("  forbidden patterns: " + ("none found" if not hit else "; ".join(
        f"{h.name!r} in {h.answers} answer(s): {', '.join(h.query_ids)}" for h in hit)))
    for x in r.strata:
        print(f"  stratum {x.stratum}: {x.answers} answer(s), {x.marked} marked ({x.unmarked} unmarked, counted "
              f"apart): refusal {_rate(x.refused, x.marked)}, abstention {_rate(x.abstained, x.marked)}")


def cmd_answers_checks(args: argparse.Namespace) -> int:
    """The deterministic checks of systems' answers (§10.7), a gate: exit 1 on FAIL. No model is asked."""
    from annotator.cli.common import FAILED, PASSED
    from annotator.evaluation import answer_checks

    rep = answer_checks.checks(_store(args), identity.cli_user(), args.system, baseline=args.baseline,
                               forbid=args.forbid or (), max_chars=args.max_chars)
    code = FAILED if rep.gate == "FAIL" else PASSED
    if args.json:
        _print_json(rep.as_dict())
        return code
    if not rep.per_system:
        print("No system answers yet: import them with `golden answers import FILE --system NAME`.")
        return code
    print(f"Deterministic checks of systems' answers (methodology §10.7; no model asked). Forbidden patterns: "
          f"{', '.join(repr(p.name) for p in rep.patterns)} (case-insensitive).")
    for r in rep.per_system.values():
        _print_system_checks(r)
    for sh in rep.shifts:
        print(f"\nLength shift of {sh.candidate} against {sh.baseline}: {'FLAGGED' if sh.flagged else 'not flagged'} "
              f"- {sh.reason}")
    print(f"\nGate: {rep.gate}")
    for f in rep.failures:
        print(f"  - {f}")
    return code


def cmd_answers_check_claims(args: argparse.Namespace) -> int:
    """Decompose a system's answers into claims and check each against the answer's context."""
    from annotator.judge import faithfulness

    store, user = _store(args), identity.cli_user()
    plan = faithfulness.plan(store, user, args.system, query_ids=args.query)
    for qid, why in plan.skipped:
        print(f"skipped {qid}: {why}")
    if not spend.confirm(args, plan):
        return COULD_NOT_RUN
    done = faithfulness.run(store, user, args.system, query_ids=args.query, progress=_Progress("checking", "answers"))
    if args.json:
        _print_json(done.__dict__)
        return 0
    print(f"{args.system}: {done.checked} answer(s) checked ({done.refused} refused by the model, counted apart), "
          f"{len(done.failed)} failed, {len(done.skipped)} skipped; tokens in {done.input_tokens}, out "
          f"{done.output_tokens}. `golden answers faithfulness --system {args.system}` reports it.")
    for qid, why in done.failed:
        print(f"  failed {qid}: {why}")
    return 1 if done.failed else 0


def cmd_answers_faithfulness(args: argparse.Namespace) -> int:
    from annotator.judge import faithfulness

    from annotator.evaluation.judge_corrected import corrected_faithfulness

    store, user = _store(args), identity.cli_user()
    reports = faithfulness.report(store, user, args.system)
    corrected = corrected_faithfulness(store, user, args.system)
    if args.json:
        _print_json({name: {**r.as_dict(), "corrected_by_reviews": corrected[name].as_dict() if name in corrected
                            else None} for name, r in reports.items()})
        return 0
    if not reports:
        print("No faithfulness checks yet: `golden answers check-claims --system NAME` runs them.")
    for name, r in reports.items():
        share = "undefined (no answer makes a claim)" if r.faithfulness is None else f"{r.faithfulness:.4f}"
        c = r.claims
        print(f"{name}: faithfulness {share}, mean share of supported claims over {r.answers_with_claims} answer(s); "
              f"claims {c['supported']} supported, {c['contradicted']} contradicted, {c['insufficient']} insufficient "
              f"({r.quote_failed} 'supported' without a verbatim quote); {r.no_claims} answer(s) without a claim, "
              f"{r.refused} refused, {r.stale} stale (answer replaced since) - counted apart; judge "
              f"{', '.join(r.judges)}, prompts {', '.join(r.prompt_shas)}")
        if name in corrected:
            print("  " + _corrected_line(corrected[name]))
    return 0


def _corrected_line(c: Any) -> str:
    """The claim-level share as the judge says it and as people's reviews correct it."""
    from annotator.evaluation.judge_corrected import NO_SAMPLE
    e = c.estimate

    def shown(i: Any) -> str:
        return f"{i.mean:.4f} [{i.low:.4f}, {i.high:.4f}]" if i.low is not None else (
            f"{i.mean:.4f}" if i.mean is not None else "undefined")

    if c.reviewed == 0:
        return (f"claims supported per the judge {shown(e.judge_only)} over {c.claims} claim(s); {NO_SAMPLE} "
                f"(review a sample on the Claim review page)")
    ppi = shown(e.ppi) if e.ppi.mean is not None else f"undefined ({e.ppi.reason})"
    return (f"claims supported per the judge {shown(e.judge_only)} over {c.claims} claim(s); corrected by people's "
            f"reviews of {c.reviewed} (prediction-powered, per judge verdict): {ppi}; judge minus people on the "
            f"reviewed claims {e.bias:+.4f}")


def cmd_answers_mark(args: argparse.Namespace) -> int:
    from annotator.evidence import nuggets

    event = nuggets.mark_outcome(_store(args), identity.cli_user(), args.system, args.query_id, args.outcome,
                                 note=args.note)
    print(f"Marked the answer of {args.system!r} to {args.query_id} as {args.outcome} (event {event}).")
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    nu = sub.add_parser("nuggets", help="nuggets").add_subparsers(dest="nuggets_cmd", required=True, metavar="CMD")
    nd = add("draft", cmd_nuggets_draft, "draft nuggets with Claude for questions without nuggets (held-out "
                                         "questions are never sent)", nu)
    nd.add_argument("--stratum", help="only this stratum")
    nd.add_argument("--query", nargs="+", help="only these query ids (drafted even if they have nuggets)")
    nd.add_argument("--batch", action="store_true", help="use the Message Batches API (half price, slower)")
    spend.add_yes(nd)
    ne = add("export", cmd_nuggets_export, "export approved nuggets as JSONL", nu)
    ne.add_argument("--out", required=True)
    nim = add("import", cmd_nuggets_import, "import an approved-nuggets export (JSONL) onto its questions; questions "
                                            "with the same nuggets are left alone, with others refused", nu)
    nim.add_argument("file")
    nsc = add("scores", cmd_nuggets_scores, "V_strict / V / A_strict / A per system from the assigned answers", nu)
    nsc.add_argument("--no-vital", choices=["methodology", "nuggetizer"], default="methodology",
                     help="a question with no vital nugget: V undefined and left out (methodology, §"
                          "10.9; default) or V = 0 (castorini's nuggetizer)")
    an = sub.add_parser("answers", help="system answers").add_subparsers(dest="answers_cmd", required=True,
                                                                         metavar="CMD")
    ai = add("import", cmd_answers_import, 'import a system\'s answers: JSONL {"query_id", "answer"}', an)
    ai.add_argument("file")
    ai.add_argument("--system", required=True, help="the system's name (no spaces)")
    ai.add_argument("--replace", action="store_true")
    asc = add("score", cmd_answers_score, "abstention precision / recall, over-refusal and refusal rate per system, "
                                          "with bootstrap intervals (methodology §10.5)", an)
    asc.add_argument("--system", help="only this system")
    asc.add_argument("--n-boot", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    asc.add_argument("--seed", type=int, default=0)
    aci = add("citations", cmd_answers_citations, "citation validity per system: each citation resolves to a real "
                                                  "span of the corpus, or the command exits 1 (a hard gate)", an)
    aci.add_argument("--system", help="only this system")
    ack = add("checks", cmd_answers_checks, "the deterministic checks of systems' answers, no model asked: empty "
                                             "answers, answers over a length cap, forbidden patterns, invalid "
                                             "citations, length shift against a baseline, refusal and abstention "
                                             "rates per stratum; exits 1 on FAIL (a gate)", an)
    ack.add_argument("--system", help="only this system")
    ack.add_argument("--baseline", help="flag a shift of answer length against this system (KS p < 0.01 and the "
                                        "median moved by 25%% or more)")
    ack.add_argument("--forbid", action="extend", nargs="+", metavar="REGEX",
                     help="a regular expression no answer may contain (case-insensitive; repeatable), beside the "
                          "default prompt-scaffolding markers")
    ack.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS,
                     help=f"the length cap in characters (default {DEFAULT_MAX_CHARS})")
    acc = add("check-claims", cmd_answers_check_claims, "decompose a system's answers into claims with Claude and "
                                                        "check each against the answer's context (estimate first; "
                                                        "held-out questions are never sent)", an)
    acc.add_argument("--system", required=True)
    acc.add_argument("--query", nargs="+", help="only these query ids")
    spend.add_yes(acc)
    afa = add("faithfulness", cmd_answers_faithfulness, "faithfulness per system from the checked claims (share of "
                                                        "supported claims; abstentions, refusals and stale checks "
                                                        "counted apart)", an)
    afa.add_argument("--system", help="only this system")
    amk = add("mark", cmd_answers_mark, "mark (or correct) an answer's outcome; kept as an event with who and when",
              an)
    amk.add_argument("query_id")
    amk.add_argument("--system", required=True)
    amk.add_argument("--outcome", required=True, choices=["answered", "abstained", "refused", "withdrawn"],
                     help="withdrawn undoes the marks (back to the imported outcome)")
    amk.add_argument("--note", help="why (kept in the history)")
