"""The ``golden`` command line. Errors go to stderr, one clear message, exit status 1
(2 for usage errors); ``--json`` prints data for scripts."""

from __future__ import annotations

import argparse
import getpass
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from golden_store.core.errors import GoldenError
from golden_store.core.paths import default_db_path, versions_dir_for

if TYPE_CHECKING:
    from golden_store.db.store import Store


class _OnFirstUse:
    """A module imported when one of its names is first used. Each command loads only what
    it needs: ``golden score`` runs on numpy and Arrow without DuckDB, pandas or the store,
    and ``golden --help`` lists every command without importing any of them."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


context = _OnFirstUse("annotator.context")
corpus_import = _OnFirstUse("annotator.corpus_import")
demo = _OnFirstUse("annotator.demo")
identity = _OnFirstUse("annotator.identity")
query_editing = _OnFirstUse("annotator.query_editing")
versioning = _OnFirstUse("annotator.versioning")


def _app_entry() -> Path | None:
    """The installed Streamlit entry (found without importing the UI layer)."""
    import importlib.util

    spec = importlib.util.find_spec("app_pages")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "streamlit_app.py"


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int, *_: object) -> None:
        if not self.tty or total <= 0:
            return
        width = 30
        filled = int(width * done / total)
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _store(args: argparse.Namespace, *, create: bool = False) -> Store:
    """The live store. Only commands that bring data in may create it."""
    return context.get_store(args.db, create=create)


def _vdir(args: argparse.Namespace) -> Path:
    """Versions folder: frozen versions are plain files, readable while the app holds the store."""
    return versions_dir_for(Path(args.db) if args.db else default_db_path())


def _live_corpus_digest(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The live store's corpus digest for drift warnings, or why it could not be read."""
    from golden_store.live.documents import store_corpus_digest

    try:
        return store_corpus_digest(_store(args)), None
    except GoldenError as exc:
        return None, str(exc).split(":")[0]


# ---- commands -------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    store = _store(args, create=True)
    info = {"db": str(store.path), "schema_version": store.schema_version(),
            "versions_dir": str(versions_dir_for(store.path))}
    _print_json(info) if args.json else print(f"Store ready at {store.path} (schema v{info['schema_version']}).")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    res = demo.load_demo(_store(args, create=True), identity.cli_user(), _Progress("reading demo corpus"),
                         workflows=args.full)
    if args.json:
        _print_json(res)
    elif args.full:
        w = res["workflows"]
        print(
            f"Demo loaded: {res['documents']} documents, {res['queries']} queries, "
            f"{res['evidence_spans']} evidence spans, rubric v{res['rubric_version']}; {w['runs']} runs, "
            f"{w['pool_items']} pool items, calibration round {w['round']}, nuggets for {w['nugget_questions']} "
            f"questions, {w['transcripts']} transcripts, judge calibration {w['calibration']}, version {w['version']}.\n"
            f"Next: golden serve (every page has data)"
        )
    else:
        print(
            f"Demo loaded: {res['documents']} documents, {res['queries']} queries, "
            f"{res['evidence_spans']} evidence spans, rubric v{res['rubric_version']}.\n"
            f"Next: golden freeze demo.v1  (then golden export demo.v1 --format trec --out ./demo-trec)"
        )
    return 0


def cmd_corpus_import(args: argparse.Namespace) -> int:
    rep = corpus_import.import_paths(
        _store(args, create=True), identity.cli_user(), args.paths, replace=args.replace, progress=_Progress("importing (bytes read)")
    )
    if args.json:
        _print_json({"added": rep.added, "replaced": rep.replaced, "unchanged": rep.unchanged,
                     "corpus_digest": rep.corpus_digest})
    else:
        print(f"Corpus import: {rep.summary()}")
    return 0


def cmd_queries_import(args: argparse.Namespace) -> int:
    res = query_editing.import_path(_store(args, create=True), identity.cli_user(), args.file, update=args.update)
    _print_json(res) if args.json else print(
        f"Queries: {res['added']} added, {res['updated']} updated, {res['unchanged']} unchanged."
    )
    return 0


def cmd_strata_add(args: argparse.Namespace) -> int:
    query_editing.add_stratum(_store(args), identity.cli_user(), args.name, args.description)
    print(f"Stratum {args.name!r} added.")
    return 0


def cmd_strata_list(args: argparse.Namespace) -> int:
    from golden_store.live.queries import list_strata, strata_counts

    store = _store(args)
    counts = strata_counts(store)
    rows = [{**s, "queries": counts.get(s["name"], 0)} for s in list_strata(store)]
    if args.json:
        _print_json(rows)
    else:
        for r in rows:
            print(f"{r['name']:<12} {r['queries']:>5}  {r['description']}")
    return 0


def cmd_freeze(args: argparse.Namespace) -> int:
    if args.sign:
        from annotator import signing

        res = signing.freeze_signed(_store(args), identity.cli_user(), args.name, args.sign, note=args.note or "",
                                    hit_rule=args.hit_rule, progress=_Progress("freezing"))
    else:
        res = versioning.freeze(_store(args), identity.cli_user(), args.name, note=args.note or "",
                                hit_rule=args.hit_rule, progress=_Progress("freezing"))
    m = res.manifest
    if args.json:
        from golden_store.versions import thaw

        _print_json({"name": res.name, "path": str(res.path), "manifest": thaw(m)})
    else:
        print(f"Frozen {res.name} at {res.path}: {m['n_queries']} queries, {m['n_spans']} spans, "
              f"{m['n_judgments']} judgments; data_digest {m['data_digest']}"
              + ("; signed" if args.sign else ""))
        print("(data_digest identifies the content: equal for two freezes of the same labels and corpus; "
              "the manifest's content_digest also covers name, note and time)")
        for reason in versioning.left_out(m):
            print(f"Note: {reason}. (The Adjudication page is in the app: golden serve.)")
    return 0


