"""User accounts: users add, users list."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from annotator.cli.common import _print_json, _store, identity


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


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    u = sub.add_parser("users", help="user accounts").add_subparsers(dest="users_cmd", required=True, metavar="CMD")
    ua = add("add", cmd_users_add, "add a local account", u)
    ua.add_argument("username")
    ua.add_argument("--role", action="append", required=True,
                    choices=["annotator", "lead", "engineer", "reviewer", "admin"])
    ua.add_argument("--name", help="display name")
    ua.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    ua.add_argument("--no-password", action="store_true", help="no password (OIDC sign-in only)")
    add("list", cmd_users_list, "list accounts", u)
