"""What goes into the live store: corpus import, queries import, strata."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli.common import _print_json, _Progress, _store, corpus_import, identity, query_editing


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


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
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