def cmd_keygen(args: argparse.Namespace) -> int:
    from annotator import signing

    priv, pub, text = signing.keygen(args.path)
    if args.json:
        _print_json({"private_key": str(priv), "public_key_file": str(pub), "public_key": text})
    else:
        print(f"Private key: {priv} (keep it secret; sign with: golden freeze NAME --sign {priv})\n"
              f"Public key:  {pub}\n  {text}\n"
              f"Verify with: GOLDEN_VERIFY_KEY={pub} golden verify NAME  (or golden verify NAME --key {pub})")
    return 0


def cmd_versions(args: argparse.Namespace) -> int:
    rows = versioning.list_versions(identity.cli_user(), _vdir(args))
    if args.json:
        _print_json(rows)
    elif not rows:
        print("No frozen versions yet. Create one with: golden freeze NAME")
    else:
        for r in rows:
            if r.get("error"):
                print(f"{r['name']:<20} ERROR {r['error']}")
            else:
                print(f"{r['name']:<20} {r['built_at']}  {r['n_queries']!s:>6} queries  "
                      f"{str(r['data_digest'])[:19]}  {'signed  ' if r.get('signed') else ''}{r['note'] or ''}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    if args.name is None:
        return _verify_live(args)
    live, why_not = _live_corpus_digest(args)
    if args.key:
        from annotator import signing

        rep = signing.verify(identity.cli_user(), _vdir(args), args.name, live_corpus_digest=live,
                             verify_key=args.key)
    else:
        rep = versioning.verify(identity.cli_user(), _vdir(args), args.name, live_corpus_digest=live)
    if why_not and not args.json:
        print(f"note: live corpus not compared ({why_not})", file=sys.stderr)
    if args.json:
        _print_json({"name": rep.name, "ok": rep.ok, "problems": rep.problems, "warnings": rep.warnings,
                     "checked": rep.checked})
    else:
        for w in rep.warnings:
            print(f"warning: {w}", file=sys.stderr)
        if rep.ok:
            checked = ", ".join(f"{n} {k}" for k, n in rep.checked.items() if k != "signature")
            signed = "; signature by the verify key checked" if rep.checked.get("signature") else ""
            print(f"{rep.name}: OK (all file hashes match; re-checked {checked}{signed})")
        else:
            print(f"{rep.name}: FAILED verification", file=sys.stderr)
            for p in rep.problems:
                print(f"  - {p}", file=sys.stderr)
    return 0 if rep.ok else 1


def _verify_live(args: argparse.Namespace) -> int:
    """`golden verify` with no name: are the live store's labels still on the corpus?"""
    problems = versioning.live_problems(_store(args), identity.cli_user())
    if args.json:
        _print_json({"ok": not problems, "problems": problems})
    elif problems:
        print(f"{len(problems)} label(s) no longer sit on the corpus (freeze refuses until fixed):", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
    else:
        print("Live store OK: every quote and judgment sits on the current corpus.")
    return 0 if not problems else 1


def cmd_export(args: argparse.Namespace) -> int:
    paths = versioning.export_version(identity.cli_user(), _vdir(args), args.name, args.format, args.out)
    _print_json([str(p) for p in paths]) if args.json else print(
        "Wrote " + ", ".join(str(p) for p in paths)
    )
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from golden_store.versions import format_diff

    d = versioning.diff(identity.cli_user(), _vdir(args), args.a, args.b)
    _print_json(d) if args.json else print(format_diff(d))
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    from golden_store.offline_resolution import resolve_file

    counts = resolve_file(Path(args.corpus), Path(args.quotes), Path(args.out), threshold=args.threshold,
                          progress=_Progress("resolving"))
    total = sum(counts.values())
    print(f"{total} quotes: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" -> {args.out}",
          file=sys.stderr)
    if args.json:
        _print_json(counts)
    return 0


def cmd_survival(args: argparse.Namespace) -> int:
    from golden_store.offline_resolution import read_text_folder, span_survival
    from golden_store.versions import load_version

    version = load_version(args.version, _vdir(args))
    rep = span_survival(version, read_text_folder(Path(args.parsed)), threshold=args.threshold)
    if args.json:
        _print_json(rep)
        return 0
    print(f"span survival of {rep['version']} in {args.parsed} (fuzzy threshold {rep['threshold']:g})")
    print(f"{'stratum':<12} {'spans':>6} {'exact':>7} {'+fuzzy':>7} {'lost':>7}")
    for name, r in [*rep["strata"].items(), ("ALL", rep["overall"])]:
        print(f"{name:<12} {r['spans']:>6} {r['exact']:>7.3f} {r['exact_or_fuzzy']:>7.3f} {r['lost']:>7.3f}")
    if rep["documents_missing_from_parse"]:
        print("documents missing from the parse: " + ", ".join(rep["documents_missing_from_parse"]))
    return 0


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


def cmd_score(args: argparse.Namespace) -> int:
    _numpy_for_scoring()
    from golden_store.scoring import evaluate_trec

    if bool(args.qrels) == bool(args.version):
        raise GoldenError("Give either --qrels FILE or --version NAME (not both).")
    if args.record and not args.version:
        raise GoldenError("--record needs --version: recorded results name the dataset version they were scored on.")
    _check_record_options(args)
    if args.tier and not args.version:
        raise GoldenError("--tier needs --version: a question's tier is recorded in the frozen version.")
    trec_opts = {"max_docs": args.max_docs, "judged_only": args.judged_only, "num_docs": args.num_docs}
    if args.version:
        if any(trec_opts.values()) or args.level is not None:
            raise GoldenError("-l, -M, -J and -N apply to --qrels scoring (a frozen version has its own rules).")
        from golden_store.scoring import evaluate, read_run
        from golden_store.versions import load_version

        gs = load_version(args.version, _vdir(args))
        from annotator.compare_scope import tier_options

        only = tier_options(gs, args.tier)  # --tier: only that tier's questions, said in the output
        if _run_format(args) == "jsonl":  # passages: chunk labels derived from the version's spans (hit rule)
            res = evaluate(gs, _passage_run(gs, args.run), args.measure, hit_rule=args.hit_rule, **only)
        elif args.hit_rule:
            raise GoldenError("--hit-rule applies to a passage run (JSONL); a TREC run names whole documents.")
        else:
            res = evaluate(gs, read_run(args.run), args.measure, **only)
    else:
        from golden_store.scoring.health import judged_health

        if _run_format(args) == "jsonl" or args.hit_rule:
            raise GoldenError("A passage run (JSONL) is scored against a frozen version: --version NAME (its "
                              "passages get labels from the version's spans through the hit rule).")

        res = evaluate_trec(args.qrels, args.run, args.measure, rel=args.level, **trec_opts)
        res.judged = judged_health(args.qrels, args.run, max_docs=args.max_docs)
    if args.record:
        _record_scoring(args, res, gs)
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
    if res.definitions.get("_scope"):
        print(f"# {res.definitions['_scope']}", file=sys.stderr)
    if res.definitions.get("hit_rule"):
        print(f"# passage run: hit rule {res.definitions['hit_rule']} ({_HIT_RULE_NOTE})", file=sys.stderr)
    _print_scoring_notes(res)
    return 0


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
    "budget": "passages are taken in rank order until the next one would overflow the budget (k floats, METHODOLOGY "
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
    cards = {}
    for name, path in zip(names, args.runs):
        if _run_format(args, path) != "jsonl":
            raise GoldenError(f"{path}: golden chunking reads JSONL passage runs (a .jsonl file, or --format jsonl).")
        rows = _passage_run(gs, path, purpose="reported")
        run: dict[str, list[tuple[str, int, int]]] = {}
        for r in rows.itertuples(index=False):
            run.setdefault(r.query_id, []).append((r.doc_id, int(r.start), int(r.end)))
        card = budget_card(docs, excerpts, run, args.budget)
        card["not_scored"] = {"unanswerable": sorted(set(run) & negatives),
                              "no_evidence_spans": sorted(set(run) - with_spans - negatives)}
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


def _record_scoring(args: argparse.Namespace, res: Any, gs: Any) -> None:
    """``golden score --record``: the per-query rows with their provenance (METHODOLOGY §14.3,
    §14.4): the run's Judged@10 per query, git sha, config sha, trial and, for the measures
    named with --judged, the judge model and rubric sha. All or nothing."""
    from annotator import provenance
    from golden_store.live.results import record_evaluation
    from golden_store.scoring.measures import parse_measures

    notes = []
    git_sha = args.git_sha
    if git_sha is None:
        git_sha, note = provenance.git_head(Path.cwd())
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
                          replace=args.replace)
    for note in notes:
        if note:
            print(f"# {note}", file=sys.stderr)
    print(f"recorded {n} rows as evaluation {args.record!r} trial {trial}"
          f"{' (replacing the trial)' if args.replace else ''}; git {git_sha[:12] if git_sha else 'none'}, "
          f"config {config_sha[:12] if config_sha else 'none'}", file=sys.stderr)


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
    from annotator import evaluations
    from annotator.compare_scope import scope_options
    from golden_store.scoring.compare import format_comparison

    store = _store(args)
    options, scope = scope_options(store, args.a, args.b, versions_dir=_vdir(args), held_out_only=args.held_out_only,
                                   tier=args.tier, by=args.by, since=args.since)
    # the Results page's function: the same verdict, interval and notes (re-baseline, judged@10)
    c = evaluations.compare(store, identity.cli_user(), args.a, args.b, metrics=args.measure,
                            min_meaningful=args.min_meaningful, correction=args.correction, **options)
    if scope:
        c["scope"] = scope  # type: ignore[typeddict-unknown-key]
    if args.json:
        _print_json(c)
    else:
        print(format_comparison(c, args.a, args.b))
        for n in c["notes"]:
            print(f"warning: {n}", file=sys.stderr)
    verdicts = [e["verdict"] for e in c["metrics"].values()]
    return 1 if "FAIL" in verdicts else 0


def cmd_results_export(args: argparse.Namespace) -> int:
    from golden_store.live.results import export_results

    n = export_results(_store(args), Path(args.out))
    print(f"Wrote {n} result rows to {args.out}")
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
              f"judge {p['judge_model'] or '-'}  judged@10 "
              f"{'n/a' if p['judged_fraction'] is None else format(p['judged_fraction'], '.3f')}", file=sys.stderr)
    for n in notes:
        print(f"warning: {n}", file=sys.stderr)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from golden_store.db.store_copy import migrate_store

    rep = migrate_store(args.db if args.db else default_db_path())
    if args.json:
        _print_json({"store": rep.location, "engine": rep.engine, "from_version": rep.before,
                     "to_version": rep.after, "applied": [{"version": v, "description": d} for v, d in rep.applied]})
    else:
        print(rep.summary())
    return 0


