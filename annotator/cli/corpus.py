"""What goes into the live store: corpus import, queries import, strata."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli import spend
from annotator.cli.common import COULD_NOT_RUN, _print_json, _Progress, _store, corpus_import, identity, query_editing


def cmd_corpus_import(args: argparse.Namespace) -> int:
    rep = corpus_import.import_paths(
        _store(args, create=True), identity.cli_user(), args.paths, replace=args.replace, progress=_Progress("corpus import")
    )
    if args.json:
        _print_json({"added": rep.added, "replaced": rep.replaced, "unchanged": rep.unchanged,
                     "corpus_digest": rep.corpus_digest})
    else:
        print(f"Corpus import: {rep.summary()}")
    return 0


def cmd_import_beir(args: argparse.Namespace) -> int:
    """``golden import-beir DIR``: a BEIR folder (corpus, queries, qrels of one split) in one
    command, checked whole before anything is written (annotator/integration/beir_import.py says why one
    command rather than the three per-file ones)."""
    from annotator.integration import beir_import

    rep = beir_import.import_beir(
        _store(args, create=True), identity.cli_user(), args.dir, split=args.split, stratum=args.stratum,
        grade_map=args.map, source=args.source, name=args.name, update=args.update, replace=args.replace,
        skip_unknown=args.skip_unknown, again=args.again, progress=_Progress("BEIR import"))
    _print_json(rep.as_dict()) if args.json else print(rep.summary())
    return 0


def cmd_queries_import(args: argparse.Namespace) -> int:
    res = query_editing.import_path(_store(args, create=True), identity.cli_user(), args.file, update=args.update,
                                    unhold_reason=args.unhold, default_stratum=args.stratum,
                                    progress=_Progress("queries import"))
    _print_json(res) if args.json else print(
        f"Queries: {res['added']} added, {res['updated']} updated, {res['unchanged']} unchanged."
        + (f" Taken out of the held-out set: {', '.join(res['unheld'])}." if res.get("unheld") else "")
    )
    return 0


def cmd_queries_draft(args: argparse.Namespace) -> int:
    """Claude proposes questions about one document (estimate first, then confirmed); each
    excerpt is checked verbatim; ``--accept`` adds the usable, non-compound ones as synthetic
    queries with their excerpts as evidence."""
    from annotator.evidence import question_drafts

    store, user = _store(args), identity.cli_user()
    plan = question_drafts.plan(store, user, args.doc_id, n=args.n)
    if not spend.confirm(args, plan):
        return COULD_NOT_RUN
    res = question_drafts.propose(store, user, args.doc_id, n=args.n)
    picks = [i for i, p in enumerate(res.proposals) if p.usable and not p.compound] if args.accept else []
    added = question_drafts.accept(store, user, res, picks) if picks else []
    usage = res.job_usage()
    if args.json:
        _print_json({"doc_id": res.doc_id, "outcome": res.outcome, "model": res.model, "prompt_sha": res.prompt_sha,
                     "estimate": {"lines": plan.lines(), "usd": plan.usd, "caches": plan.estimate.caches},
                     "usage": usage.as_dict(), "added": added,
                     "proposals": [{"question": p.question, "stratum": p.stratum, "compound": p.compound,
                                    "accepted": [ex for ex, _ in p.accepted], "rejected": p.rejected}
                                   for p in res.proposals]})
        return 0
    if res.outcome == "refusal":
        print("The model declined this document (counted as a refusal).")
    for i, p in enumerate(res.proposals, 1):
        flags = ("" if p.usable else "  [no verbatim excerpt]") + ("  [compound: asks two things]" if p.compound else "")
        print(f"{i}. [{p.stratum}] {p.question}{flags}")
        for ex, _ in p.accepted:
            print(f"     verbatim: {ex}")
        for ex, why in p.rejected:
            print(f"     rejected ({why}): {ex}")
    if args.accept:
        print(f"Added {len(added)} synthetic quer{'y' if len(added) == 1 else 'ies'}: {', '.join(added) or '-'}.")
    spend.report(args, usage)
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


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    c = sub.add_parser("corpus", help="corpus commands").add_subparsers(dest="corpus_cmd", required=True, metavar="CMD")
    ci = add("import", cmd_corpus_import, "import .txt/.md/.html/.jsonl documents (files or folders)", c)
    ci.add_argument("paths", nargs="+", metavar="PATH")
    ci.add_argument("--replace", action="store_true", help="allow changing documents that already exist")

    b = add("import-beir", cmd_import_beir, "import a BEIR dataset folder (corpus.jsonl, queries.jsonl, "
                                            "qrels/SPLIT.tsv) whole: documents, queries and its qrels as imported "
                                            "judgments; checked before anything is written; again: nothing changes")
    b.add_argument("dir", metavar="DIR")
    b.add_argument("--split", default="test", help="which qrels/SPLIT.tsv to import (default test)")
    b.add_argument("--stratum", default=None,
                   help="the stratum of questions the file gives none (default 'imported', created if missing)")
    b.add_argument("--map", default=None,
                   help="what the qrels grades mean on the studio's 0-3 scale (relevant = grade >= 2), e.g. '1=3' "
                        "for a 0/1 dataset; needed when the grades stop below 3 (the studio's own export needs none)")
    b.add_argument("--name", default=None, help="the dataset's name (default: the folder's)")
    b.add_argument("--source", default=None,
                   help="who judged: the qrels read as assessor:NAME (default import:DATASET SPLIT)")
    b.add_argument("--update", action="store_true", help="record new revisions of questions already in the store")
    b.add_argument("--replace", action="store_true", help="allow changing documents that already exist")
    b.add_argument("--skip-unknown", action="store_true",
                   help="leave out qrels rows naming a query or document the dataset does not hold (counted)")
    b.add_argument("--again", action="store_true", help="import qrels imported before once more")

    q = sub.add_parser("queries", help="query commands").add_subparsers(dest="queries_cmd", required=True, metavar="CMD")
    qi = add("import", cmd_queries_import, "import queries from CSV, JSONL or TSV (TREC topics: id<TAB>text; a "
                                           "queries.meta.tsv beside it gives strata and flags)", q)
    qi.add_argument("file")
    qi.add_argument("--stratum", default=None,
                    help="the stratum of questions the file names none for (TREC topics and BEIR queries carry none)")
    qi.add_argument("--update", action="store_true", help="record new revisions for existing ids")
    qi.add_argument("--unhold", metavar="REASON", default=None,
                    help="allow the file to take questions out of the held-out set (a lead's decision; the "
                         "reason is recorded with each such revision); without it such an import is refused")
    qd = add("draft", cmd_queries_draft, "propose questions about one document with Claude (cost estimate first; "
                                         "documents holding a held-out question are never sent)", q)
    qd.add_argument("doc_id")
    qd.add_argument("--n", type=int, default=5, help="how many questions (default 5)")
    qd.add_argument("--accept", action="store_true",
                    help="add the proposals with verbatim excerpts that ask one thing as synthetic queries")
    spend.add_yes(qd)

    s = sub.add_parser("strata", help="strata commands").add_subparsers(dest="strata_cmd", required=True, metavar="CMD")
    sa = add("add", cmd_strata_add, "add a stratum", s)
    sa.add_argument("name")
    sa.add_argument("--description", required=True)
    add("list", cmd_strata_list, "list strata with query counts", s)
