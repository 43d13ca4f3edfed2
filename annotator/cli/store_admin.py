"""The store itself: init, migrate, copy, demo."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotator.cli.common import _print_json, _Progress, _store, demo, identity
from golden_store.core.paths import default_db_path, versions_dir_for


def cmd_init(args: argparse.Namespace) -> int:
    store = _store(args, create=True)
    info = {"db": str(store.path), "schema_version": store.schema_version(),
            "versions_dir": str(versions_dir_for(store.path))}
    _print_json(info) if args.json else print(f"Store ready at {store.path} (schema v{info['schema_version']}).")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    full = not args.small
    res = demo.load_demo(_store(args, create=True), identity.cli_user(), _Progress("demo"),
                         workflows=full)
    if args.json:
        _print_json(res)
    elif full:
        w = res["workflows"]
        print(
            f"Demo loaded: {res['documents']} documents, {res['queries']} queries, "
            f"{res['evidence_spans']} evidence spans, rubric v{res['rubric_version']}; {w['runs']} runs, "
            f"{w['pool_items']} pool items, calibration round {w['round']}, nuggets for {w['nugget_questions']} "
            f"questions, {w['reference_answers']} approved reference answers, {w['transcripts']} transcripts, judge calibration {w['calibration']}, version {w['version']}; "
            f"pool-grading job {w['pool_job']['job']} by the calibrated judge: {w['pool_job']['labeled']} judge-labeled "
            f"({w['pool_job']['sampled']} of them in the standing sample people graded), {w['pool_job']['escalated']} "
            f"sent to people.\n"
            f"Next: golden serve (every page has data); golden pool judge-status shows the cascade"
        )
    else:
        print(
            f"Demo loaded: {res['documents']} documents, {res['queries']} queries, "
            f"{res['evidence_spans']} evidence spans, rubric v{res['rubric_version']}.\n"
            f"Next: golden freeze demo.v1  (then golden export demo.v1 --format trec --out ./demo-trec)"
        )
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


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    add("init", cmd_init, "create (or migrate) the store")
    add("migrate", cmd_migrate, "upgrade the store (--db: a DuckDB file or postgresql:// URL) to this code's schema; "
                                "prints the versions before and after")
    cpy = add("copy", cmd_copy, "copy a whole store, every event, into a new store on either engine (DuckDB file or "
                                "postgresql:// URL), checked table by table by row counts and digests")
    cpy.add_argument("src", help="the store to copy (left unchanged, but migrated if older than this code)")
    cpy.add_argument("dst", help="a new store: a DuckDB file path, or an empty PostgreSQL database's URL")
    dm = add("demo", cmd_demo, "load the demo project into an empty store, every workflow filled as the app's "
                               "\"Load the demo project\" button does (--small: corpus, queries and evidence only)")
    size = dm.add_mutually_exclusive_group()
    size.add_argument("--small", action="store_true",
                      help="load only the corpus, the questions, the expert evidence and the rubric (no runs, pool, "
                           "rounds, nuggets, transcripts, judge calibration or frozen version)")
    size.add_argument("--full", action="store_true",
                      help="every workflow filled (the default; kept for scripts written when it was not): runs, a "
                           "pool, a calibration round with disagreements, nuggets and answers, transcripts, a judge "
                           "calibration, a frozen version demo.v0")
