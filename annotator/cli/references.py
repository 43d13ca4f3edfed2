"""Reference answers: set/approve/retire/show/list/import, their criteria, exact match and
token F1 of systems' answers against them, and double authoring in rounds (round-open,
round-status, round-draft, round-submit, round-adjudicate)."""

from __future__ import annotations

import argparse
from typing import Any

from annotator.cli import spend
from annotator.cli.common import COULD_NOT_RUN, _print_json, _store, identity
from annotator.people.roles import Permission


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


# ---- double authoring: reference-answer rounds ------------------------------------------------


def _rounds():
    from annotator.evidence import reference_rounds

    return reference_rounds


def _round_answer(args: argparse.Namespace, *, required: bool = True):
    """The answer the options write (None when none is given and ``required`` is False)."""
    r = _refs()
    given = any(getattr(args, k, None) for k in ("short", "full", "evidence", "file"))
    if not given and not required:
        return None
    anchors = [r.parse_anchor(e) for e in args.evidence or []]
    criteria = r.criteria_file(args.file) if args.file else []
    return _rounds().answer_from(args.short, args.full, anchors, criteria)


def cmd_references_round_open(args: argparse.Namespace) -> int:
    authors = [p.strip() for p in args.authors.split(",") if p.strip()]
    rid = _rounds().open_round(_store(args), identity.cli_user(), authors, args.query, note=args.note)
    if args.json:
        _print_json({"round_id": rid})
    else:
        print(f"Reference round {rid} opened: {', '.join(sorted(set(authors)))} each write the reference answer of "
              f"{len(set(args.query))} question(s), blind to each other until they submit "
              f"(`golden references round-submit {rid} QUERY_ID ...`).")
    return 0


