"""Scoring: score, chunking, compare, results export/trials."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from annotator.cli.common import COULD_NOT_RUN, GATE_EXIT, _print_json, _Progress, _store, _vdir, caller_cwd, identity
from golden_store.core.errors import GoldenError
from golden_store.core.progress import BYTES, Phase, step
from golden_store.scoring.cells import MIN_CELL_N


_SCORING_NUMPY = {
    # numpy's transparent-huge-page advice off: `golden score` fills a few hundred MB of fresh
    # arrays once; with the advice on, Linux's default THP defrag ("madvise") compacts memory
    # on those first touches: 0.4 s of kernel time per 10 M-line run (BENCHMARKS.md)
    "NUMPY_MADVISE_HUGEPAGE": "0",
    # one BLAS thread: scoring does no linear algebra, and OpenBLAS starting a thread per core
    # at import costs CPU time that a loaded machine has to find
    "OPENBLAS_NUM_THREADS": "1",
}


def _numpy_for_scoring() -> None:
    """Import numpy with the settings above (numpy's and OpenBLAS's own, read once at import;
    a value the user set is kept; none is passed on to what this process starts)."""
    if "numpy" in sys.modules:
        return
    ours = [k for k in _SCORING_NUMPY if k not in os.environ]
    os.environ.update({k: _SCORING_NUMPY[k] for k in ours})
    try:
        import numpy  # noqa: F401
    finally:
        for k in ours:
            del os.environ[k]


# The steps of `golden score` a terminal shows (a run of ten million lines takes seconds each)
READING_RUN = Phase("reading the run", BYTES)
PLACING_RUN = Phase("reading and placing the passage run", BYTES)
SCORING = Phase("scoring", "queries")
READING_AND_SCORING = Phase("reading and scoring the run", BYTES)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # the reader says so in its own words
        return 0


def cmd_score(args: argparse.Namespace) -> int:
    _numpy_for_scoring()
    progress = _Progress("score")
    from golden_store.scoring import evaluate_trec

    if bool(args.qrels) == bool(args.version):
        raise GoldenError("Give either --qrels FILE or --version NAME (not both).")
    if args.record and not args.version:
        raise GoldenError("--record needs --version: recorded results name the dataset version they were scored on.")
    _check_record_options(args)
    if args.tier and not args.version:
        raise GoldenError("--tier needs --version: a question's tier is recorded in the frozen version.")
    trec_opts = {"max_docs": args.max_docs, "judged_only": args.judged_only, "num_docs": args.num_docs}
    if args.labels != "human" and not args.version:
        raise GoldenError("--labels human+judge needs --version: the judge's labels are frozen in a version "
                          "(a qrels file is whatever labels it holds).")
    if args.version:
        if any(trec_opts.values()) or args.level is not None:
            raise GoldenError("-l, -M, -J and -N apply to --qrels scoring (a frozen version has its own rules).")
        from golden_store.scoring import evaluate, read_run
        from golden_store.versions import load_version

        gs = load_version(args.version, _vdir(args))
        from annotator.evaluation.compare_scope import tier_options

        only = tier_options(gs, args.tier)  # --tier: only that tier's questions, said in the output
        if _run_format(args) == "jsonl":  # passages: chunk labels derived from the version's spans (hit rule)
            with step(progress, _size(args.run), PLACING_RUN):
                run = _passage_run(gs, args.run)
            with step(progress, len(gs.queries), SCORING):
                res = evaluate(gs, run, args.measure, hit_rule=args.hit_rule, labels=args.labels, **only)
        elif args.hit_rule:
            raise GoldenError("--hit-rule applies to a passage run (JSONL); a TREC run names whole documents.")
        else:
            with step(progress, _size(args.run), READING_RUN):
                run = read_run(args.run)
            with step(progress, len(gs.queries), SCORING):
                res = evaluate(gs, run, args.measure, labels=args.labels, **only)
    else:
        if _run_format(args) == "jsonl" or args.hit_rule:
            raise GoldenError("A passage run (JSONL) is scored against a frozen version: --version NAME (its "
                              "passages get labels from the version's spans through the hit rule).")

        from golden_store.versions.qrels import qrels_level

        # one rule on both paths: binary measures count grade >= the qrels' level (a version's
        # is 2; an exported qrels file's is written beside it; else -l N or trec_eval's 1)
        level, level_from, level_notes = qrels_level(args.qrels, args.level)
        with step(progress, _size(args.run), READING_AND_SCORING):
            # health: the run's Judged@10 from the same ranking (one read of the run)
            res = evaluate_trec(args.qrels, args.run, args.measure, rel=level, health=True, **trec_opts)
        res.definitions["_relevance"] += f" (level {level}: {level_from})"
        for note in level_notes:
            print(f"warning: {note}", file=sys.stderr)
    if args.record:
        _record_scoring(args, res, gs, run)
    if args.json:
        _print_json(res.as_dict(per_query=args.per_query))
        return 0
    if args.per_query:
        for qid, row in res.per_query_items():
            for m in res.measures:
                print(f"{m}\t{qid}\t{row[m]:.4f}")
    for m in res.measures:
        ci = f"  [{res.ci95[m][0]:.4f}, {res.ci95[m][1]:.4f}]" if m in res.ci95 else ""
        print(f"{m}\tall\t{res.mean[m]:.4f}{ci}")
    print(f"# {res.n_queries} queries; {res.definitions['_queries']}", file=sys.stderr)
    print(f"# relevance: {res.definitions['_relevance']}", file=sys.stderr)
    if res.definitions.get("_scope"):
        print(f"# {res.definitions['_scope']}", file=sys.stderr)
    if res.labels is not None:
        print(f"# {labels_line(res.labels, res.judge_labels)}", file=sys.stderr)
    if res.definitions.get("hit_rule"):
        print(f"# passage run: hit rule {res.definitions['hit_rule']} ({_HIT_RULE_NOTE})", file=sys.stderr)
    if res.definitions.get("_units"):  # which labels a passage run's numbers used (a document grade is one unit)
        print(f"# {res.definitions['_units']}", file=sys.stderr)
    _print_scoring_notes(res)
    return 0


def labels_line(labels: str, judge: dict[str, Any] | None) -> str:
    """One line saying which labels a scoring's numbers are on (issue 27)."""
    if labels == "human" or judge is None:
        return "labels: human (people's labels only: evidence spans and final human grades)"

    def names(key: str, width: int | None = None) -> str:
        return ", ".join(v[:width] if width else v for v in judge[key]) or "none"

    return (f"labels: human+judge (a person's grade wins where there is one): scored on {judge['n_passages']} judge "
            f"labels from model {names('models')} rubric sha {names('rubric_shas', 12)} calibration "
            f"{names('calibration_ids')}")


