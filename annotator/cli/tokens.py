"""`golden tokens` commands (issue 28): API tokens for pipelines and their audit.

The CLI acts as :func:`annotator.people.identity.cli_user` (every role), as the other commands do, so
a token made here may carry any role. The secret is printed once, by ``create``; the store
keeps only its hash, so nothing can print it again."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from annotator.cli.common import _print_json, _store, identity

ROLES = ["annotator", "lead", "engineer", "reviewer", "admin"]
SHOWN_ONCE = "This secret will not be shown again: copy it now (only its hash is stored)."


def _api_tokens() -> Any:
    from annotator.people import api_tokens  # on first use: `golden --help` imports no store code

    return api_tokens


def _when(at: datetime | None, empty: str = "-") -> str:
    return f"{at:%Y-%m-%d %H:%M}" if at is not None else empty


def _row(t: Any) -> dict[str, Any]:
    return {"token_id": t.token_id, "name": t.name, "actor": _api_tokens().actor_of(t), "roles": list(t.roles),
            "state": t.state,
            "created_by": t.created_by, "created_at": t.created_at, "expires_at": t.expires_at,
            "revoked_at": t.revoked_at, "last_used_at": t.last_used_at}


def cmd_tokens_create(args: argparse.Namespace) -> int:
    api = _api_tokens()
    expires = api.parse_duration(args.expires) if args.expires else None
    info, secret = api.create_token(_store(args), identity.cli_user(), args.name, args.role, expires_in=expires)
    if args.json:
        _print_json({**_row(info), "secret": secret, "note": SHOWN_ONCE})
        return 0
    print(f"Token {info.name} ({info.token_id}) created with role(s) {', '.join(info.roles)}, "
          f"{'expiring ' + _when(info.expires_at) + ' UTC' if info.expires_at else 'not expiring'}.")
    print(f"\n    {secret}\n")
    print(SHOWN_ONCE)
    print("Use it from a pipeline by setting, for example:")
    print(f"    export GOLDEN_TOKEN={secret}")
    print("(requests send it as Authorization: Bearer $GOLDEN_TOKEN; `golden tokens revoke "
          f"{info.name}` stops it).")
    return 0


def cmd_tokens_list(args: argparse.Namespace) -> int:
    tokens = _api_tokens().list_tokens(_store(args), identity.cli_user())
    if args.json:
        _print_json([_row(t) for t in tokens])
        return 0
    if not tokens:
        print("No API tokens yet; `golden tokens create NAME --role engineer` makes one.")
        return 0
    print(f"{'ID':<17} {'NAME':<20} {'ROLES':<18} {'STATE':<8} {'CREATED BY':<16} {'CREATED':<16} "
          f"{'EXPIRES':<16} LAST USED")
    for t in tokens:
        print(f"{t.token_id:<17} {t.name:<20} {','.join(t.roles):<18} {t.state:<8} {t.created_by:<16} "
              f"{_when(t.created_at):<16} {_when(t.expires_at, 'never'):<16} {_when(t.last_used_at, 'never')}")
    return 0


def cmd_tokens_revoke(args: argparse.Namespace) -> int:
    t = _api_tokens().revoke_token(_store(args), identity.cli_user(), args.token)
    if args.json:
        _print_json(_row(t))
    else:
        print(f"Token {t.name} ({t.token_id}) revoked; requests with it are refused from now on.")
    return 0


def cmd_tokens_uses(args: argparse.Namespace) -> int:
    uses = _api_tokens().token_uses(_store(args), identity.cli_user(), args.token, limit=args.limit)
    if args.json:
        _print_json(uses)
        return 0
    if not uses:
        print("No use recorded" + (f" of {args.token}." if args.token else " of any API token."))
        return 0
    # the id beside the name: a revoked token's name may be given to a new one (probe A8)
    print(f"{'WHEN (UTC)':<19} {'TOKEN':<20} {'ID':<17} {'CLIENT':<16} {'STATUS':<6} {'OUTCOME':<9} REQUEST")
    for u in uses:
        print(f"{u['created_at']:%Y-%m-%d %H:%M:%S} {u['name'] or '(none matched)':<20} {u['token_id'] or '-':<17} "
              f"{u['client'] or '-':<16} {u['status']:<6} {u['outcome']:<9} {u['method']} {u['path']}")
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    t = sub.add_parser("tokens", help="API tokens for pipelines (shown once, stored as a hash)").add_subparsers(
        dest="tokens_cmd", required=True, metavar="CMD")
    tc = add("create", cmd_tokens_create, "create an API token and print its secret once", t)
    tc.add_argument("name", help="what the token is for, e.g. ci-nightly (unique among live tokens)")
    tc.add_argument("--role", action="append", required=True, choices=ROLES,
                    help="a role the token acts with (repeat for several; engineer for a CI job)")
    tc.add_argument("--expires", metavar="DURATION", help="e.g. 30d, 12h, 90m (default: never)")
    add("list", cmd_tokens_list, "list API tokens: state, roles, expiry, last use (never a secret)", t)
    tr = add("revoke", cmd_tokens_revoke, "revoke an API token (it stays listed as revoked)", t)
    tr.add_argument("token", metavar="NAME|ID")
    tu = add("uses", cmd_tokens_uses, "the audit: requests made with API tokens and refused ones, newest first", t)
    tu.add_argument("token", nargs="?", metavar="NAME|ID", help="only this token's uses")
    tu.add_argument("--limit", type=int, default=50, help="rows to show (default 50)")
