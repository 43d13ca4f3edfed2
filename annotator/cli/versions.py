"""Frozen versions: freeze, keygen, versions, verify, export, diff."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from annotator.cli.common import (
    COULD_NOT_RUN, UNSIGNED_NOTE, _live_corpus_digest, _print_json, _Progress, _store, _vdir, identity, versioning)


def cmd_freeze(args: argparse.Namespace) -> int:
    if args.sign:
        from annotator.versions import signing

        res = signing.freeze_signed(_store(args), identity.cli_user(), args.name, args.sign, note=args.note or "",
                                    hit_rule=args.hit_rule, progress=_Progress("freezing", "steps"))
    else:
        res = versioning.freeze(_store(args), identity.cli_user(), args.name, note=args.note or "",
                                hit_rule=args.hit_rule, progress=_Progress("freezing", "steps"))
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
        for line in versioning.judge_label_lines(m):
            print(line)
    return 0


def cmd_keygen(args: argparse.Namespace) -> int:
    from annotator.versions import signing

    priv, pub, text = signing.keygen(args.path)
    if args.json:
        _print_json({"private_key": str(priv), "public_key_file": str(pub), "public_key": text})
    else:
        print(f"Private key: {priv} (keep it secret; sign with: golden freeze NAME --sign {priv})\n"
              f"Public key:  {pub}\n  {text}\n"
              f"Verify with: GOLDEN_VERIFY_KEY={pub} golden verify NAME  (or golden verify NAME --key {pub})")
    return 0


def cmd_versions(args: argparse.Namespace) -> int:
    if args.sweep:
        removed = versioning.sweep(identity.cli_user(), _vdir(args))
        if args.json:
            _print_json({"removed": removed})
        else:
            print(f"Removed the leftovers of {len(removed)} interrupted freeze(s): {', '.join(removed)}" if removed
                  else f"No stale leftovers of interrupted freezes in {_vdir(args)}.")
        return 0
    print_versions(versioning.list_versions(identity.cli_user(), _vdir(args)), args.json)
    return 0


def print_versions(rows: list, as_json: bool) -> None:
    """`golden versions`' output, local or over --server (annotator/cli/remote.py)."""
    if as_json:
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


def cmd_verify(args: argparse.Namespace) -> int:
    if args.name is None:
        return _verify_live(args)
    live, why_not = _live_corpus_digest(args)
    if args.key:
        from annotator.versions import signing

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
            signed = "; signature by the verify key checked" if rep.checked.get("signature") else UNSIGNED_NOTE
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
    paths = versioning.export_version(identity.cli_user(), _vdir(args), args.name, args.format, args.out,
                                      progress=_Progress("export"))
    _print_json([str(p) for p in paths]) if args.json else print(
        "Wrote " + ", ".join(str(p) for p in paths)
    )
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from golden_store.versions import format_diff

    d = versioning.diff(identity.cli_user(), _vdir(args), args.a, args.b)
    _print_json(d) if args.json else print(format_diff(d))
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
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
    vs = add("versions", cmd_versions, "list frozen versions (GOLDEN_VERSIONS: a folder or s3://bucket/prefix)")
    vs.add_argument("--sweep", action="store_true",
                    help="remove what interrupted freezes left (temporary folders; in object storage, uploads "
                         "without a manifest untouched for 30 minutes)")
    v = add("verify", cmd_verify, "re-hash a version and re-check it against its corpus; with no NAME, "
                                   "check the live store's labels against the current corpus (exit 0 OK, 1 failed "
                                   "verification, 2 could not verify)")
    v.set_defaults(error_exit=COULD_NOT_RUN)
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