# ---- passage runs (JSONL) and the chunking report card ---------------------------------------

_HIT_RULE_NOTE = ("a passage's grade for a question is the highest grade among the version's labeled spans it "
                  "hits: evidence spans grade 3, judged passages their grade")


def _run_format(args: argparse.Namespace, path: str | None = None) -> str:
    """``--format`` when given, else jsonl for a .jsonl file, else trec."""
    fmt = getattr(args, "format", None)
    if fmt:
        return fmt
    return "jsonl" if str(path or args.run).lower().endswith(".jsonl") else "trec"


def _passage_run(gs: Any, path: str, *, purpose: str = "scored") -> Any:
    """A JSONL passage run read and placed against the frozen version (the reader `golden
    runs import` uses), as the passage frame scoring takes: ranked by the run's rank."""
    from golden_store.corpus.passage_runs import read_version_passages

    got = read_version_passages(gs, path, purpose=purpose)
    if got.skipped_lines:
        some = ", ".join(got.skipped_queries[:5]) + (" ..." if len(got.skipped_queries) > 5 else "")
        print(f"# {path}: {got.skipped_lines} line(s) for {len(got.skipped_queries)} query id(s) not in "
              f"{gs.name} left out: {some}", file=sys.stderr)
    rows = got.rows
    return rows.assign(score=-rows["rank"].astype(float))[["query_id", "doc_id", "start", "end", "score"]]


