"""`golden judgments` commands (issue 28): import judgments people already have (TREC qrels,
BEIR qrels TSV, Label Studio JSON or JSON-MIN, Prodigy db-out, Argilla v2 records; issue 38),
list the imports, retract one."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli.common import _print_json, _Progress, _store, identity


def cmd_judgments_import(args: argparse.Namespace) -> int:
    from annotator.integration import judgments_import

    fields = judgments_import.LabelStudioFields(query=args.query_field, passage=args.passage_field,
                                                query_id=args.query_id_field, doc_id=args.doc_id_field,
                                                from_name=args.from_name)
    rep = judgments_import.import_judgments(_store(args), identity.cli_user(), args.file, args.format,
                                            source=args.source, grade_map=args.map, skip_unknown=args.skip_unknown,
                                            again=args.again, fields=fields, progress=_Progress("judgments import"))
    _print_json(rep.as_dict()) if args.json else print(rep.summary())
    return 0


def cmd_judgments_list(args: argparse.Namespace) -> int:
    from annotator.integration import judgments_import

    df = judgments_import.list_imports(_store(args), identity.cli_user())
    if args.json:
        _print_json(df.to_dict(orient="records"))
    else:
        print(df.to_string(index=False) if len(df) else "No judgments imported yet: golden judgments import FILE.")
        pool = judgments_import.pool_judged_counts(_store(args), identity.cli_user())
        if pool["pool_items"]:
            print(f"Pool: {pool['pool_items']} items; graded by people {pool['by_people']}, by imports "
                  f"{pool['by_import']} ({pool['import_only']} by imports only, not queued for people); unjudged "
                  f"{pool['unjudged']}.")
    return 0


def cmd_judgments_retract(args: argparse.Namespace) -> int:
    from annotator.integration import judgments_import

    n = judgments_import.retract_import(_store(args), identity.cli_user(), args.import_id)
    print(f"Retracted {n} grade(s) of import {args.import_id}: the items they judged are unjudged again unless a "
          "person graded them too (the events stay in the history).")
    return 0


def judgments_formats() -> tuple[str, ...]:
    """The formats ``--format`` takes (the readers' own list; cheap: no store, no pandas)."""
    from golden_store.core.judgment_formats import FORMATS

    return FORMATS


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    jg = sub.add_parser("judgments", help="judgments people already have (qrels, Label Studio, Prodigy, Argilla)").add_subparsers(
        dest="judgments_cmd", required=True, metavar="CMD")
    ji = add("import", cmd_judgments_import, "import TREC qrels, BEIR qrels TSV, a Label Studio JSON or JSON-MIN "
                                             "export, Prodigy db-out JSONL or Argilla v2 records as grades by their "
                                             "source (all or nothing)", jg)
    ji.add_argument("file")
    ji.add_argument("--format", choices=list(judgments_formats()), default=None,
                    help="default: told from the file (JSON / JSON Lines: by the tool that wrote its records; "
                         "tab-separated with a header: BEIR)")
    ji.add_argument("--source", "--assessor", dest="source", default=None,
                    help="who judged: the grades read as assessor:NAME (default import:FILE)")
    ji.add_argument("--map", default=None,
                    help="what values mean on the 0-3 scale, e.g. '4=3' (qrels) or 'Highly relevant=3,Relevant=2,"
                         "Not relevant=0' (Label Studio); negative qrels grades are left out unless mapped "
                         "(--map=-1=0: a value starting with '-' needs the '=')")
    ji.add_argument("--skip-unknown", action="store_true",
                    help="leave out judgments for query or doc ids the store does not know (counted in the report) "
                         "instead of refusing the file")
    ji.add_argument("--again", action="store_true", help="import a file whose digest was imported before")
    ls = ji.add_argument_group("Label Studio, Prodigy, Argilla")
    ls.add_argument("--query-field", default="query", help="the task data key of the query text (default query)")
    ls.add_argument("--passage-field", default="passage",
                    help="the task data key of the passage (default passage; Prodigy: else text)")
    ls.add_argument("--query-id-field", default="query_id", help="the task data key of the query id, if any")
    ls.add_argument("--doc-id-field", default="doc_id", help="the task data key of the document id, if any")
    ls.add_argument("--from-name", default=None,
                    help="the control (Label Studio) or question (Argilla) holding the grade, when there are several")
    add("list", cmd_judgments_list, "list judgment imports (written, still standing)", jg)
    jr = add("retract", cmd_judgments_retract, "withdraw an import's grades (retract events; history kept)", jg)
    jr.add_argument("import_id")