def cmd_copy(args: argparse.Namespace) -> int:
    from golden_store.db.store import Store
    from golden_store.db.store_copy import copy_checked, peek_version

    before = peek_version(args.src)
    with Store.open(args.src, create=False) as src:
        if before is not None and 0 < before < src.schema_version():
            print(f"(source {src.location()} migrated from schema version {before} to {src.schema_version()} first)",
                  file=sys.stderr)
        with Store.open(args.dst, create=True) as dst:
            checks = copy_checked(src, dst)
            where = (src.location(), src.engine, dst.location(), dst.engine)
            src_versions = versions_dir_for(src.path)
    tables = [c for c in checks if c.table != "(event sequence)"]
    seq = next(c.source_rows for c in checks if c.table == "(event sequence)")
    if args.json:
        _print_json({"source": where[0], "destination": where[2], "event_seq": seq,
                     "tables": {c.table: {"rows": c.dest_rows, "digest": c.dest_digest} for c in tables}})
        return 0
    width = max(len(c.table) for c in tables)
    print(f"Copied {where[0]} ({where[1]}) -> {where[2]} ({where[3]}): {len(tables)} tables, "
          f"{sum(c.dest_rows for c in tables)} rows, event sequence at {seq}.")
    for c in tables:
        print(f"  {c.table:<{width}}  {c.dest_rows:>9}  {c.dest_digest[:16]}")
    print("Checked: row count and digest of every table equal on both sides.")
    print(f"Frozen versions are files, not rows: they stay in {src_versions}; the new store "
          "finds them there when GOLDEN_VERSIONS names that folder (or copy it beside the new store).")
    return 0


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


