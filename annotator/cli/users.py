"""User accounts: users add, list, roles, disable, enable."""

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


def cmd_users_roles(args: argparse.Namespace) -> int:
    """Says what the change did to the API tokens the account created: a pipeline that just
    lost a role should be traced to this command, not found out by a 403 at night."""
    followed = identity.set_roles(_store(args), identity.cli_user(), args.username, args.role)
    print(f"Roles of {args.username} set to {', '.join(sorted(set(args.role)))}. {followed.sentence()}")
    return 0


def cmd_users_disable(args: argparse.Namespace) -> int:
    """Disables the account and reports the API tokens it created that were revoked with it."""
    followed = identity.set_disabled(_store(args), identity.cli_user(), args.username, True)
    print(f"{args.username} disabled (signed out everywhere). {followed.sentence()}")
    return 0


def cmd_users_enable(args: argparse.Namespace) -> int:
    identity.set_disabled(_store(args), identity.cli_user(), args.username, False)
    print(f"{args.username} enabled (API tokens revoked when it was disabled stay revoked).")
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
    ur = add("roles", cmd_users_roles, "set an account's roles (its API tokens lose the roles it loses)", u)
    ur.add_argument("username")
    ur.add_argument("--role", action="append", required=True,
                    choices=["annotator", "lead", "engineer", "reviewer", "admin"])
    ud = add("disable", cmd_users_disable, "disable an account (revokes the API tokens it created)", u)
    ud.add_argument("username")
    ue = add("enable", cmd_users_enable, "enable a disabled account", u)
    ue.add_argument("username")