_CHUNKING_DEFINITIONS = {
    "budget": "passages are taken in rank order until the next one would overflow the budget (k floats, methodology "
              "§5.1): a chunker with larger chunks gets fewer of them",
    "recall": "|E ∩ R| / |E|: share of the question's evidence-span tokens (E) among the tokens taken (R)",
    "precision": "|E ∩ R| / |R|, R counted with repeats (overlapping passages pay for the same token twice)",
    "precision_omega": "the precision had every passage of the run holding an evidence token been taken (the "
                       "chunking's ceiling, §5.2), over the chunks the run shows (any question, any rank)",
    "iou": "|E ∩ R| / |E ∪ R| (Chroma's formulation, §5.2)",
    "k": "passages taken within the budget", "tokens": "tokens taken (with repeats)",
    "omega_coverage": "share of evidence tokens inside some chunk of the run: below 1, Precision_Ω is over a "
                      "partial chunking (list deeper rankings to see every chunk)",
    "queries": "answerable questions with evidence spans; one with no passage in the run scores 0 and counts; "
               "unanswerable questions and questions without evidence spans are left out",
    "sd": "population standard deviation over questions (np.std, as Chroma's code)",
}


def cmd_chunking(args: argparse.Namespace) -> int:
    """The §5.4 report card of each chunker's passage run at a fixed token budget."""
    _numpy_for_scoring()
    from golden_store.scoring.chunking import TOKENIZER, budget_card
    from golden_store.scoring.golden import unanswerable_ids
    from golden_store.versions import load_version

    if args.budget < 1:
        raise GoldenError(f"--budget must be a positive number of tokens, got {args.budget}.")
    gs = load_version(args.version, _vdir(args))
    docs = dict(zip(gs.documents["doc_id"], gs.documents["raw_text"]))
    negatives = unanswerable_ids(gs)
    sp = gs.spans
    excerpts = [(q, d, int(s), int(e)) for q, d, s, e in zip(sp["query_id"], sp["doc_id"], sp["start"], sp["end"])
                if q not in negatives]
    with_spans = {q for q, *_ in excerpts}
    names = [Path(r).stem for r in args.runs]
    names = names if len(set(names)) == len(names) else list(args.runs)
    cards: dict[str, dict[str, Any]] = {}
    for name, path in zip(names, args.runs):
        if _run_format(args, path) != "jsonl":
            raise GoldenError(f"{path}: golden chunking reads JSONL passage runs (a .jsonl file, or --format jsonl).")
        rows = _passage_run(gs, path, purpose="reported")
        run: dict[str, list[tuple[str, int, int]]] = {}
        for r in rows.itertuples(index=False):
            run.setdefault(r.query_id, []).append((r.doc_id, int(r.start), int(r.end)))
        card: dict[str, Any] = {**budget_card(docs, excerpts, run, args.budget),
                                "not_scored": {"unanswerable": sorted(set(run) & negatives),
                                               "no_evidence_spans": sorted(set(run) - with_spans - negatives)}}
        if not args.per_query:
            card.pop("per_query")
        cards[name] = card
    if args.json:
        _print_json({"dataset_version": gs.manifest.get("dataset_version"), "budget_tokens": args.budget,
                     "tokenizer": TOKENIZER, "definitions": _CHUNKING_DEFINITIONS, "runs": cards})
        return 0
    print(f"Chunking report card on {gs.name}, budget {args.budget} tokens (mean ± SD over questions)")
    head = ("run", "recall", "precision", "Precision_Ω", "IoU", "k", "tokens", "chunks", "chunk tok", "Ω cover")
    width = max(len(head[0]), *(len(n) for n in cards))
    print(f"{head[0]:<{width}}  " + "  ".join(f"{h:>13}" for h in head[1:5]) + "  "
          + "  ".join(f"{h:>9}" for h in head[5:]))
    for name, c in cards.items():
        f = c["figures"]
        ms = [f"{f[k]['mean']:.3f} ± {f[k]['sd']:.3f}" for k in ("recall", "precision", "precision_omega", "iou")]
        tail = [f"{f['k']['mean']:.2f}", f"{f['tokens']['mean']:.1f}", str(c["chunks"]), f"{c['mean_chunk_tokens']:.1f}",
                f"{c['omega_coverage']:.3f}"]
        print(f"{name:<{width}}  " + "  ".join(f"{m:>13}" for m in ms) + "  " + "  ".join(f"{t:>9}" for t in tail))
        if args.per_query:
            for q in c["per_query"]:
                print(f"  {q['query_id']}\trecall {q['recall']:.3f}\tprecision {q['precision']:.3f}\t"
                      f"Precision_Ω {q['precision_omega']:.3f}\tIoU {q['iou']:.3f}\tk {q['k']}\ttokens {q['tokens']}")
    print(f"# tokens: {TOKENIZER}; a passage costs the tokens it overlaps", file=sys.stderr)
    for key in ("budget", "queries", "precision", "precision_omega", "sd"):
        print(f"# {key}: {_CHUNKING_DEFINITIONS[key]}", file=sys.stderr)
    for name, c in cards.items():
        notes = [f"{c['n_queries']} question(s) scored"]
        if c["missing"]:
            notes.append(f"{len(c['missing'])} with no passage in the run (scored 0)")
        if c["first_over_budget"]:
            notes.append(f"{len(c['first_over_budget'])} whose first passage alone exceeds the budget (k = 0)")
        for why, qids in c["not_scored"].items():
            if qids:
                notes.append(f"{len(qids)} {why.replace('_', ' ')} question(s) of the run left out")
        if c["omega_coverage"] < 1:
            notes.append(f"Ω coverage {c['omega_coverage']:.3f}: Precision_Ω is over the chunks the run shows")
        print(f"# {name}: " + "; ".join(notes), file=sys.stderr)
    return 0