def _people(raw: str) -> list[str]:
    return [p.strip() for p in raw.split(",") if p.strip()]


def cmd_rounds_start(args: argparse.Namespace) -> int:
    from annotator import rounds

    if args.evidence:
        from annotator import evidence_rounds

        rid = evidence_rounds.start(_store(args), identity.cli_user(), _people(args.annotators), args.n, args.seed,
                                    args.note)
    else:
        rid = rounds.start_calibration(_store(args), identity.cli_user(), _people(args.annotators), args.n,
                                       args.seed, args.note)
    _print_json({"round_id": rid}) if args.json else print(
        f"Calibration round {rid} started for {args.annotators}: their Judge queues show its items first.")
    return 0


def cmd_rounds_split(args: argparse.Namespace) -> int:
    from annotator import rounds

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
    from annotator import agreement

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
           if chosen["chosen_by"] else "the methodology's default (METHODOLOGY §3.7)")
    print(f"Agreement bar: {bar.describe()} - {who}")
    return 0


def cmd_rounds_list(args: argparse.Namespace) -> int:
    from annotator import rounds

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
    from annotator import agreement

    store, user = _store(args), identity.cli_user()
    rep = agreement.compute(store, user, args.round)
    summary = rep.group.summary()
    bar, chosen = agreement.bar(store, user)
    check = bar.check(summary)
    summary["bar"] = {**bar.as_dict(), **chosen, **check.as_dict()}
    if args.json:
        _print_json({**summary, "pairs": rep.pair_table().to_dict(orient="records"),
                     "per_round": rep.per_round.to_dict(orient="records"),
                     "per_stratum": rep.per_stratum.to_dict(orient="records")})
        return 0
    if not summary["n_units"]:
        print("No item has been graded by two annotators yet.")
        return 0

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    print(f"{summary['n_units']} items graded by 2+ of {len(summary['annotators'])} annotators")
    print(f"kappa binary {f(summary['kappa_binary'])} ({summary['reading_binary']})  "
          f"kappa graded unweighted {f(summary['kappa_unweighted'])} ({summary['reading_unweighted']})  "
          f"linear {f(summary['kappa_graded'])} ({summary['reading_graded']})  "
          f"quadratic {f(summary['kappa_quadratic'])}  "
          f"alpha ordinal {f(summary['alpha_ordinal'])}  raw {f(summary['raw_agreement'])}")
    print(f"bar ({bar.describe()}): {check.text}")
    for p in rep.group.pairs:
        print(f"  {p.a} x {p.b}: n={p.n} kappa_binary={p.kappa_binary:.3f} unweighted={p.kappa_unweighted:.3f} "
              f"linear={p.kappa_linear:.3f} quadratic={p.kappa_quadratic:.3f} raw={p.raw:.3f}")
    return 0


def cmd_nuggets_draft(args: argparse.Namespace) -> int:
    from annotator import nuggets

    store, user = _store(args), identity.cli_user()
    rows = nuggets.status(store, user)
    targets = [r["query_id"] for r in rows
               if (not args.query or r["query_id"] in args.query)
               and (not args.stratum or r["stratum"] == args.stratum)
               and (args.query or r["n_nuggets"] == 0)]
    if not targets:
        print("No question to draft (questions that already have nuggets are skipped unless named with --query).")
        return 0
    outs = nuggets.draft_many(store, user, targets, batch=args.batch, progress=_Progress("drafting"))
    summary = nuggets.summarize(outs)
    if args.json:
        _print_json({**summary, "per_question": [{"query_id": o.query_id, "outcome": o.outcome, "added": o.added,
                                                  "flagged": o.flagged, "message": o.message} for o in outs]})
        return 0
    for o in outs:
        print(f"{o.query_id}: {o.outcome}" + (f" - {o.message}" if o.message else ""))
    cost = f"${summary['cost_usd']:.4f}" if summary["cost_usd"] is not None else "unknown"
    print(f"{summary['questions']} question(s): {summary['outcomes']}; {summary['nuggets_added']} nugget(s) added, "
          f"{summary['flagged']} flagged; tokens in {summary['input_tokens']}, out {summary['output_tokens']}, "
          f"cache read {summary['cache_read_tokens']}; cost {cost}" + (" (batch price)" if args.batch else ""))
    return 0