def _fig(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _yes(x: bool | None) -> str:
    return "n/a" if x is None else "yes" if x else "no"


def cmd_references_round_status(args: argparse.Namespace) -> int:
    rr = _rounds()
    store, user = _store(args), identity.cli_user()
    if not args.round_id:
        rows = rr.list_rounds(store, user)
        mine = rr.my_questions(store, user) if user.can(Permission.LABEL) else []
        if args.json:
            _print_json({"rounds": rows, "waiting_for_you": mine})
            return 0
        if not rows:
            print("No reference rounds yet: `golden references round-open --authors a,b --query q1 q2`.")
        for r in rows:
            print(f"{r['round_id']}  {','.join(r['authors'])}  {r['n_adjudicated']}/{r['n_questions']} question(s) "
                  f"adjudicated  (opened by {r['created_by']})")
        for m in mine:
            print(f"waiting for you: {m['round_id']} {m['query_id']} ({m['state']})")
        return 0
    view = rr.status(store, user, args.round_id)
    if args.json:
        _print_json(view.as_dict())
        return 0
    rnd, ag = view.round, view.agreement
    print(f"Round {rnd['round_id']}: authors {', '.join(rnd['authors'])}; {rnd['n_adjudicated']}/{rnd['n_questions']} "
          f"question(s) adjudicated.")
    print(f"Agreement over {ag.n_compared} question(s) with two or more submissions you may read "
          f"({ag.n_disagreeing} disagreeing" + (f"; {view.hidden} more hidden until you submit" if view.hidden else "")
          + "):")
    print(f"  short answer: exact match {_fig(ag.short_em.value)} (n={ag.short_em.n}), token F1 "
          f"{_fig(ag.short_f1.value)} (n={ag.short_f1.n})")
    print(f"  evidence: character Jaccard {_fig(ag.span_jaccard.value)}, anchors agree {_fig(ag.spans_agree.value)} "
          f"(n={ag.span_jaccard.n})")
    print(f"  criteria: same count {_fig(ag.same_count.value)}, weight distance {_fig(ag.weight_distance.value)} "
          f"(n={ag.same_count.n})")
    for q in view.questions:
        states = ", ".join(f"{a} {v['state']}" for a, v in q["authors"].items())
        if q["adjudicated"]:
            how = f"accepted {q['accepted_author']}" if q["decision"] == "accept" else "merged"
            head = f"adjudicated ({how}, revision {q['revision']})"
        else:
            head = "DISAGREE" if (q["agreement"] or {}).get("disagrees") else "agree" if q["agreement"] else "waiting"
        print(f"{q['query_id']}  {head}  [{states}]")
        if q["agreement"]:
            a = q["agreement"]
            print(f"    short EM {_fig(a['short_em'])} F1 {_fig(a['short_f1'])}; evidence Jaccard "
                  f"{_fig(a['span_jaccard'])}; criteria same count {_yes(a['same_count'])}, weight distance "
                  f"{_fig(a['weight_distance'])}")
        for who, v in q["authors"].items():
            for kind in ("submission", "draft"):
                sub = v[kind]
                if sub:
                    spans = ", ".join(f"{e['doc_id']}:{e['start']}-{e['end']}" for e in sub["evidence"]) or "none"
                    print(f"    {who} ({kind}): short {sub['short_answer']!r}; full {sub['full_answer']!r}; evidence "
                          f"{spans}; {len(sub['criteria'])} criteria")
    return 0


def cmd_references_round_draft(args: argparse.Namespace) -> int:
    _rounds().save_draft(_store(args), identity.cli_user(), args.round_id, args.query_id, _round_answer(args))
    print(f"Saved your draft of {args.query_id} in round {args.round_id} (only you see it); submit it with "
          f"`golden references round-submit {args.round_id} {args.query_id}`.")
    return 0


def cmd_references_round_submit(args: argparse.Namespace) -> int:
    _rounds().submit(_store(args), identity.cli_user(), args.round_id, args.query_id,
                     _round_answer(args, required=False))
    print(f"Submitted your answer to {args.query_id} in round {args.round_id}; it is final. The other authors' "
          f"submissions are yours to read now (`golden references round-status {args.round_id}`).")
    return 0


def cmd_references_round_adjudicate(args: argparse.Namespace) -> int:
    merged = _round_answer(args, required=False)
    revision = _rounds().adjudicate(_store(args), identity.cli_user(), args.round_id, args.query_id,
                                    accept=args.accept, merged=merged, note=args.note)
    how = f"accepted {args.accept}'s answer" if args.accept else "wrote the merged answer"
    print(f"Adjudicated {args.query_id} in round {args.round_id}: {how}; it is the question's reference answer "
          f"(revision {revision}, approved).")
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
    _register_rounds(rf, add)


def _answer_options(p: Any) -> None:
    p.add_argument("--short", help="the short extractive answer (what exact match and token F1 compare against)")
    p.add_argument("--full", help="the full reference answer")
    p.add_argument("--evidence", nargs="+", metavar="DOC:START-END", help="evidence spans the answer rests on")
    p.add_argument("--criteria", dest="file", metavar="FILE",
                   help="criteria answers are marked by: a JSON list of {id, text, example, weight, scale_max}")


def _register_rounds(rf: Any, add: Any) -> None:
    ro = add("round-open", cmd_references_round_open, "open a reference-answer round: two or more authors each write "
                                                     "the same questions' reference answers, blind to each other "
                                                     "(a lead)", rf)
    ro.add_argument("--authors", required=True, help="comma-separated usernames (two or more)")
    ro.add_argument("--query", nargs="+", required=True, help="the questions' ids")
    ro.add_argument("--note")
    rs = add("round-status", cmd_references_round_status, "reference rounds, or one round: each question's "
                                                         "submissions as you may see them and the authors' agreement "
                                                         "(exact match and token F1 of the short answers, evidence "
                                                         "overlap, criteria count and weights)", rf)
    rs.add_argument("round_id", nargs="?", help="the round (without it: every round and what waits for you)")
    rd = add("round-draft", cmd_references_round_draft, "save your draft of a question's answer in a round (only you "
                                                       "see it)", rf)
    rd.add_argument("round_id")
    rd.add_argument("query_id")
    _answer_options(rd)
    rb = add("round-submit", cmd_references_round_submit, "submit your answer to a question in a round (final; "
                                                         "without answer options, your latest draft)", rf)
    rb.add_argument("round_id")
    rb.add_argument("query_id")
    _answer_options(rb)
    ra = add("round-adjudicate", cmd_references_round_adjudicate, "settle a question of a round: accept one "
                                                                 "author's answer, or write a merged one; it becomes "
                                                                 "the question's approved reference answer (a lead)",
             rf)
    ra.add_argument("round_id")
    ra.add_argument("query_id")
    ra.add_argument("--accept", metavar="AUTHOR", help="accept this author's submission")
    _answer_options(ra)
    ra.add_argument("--note", help="why (kept with the decision and the revision)")