_RECORD_OPTIONS = {"trial": "--trial", "replace": "--replace", "git_sha": "--git-sha", "config": "--config",
                   "judged": "--judged", "judge_model": "--judge-model", "rubric_sha": "--rubric-sha"}


def _check_record_options(args: argparse.Namespace) -> None:
    """Provenance options describe a recorded evaluation: refused without --record, and
    --config / --config-sha are one value given two ways."""
    given = [flag for dest, flag in _RECORD_OPTIONS.items() if getattr(args, dest) not in (None, False, [])]
    if given and not args.record:
        raise GoldenError(f"{', '.join(given)} describe(s) a recorded evaluation: add --record EVALUATION_ID.")
    if args.config and args.config_sha:
        raise GoldenError("Give --config FILE (hashed here) or --config-sha SHA, not both.")
    if args.trial is not None and args.trial < 0:
        raise GoldenError(f"--trial is a whole number >= 0 (got {args.trial}).")


def _record_scoring(args: argparse.Namespace, res: Any, gs: Any, run: Any) -> None:
    """``golden score --record``: the per-query rows with their provenance (METHODOLOGY §14.3,
    §14.4): the run's Judged@10 per query, git sha, config sha, trial, for the measures
    named with --judged the judge model and rubric sha, and the definitions the numbers were
    scored under (run level, hit rule, depth of ``run`` as scored, the judge labels' models and
    rubric shas: ``scored_definitions``). All or nothing."""
    from annotator.evaluation import provenance
    from golden_store.live.results import record_evaluation, scored_definitions
    from golden_store.scoring.measures import parse_measures

    notes = []
    git_sha = args.git_sha
    if git_sha is None:
        cwd = caller_cwd()
        git_sha, note = provenance.git_head(cwd) if cwd else (
            None, "no git sha recorded: the studio ran the command away from your checkout; give one with --git-sha")
        notes.append(note)
    config_sha = provenance.file_sha256(args.config) if args.config else args.config_sha
    judged = []
    for name in args.judged or []:
        resolved = name if name in res.measures else str(parse_measures([name], rel=2)[0])
        if resolved not in res.measures:
            raise GoldenError(f"--judged {name}: not among the scored measures ({', '.join(res.measures)}).")
        judged.append(resolved)
    judge_model, rubric_sha = args.judge_model, args.rubric_sha
    if judged:
        judge_model, rubric_sha, note = provenance.judge_of(gs.manifest, judge_model, rubric_sha)
        notes.append(note)
        if not (judge_model and rubric_sha):
            raise GoldenError(f"{', '.join(judged)} is judged by a model: give --judge-model and --rubric-sha (the "
                              f"version's manifest has no single judge calibration to take them from). Nothing "
                              f"was recorded.")
    elif judge_model or rubric_sha:
        raise GoldenError("--judge-model / --rubric-sha name the judge of the measures given with --judged MEASURE; "
                          "none was given (deterministic measures record no judge).")
    trial = args.trial or 0
    n = record_evaluation(_store(args), args.record, res.per_query, dataset_version=args.version, strata=gs.strata,
                          corpus_digest=gs.manifest.get("corpus_digest"), config_sha=config_sha,
                          system=args.system, git_sha=git_sha, trial=trial,
                          judged_fraction=res.judged.per_query if res.judged is not None else None,
                          judge_model=judge_model, rubric_sha=rubric_sha, judged_metrics=judged,
                          replace=args.replace, labels=res.labels or "human", **scored_definitions(res, run))
    for note in notes:
        if note:
            print(f"# {note}", file=sys.stderr)
    print(f"recorded {n} rows as evaluation {args.record!r} trial {trial}"
          f"{' (replacing the trial)' if args.replace else ''}; git {git_sha[:12] if git_sha else 'none'}, "
          f"config {config_sha[:12] if config_sha else 'none'}, labels {res.labels or 'human'}", file=sys.stderr)


