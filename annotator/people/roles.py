"""Roles and what each may do. Every write in the annotator layer calls :func:`require`;
hiding pages in the UI is a convenience, this is the enforcement."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from golden_store.core.errors import GoldenError


class Role(str, Enum):
    ANNOTATOR = "annotator"
    LEAD = "lead"
    ENGINEER = "engineer"
    REVIEWER = "reviewer"
    ADMIN = "admin"


class Permission(str, Enum):
    VIEW_STORE = "view the corpus and queries"
    EDIT_QUERIES = "add, edit or import queries"
    MANAGE_STRATA = "add strata"
    IMPORT_CORPUS = "import documents into the corpus"
    LOAD_DEMO = "load the demo project"
    VIEW_VERSIONS = "see, verify and diff frozen versions"
    # recorded evaluations (eval_results) and their paired comparison with the gate verdict
    VIEW_RESULTS = "see and compare recorded evaluations"
    FREEZE = "freeze a version"
    EXPORT = "export a version"
    LABEL = "author evidence, grades and nuggets"
    ADJUDICATE = "adjudicate disagreements"
    EDIT_RUBRIC = "edit the rubric"
    # rounds of double annotation (kinds "calibration" and "split") and their agreement figures
    RUN_ROUNDS = "run annotation rounds"
    # the LLM judge measured against human labels (annotator/judge/calibration.py), not a round
    CALIBRATE_JUDGE = "calibrate the LLM judge"
    # a calibrated judge grades the pool's ungraded items; its band goes to people (issue 27)
    GRADE_POOL_BY_JUDGE = "grade the pool with a calibrated judge"
    IMPORT_RUNS = "import system runs"
    RETIRE_RUNS = "retire or restore system runs"
    REVIEW = "review failure transcripts"
    # a system answer's outcome (answered / abstained / refused), METHODOLOGY §10.5
    MARK_OUTCOMES = "mark the outcome of a system's answer"
    MANAGE_USERS = "manage user accounts"
    # HTTP API bearer tokens (issue 28): created, listed and revoked by admins; a token acts with its own roles
    MANAGE_API_TOKENS = "create and revoke API tokens"
    # webhook endpoints (issue 28) and their delivery log
    MANAGE_WEBHOOKS = "manage webhooks"
    # judgments people already have (TREC qrels, BEIR, Label Studio), imported as attributed grade events
    IMPORT_JUDGMENTS = "import existing relevance judgments"
    # taking a question out of the held-out set (issue 37): a lead's explicit decision, with a reason
    UNHOLD_QUERIES = "take questions out of the held-out set"


ROLE_PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.ANNOTATOR: frozenset({Permission.VIEW_STORE, Permission.LABEL}),
    Role.LEAD: frozenset({
        Permission.VIEW_STORE, Permission.LABEL, Permission.ADJUDICATE, Permission.EDIT_RUBRIC,
        Permission.RUN_ROUNDS, Permission.CALIBRATE_JUDGE, Permission.EDIT_QUERIES, Permission.MANAGE_STRATA,
        Permission.VIEW_VERSIONS, Permission.VIEW_RESULTS, Permission.RETIRE_RUNS, Permission.MARK_OUTCOMES,
        Permission.GRADE_POOL_BY_JUDGE, Permission.IMPORT_JUDGMENTS, Permission.UNHOLD_QUERIES,
    }),
    Role.ENGINEER: frozenset({
        Permission.VIEW_STORE, Permission.EDIT_QUERIES, Permission.IMPORT_CORPUS,
        Permission.LOAD_DEMO, Permission.VIEW_VERSIONS, Permission.FREEZE, Permission.EXPORT,
        Permission.IMPORT_RUNS, Permission.RETIRE_RUNS, Permission.VIEW_RESULTS, Permission.GRADE_POOL_BY_JUDGE,
        Permission.MANAGE_WEBHOOKS, Permission.IMPORT_JUDGMENTS,
    }),
    Role.REVIEWER: frozenset({Permission.VIEW_STORE, Permission.REVIEW, Permission.MARK_OUTCOMES}),
    Role.ADMIN: frozenset(Permission),
}


def grantable_roles(roles: Iterable[Role | str]) -> list[str]:
    """The roles an account holding ``roles`` may give a token, in :class:`Role` order: each
    role all of whose permissions the account has. So a token never holds a permission its
    creator lacks, and an admin (every permission) may give any role, admin included: an
    admin-only account makes an engineer token for CI without taking the engineer role
    itself, which is the least privilege a pipeline needs (issue 37, item 10). Compared by
    permission, not by role name: a role name the creator holds is one way to hold its
    permissions, and admin is the other. The same rule decides what a token keeps when its
    creator's roles change (``api_tokens._as_creator_now``, ``identity.set_roles``)."""
    names = {r.value if isinstance(r, Role) else str(r).strip().lower() for r in roles}
    held = permissions_of({r for r in Role if r.value in names})  # a name no role has grants nothing
    return [r.value for r in Role if ROLE_PERMISSIONS[r] <= held]


class PermissionDenied(GoldenError):
    """The signed-in user's roles do not allow the action."""


def permissions_of(roles: frozenset[Role] | set[Role]) -> frozenset[Permission]:
    out: set[Permission] = set()
    for r in roles:
        out |= ROLE_PERMISSIONS[r]
    return frozenset(out)


def parse_roles(values: list[str] | tuple[str, ...]) -> frozenset[Role]:
    roles = set()
    for v in values:
        try:
            roles.add(Role(v.strip().lower()))
        except ValueError:
            raise GoldenError(
                f"Unknown role {v!r}; roles are {', '.join(r.value for r in Role)}."
            ) from None
    if not roles:
        raise GoldenError("A user needs at least one role.")
    return frozenset(roles)