def cmd_nuggets_export(args: argparse.Namespace) -> int:
    from annotator import nuggets

    rows = nuggets.export_rows(_store(args), identity.cli_user())
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    print(f"Wrote {len(rows)} approved nugget(s) to {args.out}.")
    return 0


def cmd_nuggets_scores(args: argparse.Namespace) -> int:
    from annotator import nuggets

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
    from annotator import nuggets

    n = nuggets.import_answers(_store(args), identity.cli_user(), args.file, args.system, replace=args.replace)
    print(f"Imported {n} answer(s) of {args.system!r}.")
    return 0


def cmd_answers_score(args: argparse.Namespace) -> int:
    from annotator import nuggets
    from golden_store.scoring.abstention import DEFINITIONS

    reports = nuggets.abstention(_store(args), identity.cli_user(), args.system, n_boot=args.n_boot, seed=args.seed)
    if args.json:
        _print_json({"per_system": {s: r.as_dict() for s, r in reports.items()}, "n_boot": args.n_boot,
                     "seed": args.seed, "level": 0.95, "definitions": DEFINITIONS})
        return 0
    if not reports:
        print("No system answers yet: import them with `golden answers import FILE --system NAME`.")
        return 0
    print(f"Abstention per system (METHODOLOGY 10.5). Intervals: 95% percentile bootstrap over questions, resampled "
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
            if rate.value is None:
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


def cmd_answers_mark(args: argparse.Namespace) -> int:
    from annotator import nuggets

    event = nuggets.mark_outcome(_store(args), identity.cli_user(), args.system, args.query_id, args.outcome,
                                 note=args.note)
    print(f"Marked the answer of {args.system!r} to {args.query_id} as {args.outcome} (event {event}).")
    return 0


def cmd_transcripts_import(args: argparse.Namespace) -> int:
    from annotator import transcripts
    from golden_store.core.textin import read_text

    read_text(args.file)  # the importers' one text rule, with the line of a bad byte, before the import reads it

    n = transcripts.import_file(_store(args), identity.cli_user(), args.file, progress=_Progress("transcripts"))
    print(f"Imported {n} transcript(s).")
    return 0


def cmd_transcripts_sample(args: argparse.Namespace) -> int:
    from annotator import transcripts

    store, user = _store(args), identity.cli_user()
    draw_id, items = transcripts.draw(store, user, args.n, args.seed)
    rows = [transcripts.transcript(store, user, it) for it in items]
    if args.json:
        _print_json({"draw_id": draw_id, "seed": args.seed, "items": [
            {k: r[k] for k in ("item_id", "evaluation_id", "query_id", "trial", "stratum", "source", "failure_type",
                               "question", "in_golden_set", "trace_id")} for r in rows]})
    elif not rows:
        print("No unreviewed failure left to draw.")
    for r in rows if not args.json else []:
        print(f"{r['item_id']}  [{r['stratum']}]  {r['failure_type'] or '-'}  {r['question'][:80]}")
    return 0


def cmd_transcripts_summary(args: argparse.Namespace) -> int:
    from annotator import transcripts

    rows = transcripts.summary(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
        return 0
    for r in rows:
        rate = "-" if r["grader_failure_rate"] is None else f"{r['grader_failure_rate']:.2f}"
        print(f"{r['stratum']:<14} failures {r['failures']:>4}  reviewed {r['reviewed']:>4}  grader-failure rate "
              f"{rate}  headroom {r['headroom']:.3f}" + ("  SATURATED" if r["saturated"] else ""))
    return 0


def cmd_users_add(args: argparse.Namespace) -> int:
    password = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif not args.no_password:
        password = getpass.getpass(f"Password for {args.username}: ")
    user = identity.create_user(_store(args, create=True), identity.cli_user(), args.username, args.role,
                                password=password, display_name=args.name, passwordless=args.no_password)
    print(f"User {user.username} added with roles {', '.join(sorted(r.value for r in user.roles))}.")
    return 0


def cmd_users_list(args: argparse.Namespace) -> int:
    rows = identity.list_users(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
    else:
        for r in rows:
            print(f"{r['username']:<30} {','.join(r['roles']):<30} {'disabled' if r['disabled'] else ''}")
    return 0


def _serve_location(given: str | None) -> str:
    """The store the app will open, as GOLDEN_DB: a PostgreSQL URL as given (a team store;
    ``Path().resolve()`` made it a DuckDB file inside a ``postgresql:`` folder, so the app
    served a new empty store in single-user mode), else the DuckDB file's absolute path."""
    from golden_store.core.paths import is_postgres_url

    raw = str(given or default_db_path())
    if is_postgres_url(raw):
        from golden_store.db.postgres import normalize_url

        return normalize_url(raw)
    return str(Path(raw).resolve())


def _has_accounts(db: str) -> bool:
    """Whether the store has an enabled account. Anything that keeps us from telling (no
    store yet, in use, unreachable) counts as no: the safe answer binds to loopback."""
    from golden_store.core.paths import is_postgres_url

    if not is_postgres_url(db) and not Path(db).exists():
        return False
    try:
        from golden_store.live.users import count_users

        return count_users(context.get_store(db, create=False)) > 0
    except GoldenError:
        return False
    finally:
        context.close_all()  # the app opens the store itself: DuckDB allows one process


DEFAULT_PORT = 8501

# Streamlit settings of a served studio, passed by `golden serve` as flags (so they hold
# wherever it is started from) and kept in .streamlit/config.toml for `streamlit run app.py`
# (a test checks the two agree). Why each:
# - client.toolbarMode viewer: no "Deploy" button or developer menu for anyone.
# - server.fileWatcherType none: the watcher is for editing the app's code. At the end of every
#   script run it resolved the path of every imported module (thousands: pandas, pyarrow,
#   altair...) on the server's event loop, 0.2-0.3 s during which the finished page waited
#   to be sent; a served studio's code does not change under it (issue 19).
# - runner.postScriptGC false: after every script run Streamlit forced a full garbage
#   collection, which walks every live object of the process (the cached team-scale figures
#   included) while holding the GIL: another 0.2-0.4 s on every page and every key's rerun at
#   team scale. Python's own collector still runs as objects are allocated; memory is freed
#   by reference counting as before (the server's peak is measured in the benchmark).
SERVER_OPTIONS = {"client.toolbarMode": "viewer", "server.fileWatcherType": "none", "runner.postScriptGC": "false"}


def server_flags() -> list[str]:
    """:data:`SERVER_OPTIONS` as ``streamlit run`` flags."""
    return [x for k, v in SERVER_OPTIONS.items() for x in (f"--{k}", v)]


def _serve_port(flag: int | None) -> int:
    """--port, else $STREAMLIT_SERVER_PORT (Streamlit's own variable), else 8501."""
    if flag is not None:
        return flag
    raw = os.environ.get("STREAMLIT_SERVER_PORT", "").strip()
    if not raw:
        return DEFAULT_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise GoldenError(f"STREAMLIT_SERVER_PORT={raw!r} is not a port number (1-65535).")
    return int(raw)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run Streamlit in place of this process (exec), so a signal to `golden serve` reaches
    the server itself: no orphan keeps serving and holding the store lock. With no account
    the app is in single-user mode (admin for whoever reaches it), so it listens on
    127.0.0.1 only, whatever --host says."""
    entry = _app_entry()
    if entry is None or not entry.exists():
        raise GoldenError("The app is not installed (package app_pages is missing); reinstall with pip install -e .")
    db = _serve_location(args.db)
    host = args.host
    if host not in ("127.0.0.1", "localhost", "::1") and not _has_accounts(db):
        print(f"golden: no accounts yet (single-user mode), so the app listens on 127.0.0.1 only, not {host}; "
              "add an account (golden users add NAME --role admin) to serve other machines.", file=sys.stderr)
        host = "127.0.0.1"
    port = _serve_port(args.port)
    env = dict(os.environ, GOLDEN_DB=db)
    cmd = [sys.executable, "-m", "streamlit", "run", str(entry), "--server.port", str(port),
           "--server.address", host, "--server.headless", "true", "--browser.gatherUsageStats", "false",
           *server_flags()]
    context.close_all()
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execve(sys.executable, cmd, env)  # does not return
    return subprocess.call(cmd, env=env)


# ---- parser -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS,
                        help="store file (default: $GOLDEN_DB or ./golden.duckdb)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print data as JSON")

    p = argparse.ArgumentParser(
        prog="golden", parents=[common],
        description="Golden-set curation studio: corpus, queries, frozen versions, exports.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn, help_: str, parser=sub) -> argparse.ArgumentParser:
        sp = parser.add_parser(name, help=help_, parents=[common], description=help_)
        sp.set_defaults(func=fn)
        return sp

    add("init", cmd_init, "create (or migrate) the store")
    add("migrate", cmd_migrate, "upgrade the store (--db: a DuckDB file or postgresql:// URL) to this code's schema; "
                                "prints the versions before and after")
    cpy = add("copy", cmd_copy, "copy a whole store, every event, into a new store on either engine (DuckDB file or "
                                "postgresql:// URL), checked table by table by row counts and digests")
    cpy.add_argument("src", help="the store to copy (left unchanged, but migrated if older than this code)")
    cpy.add_argument("dst", help="a new store: a DuckDB file path, or an empty PostgreSQL database's URL")
    dm = add("demo", cmd_demo, "load the demo project into an empty store")
    dm.add_argument("--full", action="store_true",
                    help="also fill every workflow, as the app's demo button does: runs, a pool, a calibration "
                         "round with disagreements, nuggets and answers, transcripts, a judge calibration, "
                         "a frozen version demo.v0")

    c = sub.add_parser("corpus", help="corpus commands").add_subparsers(dest="corpus_cmd", required=True, metavar="CMD")
    ci = add("import", cmd_corpus_import, "import .txt/.md/.html/.jsonl documents (files or folders)", c)
    ci.add_argument("paths", nargs="+", metavar="PATH")
    ci.add_argument("--replace", action="store_true", help="allow changing documents that already exist")

    q = sub.add_parser("queries", help="query commands").add_subparsers(dest="queries_cmd", required=True, metavar="CMD")
    qi = add("import", cmd_queries_import, "import queries from CSV or JSONL", q)
    qi.add_argument("file")
    qi.add_argument("--update", action="store_true", help="record new revisions for existing ids")

    s = sub.add_parser("strata", help="strata commands").add_subparsers(dest="strata_cmd", required=True, metavar="CMD")
    sa = add("add", cmd_strata_add, "add a stratum", s)
    sa.add_argument("name")
    sa.add_argument("--description", required=True)
    add("list", cmd_strata_list, "list strata with query counts", s)

    f = add("freeze", cmd_freeze, "freeze the live store into an immutable version")
    f.add_argument("name")
    f.add_argument("--note", default="")
    f.add_argument("--hit-rule", default=None,
                   help="how a span maps onto a retrieved unit, recorded in the manifest: any_overlap "
                        "(default), min_overlap(0.5), contains_span")
    f.add_argument("--sign", metavar="KEYFILE",
                   help="sign the version with this Ed25519 private key (make one with golden keygen)")
    kg = add("keygen", cmd_keygen, "make an Ed25519 key pair for signing frozen versions (PATH and PATH.pub)")
    kg.add_argument("path", metavar="PATH")
    add("versions", cmd_versions, "list frozen versions")
    v = add("verify", cmd_verify, "re-hash a version and re-check it against its corpus; with no NAME, "
                                   "check the live store's labels against the current corpus")
    v.add_argument("name", nargs="?")
    v.add_argument("--key", metavar="PUBKEY",
                   help="trusted public key (the .pub file or its ed25519:... text): the version must be signed "
                        "by it (default: $GOLDEN_VERIFY_KEY)")
    e = add("export", cmd_export, "export a version (TREC qrels, BEIR layout, JSONL)")
    e.add_argument("name")
    e.add_argument("--format", required=True, choices=["trec", "beir", "jsonl"])
    e.add_argument("--out", required=True)
    d = add("diff", cmd_diff, "what changed between two versions")
    d.add_argument("a")
    d.add_argument("b")

    r = add("resolve", cmd_resolve, "resolve quotes (JSONL) to corpus spans")
    r.add_argument("--corpus", required=True, help="folder of .txt/.md files (doc id = file stem) or a store file")
    r.add_argument("--quotes", required=True, help='JSONL: {"quote_id", "quote", "doc_id"?} per line')
    r.add_argument("--out", required=True, help="JSONL output, one line per quote")
    r.add_argument("--threshold", type=float, default=90.0, help="fuzzy score threshold (default 90)")
    sv_ = add("survival", cmd_survival, "span survival of a version's evidence in another parser's output")
    sv_.add_argument("--version", required=True)
    sv_.add_argument("--parsed", required=True, help="folder of parsed .txt/.md files (doc id = file stem)")
    sv_.add_argument("--threshold", type=float, default=90.0)

    sc = add("score", cmd_score, "score a TREC run against qrels or a frozen version, or a JSONL passage run "
                                 "against a frozen version (chunk labels from its spans)")
    sc.add_argument("--qrels", help="TREC qrels file (qid 0 docid grade)")
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
                    help="trec_eval -l: a grade of N or more is relevant, for measures that do not say rel= (default 1)")
    sc.add_argument("-M", "--max-docs", type=int, metavar="N",
                    help="trec_eval -M: only the first N documents of each ranking count")
    sc.add_argument("-J", "--judged-only", action="store_true",
                    help="trec_eval -J: drop unjudged documents from every ranking before scoring")
    sc.add_argument("-N", "--num-docs", type=int, default=0, metavar="N",
                    help="trec_eval -N: documents in the collection (only utility's d term uses it)")
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
                    help="record this scoring as repeat K (default 0) of the evaluation id (METHODOLOGY §10.8; see "
                         "golden results trials)")
    sc.add_argument("--replace", action="store_true",
                    help="replace the rows of an already recorded (evaluation id, trial) (refused otherwise)")
    sc.add_argument("--judged", action="append", metavar="MEASURE",
                    help="this measure's values come from a model judge: its rows record --judge-model and "
                         "--rubric-sha (repeatable)")
    sc.add_argument("--judge-model", help="judge model id of the --judged measures (default: the version's judge "
                                          "calibration when it names exactly one)")
    sc.add_argument("--rubric-sha", help="sha of the judge's rubric (default: from the version's judge calibration)")
    ck = add("chunking", cmd_chunking, "the chunking report card (METHODOLOGY 5.4) of chunkers' JSONL passage runs "
                                       "at a fixed token budget: recall, precision, Precision_Omega, IoU, mean +- SD")
    ck.add_argument("runs", nargs="+", metavar="RUN", help="JSONL passage run, one per chunker")
    ck.add_argument("--version", required=True, help="a frozen version (its evidence spans are the excerpts)")
    ck.add_argument("--budget", type=int, required=True, metavar="N",
                    help="tokens each question may take; passages in rank order until the next would overflow it")
    ck.add_argument("--format", choices=["jsonl"], help="read every RUN as JSONL (default: told by .jsonl)")
    ck.add_argument("--per-query", action="store_true", help="also print each question's figures")
    cp = add("compare", cmd_compare, "paired comparison of two recorded evaluations, per stratum, with the gate "
                                     "verdict (exit 1 on FAIL)")
    cp.add_argument("a", help="baseline evaluation id")
    cp.add_argument("b", help="candidate evaluation id")
    cp.add_argument("-m", "--measure", action="append", help="only these metrics")
    cp.add_argument("--min-meaningful", type=float, default=0.02)
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
    rt = add("trials", cmd_results_trials, "repeats of one recorded evaluation (METHODOLOGY §10.8): pass@1 averaged "
                                           "over trials, pass^k (all k trials pass), per-item variance", rs)
    rt.add_argument("evaluation_id")
    rt.add_argument("--pass-threshold", type=float, default=1.0, metavar="T",
                    help="a trial passes an item when its value >= T (default 1.0: binary success metrics)")
    rt.add_argument("-m", "--measure", action="append", help="only these metrics (as recorded)")
    rt.add_argument("--top", type=int, default=10, metavar="N", help="highest-variance items to list (default 10)")

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
                    help="graded figure the bar reads (default kappa_unweighted, METHODOLOGY §3.7; alpha_ordinal "
                         "is for rounds of three or more annotators)")
    rb.add_argument("--threshold", type=float, help="graded threshold (default 0.6 for kappa, 0.667 for alpha)")
    rb.add_argument("--note", help="why (required when moving off the methodology's bar)")
    ag = add("agreement", cmd_agreement, "inter-annotator agreement on the grades (kappa, alpha), per pair")
    ag.add_argument("--round", help="only this round's labels")

    nu = sub.add_parser("nuggets", help="nuggets").add_subparsers(dest="nuggets_cmd", required=True, metavar="CMD")
    nd = add("draft", cmd_nuggets_draft, "draft nuggets with Claude for questions without nuggets (held-out "
                                         "questions are never sent)", nu)
    nd.add_argument("--stratum", help="only this stratum")
    nd.add_argument("--query", nargs="+", help="only these query ids (drafted even if they have nuggets)")
    nd.add_argument("--batch", action="store_true", help="use the Message Batches API (half price, slower)")
    ne = add("export", cmd_nuggets_export, "export approved nuggets as JSONL", nu)
    ne.add_argument("--out", required=True)
    nsc = add("scores", cmd_nuggets_scores, "V_strict / V / A_strict / A per system from the assigned answers", nu)
    nsc.add_argument("--no-vital", choices=["methodology", "nuggetizer"], default="methodology",
                     help="a question with no vital nugget: V undefined and left out (methodology, METHODOLOGY "
                          "10.9; default) or V = 0 (castorini's nuggetizer)")
    an = sub.add_parser("answers", help="system answers").add_subparsers(dest="answers_cmd", required=True,
                                                                         metavar="CMD")
    ai = add("import", cmd_answers_import, 'import a system\'s answers: JSONL {"query_id", "answer"}', an)
    ai.add_argument("file")
    ai.add_argument("--system", required=True, help="the system's name (no spaces)")
    ai.add_argument("--replace", action="store_true")
    asc = add("score", cmd_answers_score, "abstention precision / recall, over-refusal and refusal rate per system, "
                                          "with bootstrap intervals (METHODOLOGY 10.5)", an)
    asc.add_argument("--system", help="only this system")
    asc.add_argument("--n-boot", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    asc.add_argument("--seed", type=int, default=0)
    amk = add("mark", cmd_answers_mark, "mark (or correct) an answer's outcome; kept as an event with who and when",
              an)
    amk.add_argument("query_id")
    amk.add_argument("--system", required=True)
    amk.add_argument("--outcome", required=True, choices=["answered", "abstained", "refused", "withdrawn"],
                     help="withdrawn undoes the marks (back to the imported outcome)")
    amk.add_argument("--note", help="why (kept in the history)")

    tr = sub.add_parser("transcripts", help="failure transcripts").add_subparsers(dest="transcripts_cmd",
                                                                                 required=True, metavar="CMD")
    ti = add("import", cmd_transcripts_import, "import evaluation transcripts (JSONL), all or nothing", tr)
    ti.add_argument("file")
    tsm = add("sample", cmd_transcripts_sample, "draw failures to review, stratified, reproducible with --seed; "
                                                 "draws do not repeat until the failures are exhausted", tr)
    tsm.add_argument("--n", type=int, default=10)
    tsm.add_argument("--seed", type=int, default=0)
    add("summary", cmd_transcripts_summary, "per stratum: failures, reviewed, grader-failure rate, headroom", tr)

    u = sub.add_parser("users", help="user accounts").add_subparsers(dest="users_cmd", required=True, metavar="CMD")
    ua = add("add", cmd_users_add, "add a local account", u)
    ua.add_argument("username")
    ua.add_argument("--role", action="append", required=True,
                    choices=["annotator", "lead", "engineer", "reviewer", "admin"])
    ua.add_argument("--name", help="display name")
    ua.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    ua.add_argument("--no-password", action="store_true", help="no password (OIDC sign-in only)")
    add("list", cmd_users_list, "list accounts", u)

    sv = add("serve", cmd_serve, "start the Streamlit app on this store")
    sv.add_argument("--port", type=int, default=None,
                    help=f"port to listen on (default: $STREAMLIT_SERVER_PORT, else {DEFAULT_PORT})")
    sv.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: with no accounts the app grants admin "
                         "to whoever reaches it; add accounts before serving on 0.0.0.0)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one command. Output into a pipe whose reader has gone (`golden … | head`) ends
    quietly with status 141, as a Unix tool stopped by SIGPIPE, not with a traceback."""
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at exit
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that flush is quiet too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    args.db = getattr(args, "db", None)
    args.json = getattr(args, "json", False)
    try:
        return int(args.func(args) or 0)
    except GoldenError as exc:
        print(f"golden: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("golden: interrupted", file=sys.stderr)
        return 130
    finally:
        if "annotator.context" in sys.modules:  # only a command that opened the store imported it
            context.close_all()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