def _print_scoring_notes(res: Any) -> None:
    """What a scoring left out and whether its run is under-judged, on stderr: on screen, not
    in a footnote (METHODOLOGY §3.6)."""
    for why, qids in res.left_out.items():
        shown = ", ".join(qids[:10]) + (", ..." if len(qids) > 10 else "")
        print(f"# {len(qids)} {why} question(s) with labels left out (retrieval measures are undefined for them; "
              f"score them with golden answers score): {shown}", file=sys.stderr)
    if res.judged is not None:
        warning = res.judged.warning()
        print(f"warning: {warning}" if warning else f"# judged@{res.judged.k} {res.judged.mean:.3f}", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    from annotator.evaluation import evaluations
    from annotator.evaluation.compare_scope import scope_options
    from golden_store.scoring.compare import format_comparison

    store = _store(args)
    options, scope = scope_options(store, args.a, args.b, versions_dir=_vdir(args), held_out_only=args.held_out_only,
                                   tier=args.tier, by=args.by, since=args.since)
    # the Results page's function: the same verdict, interval and notes (re-baseline, judged@10)
    c = evaluations.compare(store, identity.cli_user(), args.a, args.b, metrics=args.measure,
                            min_meaningful=args.min_meaningful, correction=args.correction, min_n=args.min_n,
                            allow_different_definitions=args.allow_different_definitions, **options)
    if scope:
        c["scope"] = scope
    if args.json:
        _print_json(c)
    else:
        print(format_comparison(dict(c), args.a, args.b))
        print(f"labels: {args.a} {c['labels'][args.a]}; {args.b} {c['labels'][args.b]}")
        print(f"gate: {c['gate']}")
        for n in c["notes"]:
            print(f"warning: {n}", file=sys.stderr)
    return GATE_EXIT[c["gate"]]


def cmd_results_export(args: argparse.Namespace) -> int:
    from golden_store.live.results import export_results

    n = export_results(_store(args), Path(args.out))
    print(f"Wrote {n} result rows to {args.out}")
    return 0


def cmd_results_import(args: argparse.Namespace) -> int:
    """A results export read back (evaluations moved from one store to another, e.g. a CI
    runner's into the team's); the same file again changes nothing."""
    from annotator.integration import dataset_import

    rep = dataset_import.import_results(_store(args, create=True), identity.cli_user(), args.file)
    if args.json:
        _print_json(rep)
    else:
        print(f"Results import: {len(rep['added'])} evaluation(s) added ({', '.join(rep['added']) or '-'}), "
              f"{len(rep['unchanged'])} already recorded with the same results.")
    return 0


def cmd_results_trials(args: argparse.Namespace) -> int:
    from golden_store.live.results import trial_provenance, trial_rows
    from golden_store.scoring.trials import format_trials, trials_report

    store = _store(args)
    rows = trial_rows(store, args.evaluation_id)
    try:
        rep = trials_report(rows, threshold=args.pass_threshold, metrics=args.measure, top=max(args.top, 0))
    except ValueError as e:
        raise GoldenError(str(e)) from None
    prov = trial_provenance(store, args.evaluation_id)
    notes = [f"the trials differ in {field}: are they repeats of one configuration?"
             for field in ("git_sha", "config_sha", "metric_impl_sha", "judge_model", "rubric_sha")
             if len({p[field] for p in prov}) > 1]
    if args.json:
        _print_json({"evaluation_id": args.evaluation_id, **rep, "provenance": prov, "notes": notes})
        return 0
    print(format_trials(rep, args.evaluation_id))
    for p in prov:
        print(f"# trial {p['trial']}: {p['ts']}  git {p['git_sha'] or 'none'}  config {p['config_sha'] or 'none'}  "
              f"judge {p['judge_model'] or '-'}  labels {p['labels']}  judged@10 "
              f"{'n/a' if p['judged_fraction'] is None else format(p['judged_fraction'], '.3f')}", file=sys.stderr)
    for n in notes:
        print(f"warning: {n}", file=sys.stderr)
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    sc = add("score", cmd_score, "score a TREC run against qrels or a frozen version, or a JSONL passage run "
                                 "against a frozen version (chunk labels from its spans)")
    sc.add_argument("--qrels", help="TREC qrels file (qid 0 docid grade) or BEIR qrels TSV (query-id, corpus-id, "
                                    "score, with the header)")
    sc.add_argument("--version", help="a frozen version (its derived qrels)")
    sc.add_argument("--run", required=True, help="TREC run file (qid Q0 docid rank score tag), or a JSONL passage "
                                                 "run (needs --version): query_id, rank or score, doc_id, and start/end "
                                                 "offsets or the passage text")
    sc.add_argument("--format", choices=["trec", "jsonl"],
                    help="the run's format (default: jsonl for a .jsonl file, else trec)")
    sc.add_argument("--hit-rule", default=None,
                    help="passage runs: when a passage hits a labeled span (any_overlap, min_overlap(0.5), "
                         "contains_span; default the version's)")
    sc.add_argument("-m", "--measure", action="append", required=True,
                    help="ir_measures name (nDCG@10, AP, RR@10, P@5, R@100, Bpref, Judged@10, Rprec, SetF, IPrec@0.1, "
                         "infAP, ERR@10, RBP(p=0.8), ...) or trec_eval name (map, P.5,10, ndcg_cut_10, all_trec); "
                         "repeatable")
    sc.add_argument("-l", "--level", type=int, metavar="N",
                    help="trec_eval -l: a grade of N or more is relevant, for measures that do not say rel= (default: "
                         "the level golden export wrote beside the qrels file, NAME.scoring.json, else 1)")
    sc.add_argument("-M", "--max-docs", type=int, metavar="N",
                    help="trec_eval -M: only the first N documents of each ranking count")
    sc.add_argument("-J", "--judged-only", action="store_true",
                    help="trec_eval -J: drop unjudged documents from every ranking before scoring")
    sc.add_argument("-N", "--num-docs", type=int, default=0, metavar="N",
                    help="trec_eval -N: documents in the collection (only utility's d term uses it)")
    sc.add_argument("--labels", choices=["human", "human+judge"], default="human",
                    help="which labels of the --version to score on: human (default: evidence spans and people's "
                         "final grades) or human+judge (also the judge's grade of every passage no person graded; "
                         "the output says how many judge labels and from which model, rubric and calibration)")
    sc.add_argument("--per-query", action="store_true", help="also print per-query values")
    sc.add_argument("--tier", choices=["smoke", "regression", "release"],
                    help="score only the questions of this CI tier (as the frozen --version records it)")
    sc.add_argument("--record", metavar="EVALUATION_ID",
                    help="store the per-query scores in eval_results as this evaluation (needs --version)")
    sc.add_argument("--system", help="system name to record with the evaluation")
    sc.add_argument("--config-sha", help="hash of the pipeline config to record with the evaluation")
    sc.add_argument("--config", metavar="FILE",
                    help="the pipeline config file: its sha256 (of the bytes, as sha256sum prints it) is recorded as "
                         "config_sha (instead of --config-sha)")
    sc.add_argument("--git-sha", help="the code's git commit to record (default: git rev-parse HEAD of the current "
                                      "directory's checkout; none outside a checkout, said on stderr)")
    sc.add_argument("--trial", type=int, metavar="K",
                    help="record this scoring as repeat K (default 0) of the evaluation id (methodology §10.8; see "
                         "golden results trials)")
    sc.add_argument("--replace", action="store_true",
                    help="replace the rows of an already recorded (evaluation id, trial) (refused otherwise)")
    sc.add_argument("--judged", action="append", metavar="MEASURE",
                    help="this measure's values come from a model judge: its rows record --judge-model and "
                         "--rubric-sha (repeatable)")
    sc.add_argument("--judge-model", help="judge model id of the --judged measures (default: the version's judge "
                                          "calibration when it names exactly one)")
    sc.add_argument("--rubric-sha", help="sha of the judge's rubric (default: from the version's judge calibration)")
    ck = add("chunking", cmd_chunking, "the chunking report card (methodology §5.4) of chunkers' JSONL passage runs "
                                       "at a fixed token budget: recall, precision, Precision_Omega, IoU, mean +- SD")
    ck.add_argument("runs", nargs="+", metavar="RUN", help="JSONL passage run, one per chunker")
    ck.add_argument("--version", required=True, help="a frozen version (its evidence spans are the excerpts)")
    ck.add_argument("--budget", type=int, required=True, metavar="N",
                    help="tokens each question may take; passages in rank order until the next would overflow it")
    ck.add_argument("--format", choices=["jsonl"], help="read every RUN as JSONL (default: told by .jsonl)")
    ck.add_argument("--per-query", action="store_true", help="also print each question's figures")
    cp = add("compare", cmd_compare, "paired comparison of two recorded evaluations, per stratum, with the gate "
                                     "verdict (exit 0 PASS or WARN, 1 FAIL, 2 could not compare)")
    cp.set_defaults(error_exit=COULD_NOT_RUN)
    cp.add_argument("a", help="baseline evaluation id")
    cp.add_argument("b", help="candidate evaluation id")
    cp.add_argument("-m", "--measure", action="append", help="only these metrics")
    cp.add_argument("--min-meaningful", type=float, default=0.02,
                    help="a credible drop at least this large fails the gate; a smaller one warns (default 0.02)")
    cp.add_argument("--min-n", type=int, default=MIN_CELL_N, metavar="N",
                    help=f"a cell (overall, stratum, cohort) needs at least N paired questions for a verdict; "
                         f"smaller ones say 'too few' (default {MIN_CELL_N}: the smallest n at which an exact "
                         f"sign-flip test can reach p < 0.05)")
    cp.add_argument("--allow-different-definitions", action="store_true",
                    help="compare even when the two were scored under different hit rules (refused otherwise: the "
                         "delta would be the rule's, not the system's); the difference is then a warning")
    cp.add_argument("--correction", choices=["bh", "bonferroni", "none"], default="bh",
                    help="multiple-comparison correction over every verdict (metric x overall, each stratum, each "
                         "cohort): bh Benjamini-Hochberg (default), bonferroni, none")
    cp.add_argument("--held-out-only", action="store_true",
                    help="pair only the questions held out in the evaluations' frozen version (confirm a winner)")
    cp.add_argument("--by", choices=["source", "date"],
                    help="also compare per cohort: the question's source, or its creation month")
    cp.add_argument("--since", metavar="YYYY-MM-DD",
                    help="date cohorts: questions created before this date vs since it (implies --by date)")
    cp.add_argument("--tier", choices=["smoke", "regression", "release"],
                    help="pair only the questions of this tier (as the frozen version records it)")
    rs = sub.add_parser("results", help="evaluation results").add_subparsers(dest="results_cmd", required=True,
                                                                            metavar="CMD")
    rx = add("export", cmd_results_export, "export eval_results to Parquet", rs)
    rx.add_argument("--out", required=True)
    ri = add("import", cmd_results_import, "import a results export (Parquet) back into this store; evaluations it "
                                           "holds already with the same results are left alone, with others refused",
             rs)
    ri.add_argument("file")
    rt = add("trials", cmd_results_trials, "repeats of one recorded evaluation (methodology §10.8): pass@1 averaged "
                                           "over trials, pass^k (all k trials pass), per-item variance", rs)
    rt.add_argument("evaluation_id")
    rt.add_argument("--pass-threshold", type=float, default=1.0, metavar="T",
                    help="a trial passes an item when its value >= T (default 1.0: binary success metrics)")
    rt.add_argument("-m", "--measure", action="append", help="only these metrics (as recorded)")
    rt.add_argument("--top", type=int, default=10, metavar="N", help="highest-variance items to list (default 10)")
