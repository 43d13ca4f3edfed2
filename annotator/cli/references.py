"""Reference answers: set/approve/retire/show/list/import, their criteria, and exact match and
token F1 of systems' answers against them."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli import spend
from annotator.cli.common import COULD_NOT_RUN, _print_json, _store, identity


def _refs():  # imported when a command runs: `golden --help` stays cheap
    from annotator.evidence import reference_answers

    return reference_answers


def cmd_references_set(args: argparse.Namespace) -> int:
    r = _refs()
    anchors = [r.parse_anchor(e) for e in args.evidence or []]
    revision = r.write(_store(args), identity.cli_user(), args.query_id, short_answer=args.short,
                       full_answer=args.full, evidence=anchors, note=args.note)
    print(f"Wrote the reference answer of {args.query_id} (revision {revision}); it counts once approved "
          f"(`golden references approve {args.query_id}`).")
    return 0


def cmd_references_approve(args: argparse.Namespace) -> int:
    event = _refs().approve(_store(args), identity.cli_user(), args.query_id, revision=args.revision)
    print(f"Approved the reference answer of {args.query_id} (event {event}).")
    return 0


def cmd_references_retire(args: argparse.Namespace) -> int:
    event = _refs().retire(_store(args), identity.cli_user(), args.query_id, note=args.note)
    print(f"Retired the reference answer of {args.query_id} (event {event}); its history is kept.")
    return 0


def _line(row: dict) -> str:
    state = "approved" if row["approved"] else "NOT APPROVED"
    spans = ", ".join(f"{e['doc_id']}:{e['start']}-{e['end']}" for e in row["evidence"]) or "no evidence span"
    return (f"{row['query_id']} (revision {row['revision']}, {state}, by {row['actor']}): "
            f"short {row['short_answer']!r}; evidence {spans}")


def cmd_references_show(args: argparse.Namespace) -> int:
    r = _refs()
    store, user = _store(args), identity.cli_user()
    now, past = r.current(store, user, args.query_id), r.history(store, user, args.query_id)
    source, criteria = r.criteria_for_query(store, user, args.query_id)
    if args.json:
        _print_json({"current": now[0] if now else None, "history": past, "criteria": criteria,
                     "criteria_from": source or None})
        return 0
    if not now:
        print(f"{args.query_id} has no reference answer" + (" (it was retired)." if past else "."))
    else:
        print(_line(now[0]))
        if now[0]["full_answer"]:
            print(f"  full answer: {now[0]['full_answer']}")
    print(f"  {len(past)} event(s) in its history.")
    if criteria:
        print(f"  criteria (from its {source}):")
        for c in criteria:
            print(f"    {c['criterion_id']} (weight {c['weight']:g}, 0-{c['scale_max']}): {c['text']}")
    return 0


def cmd_references_list(args: argparse.Namespace) -> int:
    rows = _refs().current(_store(args), identity.cli_user())
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("No reference answers yet: `golden references set QUERY_ID --short ...` or `golden references import`.")
    for row in rows:
        print(_line(row))
    return 0


def cmd_references_import(args: argparse.Namespace) -> int:
    n = _refs().import_file(_store(args), identity.cli_user(), args.file, approve_all=args.approve)
    print(f"Imported {n} reference answer(s)" + (" and approved them." if args.approve else
                                                 "; approve each before it counts (or import with --approve)."))
    return 0


def cmd_references_criteria(args: argparse.Namespace) -> int:
    r = _refs()
    scope, scope_id = ("query", args.query) if args.query else ("stratum", args.stratum)
    criteria = r.criteria_file(args.file)
    r.set_criteria(_store(args), identity.cli_user(), scope=scope, scope_id=scope_id, criteria=criteria)
    print(f"Set {len(criteria)} criteria for {scope} {scope_id}.")
    return 0


def cmd_references_match(args: argparse.Namespace) -> int:
    reports = _refs().match(_store(args), identity.cli_user(), args.system)
    if args.json:
        _print_json({name: rep.as_dict() for name, rep in reports.items()})
        return 0
    if not reports:
        print("No system answers yet: import them with `golden answers import FILE --system NAME`.")
    for name, rep in reports.items():
        if rep.exact_match is None or rep.token_f1 is None:
            print(f"{name}: no answered question has an approved short reference answer ({len(rep.no_reference)} "
                  f"without one).")
            continue
        print(f"{name}: exact match {rep.exact_match:.4f}, token F1 {rep.token_f1:.4f} over {len(rep.per_query)} "
              f"question(s) with an approved short reference; {len(rep.no_reference)} answered question(s) without "
              f"one left out.")
    print("Normalised as SQuAD does: lower case, no ASCII punctuation, no articles (a, an, the), single spaces.")
    return 0


def cmd_references_draft(args: argparse.Namespace) -> int:
    """Claude drafts reference answers from the evidence (estimate first; nothing is approved)."""
    from annotator.evidence import reference_drafting

    store, user = _store(args), identity.cli_user()
    have = {r["query_id"] for r in _refs().current(store, user)}
    rows = _refs().questions(store, user)
    targets = [q for q in rows if (q in args.query if args.query else q not in have)]
    if not targets:
        print("No question to draft for (questions that already have a reference are skipped unless named with "
              "--query).")
        return 0
    plan = reference_drafting.plan(store, user, targets)
    if not spend.confirm(args, plan):
        return COULD_NOT_RUN
    outs = reference_drafting.draft_many(store, user, targets)
    if args.json:
        _print_json([{"query_id": o.query_id, "outcome": o.outcome, "revision": o.revision, "anchored": o.anchored,
                      "dropped_quotes": o.dropped_quotes, "message": o.message} for o in outs])
    else:
        for o in outs:
            print(f"{o.query_id}: {o.outcome}" + (f" - {o.message}" if o.message else ""))
        print("Drafts are not approved: read and edit each on the Reference answers page (or golden references "
              "show / set), then approve it.")
    spend.report(args, reference_drafting.job_usage(outs))
    return 0


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    rf = sub.add_parser("references", help="reference answers and their criteria").add_subparsers(
        dest="references_cmd", required=True, metavar="CMD")
    rd = add("draft", cmd_references_draft, "draft reference answers with Claude from each question's evidence "
                                            "(estimate first; held-out questions are never sent; nothing is "
                                            "approved)", rf)
    rd.add_argument("--query", nargs="+", help="only these query ids (drafted even if they have a reference)")
    spend.add_yes(rd)
    rs = add("set", cmd_references_set, "write (or revise) a question's reference answer, anchored to evidence spans",
             rf)
    rs.add_argument("query_id")
    rs.add_argument("--short", help="the short extractive answer (what exact match and token F1 compare against)")
    rs.add_argument("--full", help="the full reference answer")
    rs.add_argument("--evidence", nargs="+", metavar="DOC:START-END", help="evidence spans the answer rests on")
    rs.add_argument("--note", help="why (kept in the history)")
    ra = add("approve", cmd_references_approve, "approve the question's latest reference answer", rf)
    ra.add_argument("query_id")
    ra.add_argument("--revision", type=int, help="refuse if the latest revision is not this one (what you read)")
    rr = add("retire", cmd_references_retire, "retire a question's reference answer (its history is kept)", rf)
    rr.add_argument("query_id")
    rr.add_argument("--note")
    rsh = add("show", cmd_references_show, "a question's reference answer, its history and its criteria", rf)
    rsh.add_argument("query_id")
    add("list", cmd_references_list, "every current reference answer", rf)
    ri = add("import", cmd_references_import, 'import reference answers: JSONL {"query_id", "short_answer", '
                                               '"full_answer", "evidence": [{"doc_id", "start", "end"}]}', rf)
    ri.add_argument("file")
    ri.add_argument("--approve", action="store_true", help="approve each imported answer (you vouch for the file)")
    rc = add("criteria", cmd_references_criteria, "set the criteria answers are marked by, for a question or a "
                                                  "stratum: a JSON list of {id, text, example, weight, scale_max}", rf)
    where = rc.add_mutually_exclusive_group(required=True)
    where.add_argument("--query")
    where.add_argument("--stratum")
    rc.add_argument("--file", required=True)
    rm = add("match", cmd_references_match, "exact match and token F1 of systems' answers against the approved "
                                            "short reference answers", rf)
    rm.add_argument("--system", help="only this system")
