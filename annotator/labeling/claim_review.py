"""People check the faithfulness judge's claim verdicts (METHODOLOGY §10.2, §11.1).

A reviewer (or a lead) is given a seeded sample of the claims the judge checked, stratified by
the judge's verdict so contradicted and insufficient claims are not drowned by supported ones,
and labels each with the keyboard: supported, contradicted or insufficient against the answer's
context. The review is blind, as double annotation is: the card shows the question, the claim,
the answer it comes from and the context passages, never the judge's verdict, quote or
justification; those are shown once the reviewer's own verdict is saved (:func:`my_reviews`),
and an undo (a new, 'withdrawn' event) puts the claim back in their queue. The agreement of
people with the judge (:func:`report`) is κ, raw agreement, the confusion table and the judge's
FAIL recall on the claims people call unsupported (:mod:`golden_store.scoring.claim_agreement`).

Why this lives in ``labeling``: it is a keyed labeling surface and goes through the one label
path (:func:`annotator.labeling.labeling.submit`) like the Judge page's grades.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotator.labeling import labeling
from annotator.labeling.labeling import Ack, Label, LabelRefused
from annotator.people.identity import User
from annotator.people.roles import Permission, PermissionDenied
from golden_store.core.errors import NotFoundError, ValidationError
from golden_store.db.cursor import Cursor
from golden_store.db.store import Store
from golden_store.live import faithfulness, label_receipts
from golden_store.scoring.claim_agreement import claim_agreement

SURFACE = "claims"
VERDICTS = faithfulness.REVIEW_VERDICTS
# The keys: digits for the verdicts, as the Judge page has digits for grades (its letters, s and
# u, are skip and unsure there); Backspace / z undo and the arrows are the surface's own.
KEYS = (("1", "supported", None, "supported: the context says so"),
        ("2", "contradicted", None, "contradicted: the context says otherwise"),
        ("3", "insufficient", None, "insufficient: the context does not say"))
QUEUE_AHEAD = 8
DEFAULT_SAMPLE = 30
MAX_SAMPLE = 2000
# reviewers review claims; leads calibrate the judge, which this is part of
REVIEWING = (Permission.REVIEW, Permission.CALIBRATE_JUDGE)
# the agreement figures: reviewers and leads, and whoever reads evaluation results (engineers)
READING = (*REVIEWING, Permission.VIEW_RESULTS)


def may_review(user: User | None) -> bool:
    return user is not None and any(user.can(p) for p in REVIEWING)


def _require_any(user: User | None, perms: Sequence[Permission], what: str) -> User:
    """Like :func:`annotator.people.identity.require`, for an act any one of ``perms`` allows."""
    if user is None:
        raise PermissionDenied(f"Sign in to {what}.")
    if not any(user.can(p) for p in perms):
        roles = ", ".join(sorted(r.value for r in user.roles)) or "none"
        raise PermissionDenied(f"{user.username} (roles: {roles}) may not {what}; it needs the reviewer or lead "
                               "role (ask an admin).")
    return user


def _require_review(user: User | None) -> User:
    return _require_any(user, REVIEWING, "review the judge's claim verdicts")


def _check_sample(n: int, seed: int) -> None:
    if not 1 <= n <= MAX_SAMPLE:
        raise ValidationError(f"A claim sample holds 1 to {MAX_SAMPLE} claims, not {n}: pick a size in that range.")
    if not 0 <= seed < 2**31:
        raise ValidationError(f"A sample's seed is 0 to {2**31 - 1}, not {seed}.")


# ---- the sample and the cards -------------------------------------------------------------------


def systems(store: Store, user: User) -> list[str]:
    """The systems with a claim that may be reviewed now."""
    _require_any(user, READING, "see the judge's claim verdicts")
    return sorted({r["system"] for r in faithfulness.reviewable_claims(store)})


def sample(store: Store, user: User, n: int = DEFAULT_SAMPLE, seed: int = 0, system: str | None = None) -> list[dict]:
    """The sample of ``n`` claims for ``seed`` (the same for every reviewer: two people's
    reviews of it can be compared too)."""
    _require_review(user)
    _check_sample(n, seed)
    return faithfulness.sample(faithfulness.reviewable_claims(store, system), n, seed)


def queue(store: Store, user: User, n: int = DEFAULT_SAMPLE, seed: int = 0,
          system: str | None = None) -> tuple[list[dict], int, int]:
    """(the sample's claims this reviewer has not reviewed, in order; how many they have; the
    sample's size). A claim reviewed and not undone never comes again."""
    drawn = sample(store, user, n, seed, system)
    mine = {(r["check_id"], r["claim_no"]) for r in faithfulness.current_reviews(store, user.username, system)}
    todo = [r for r in drawn if (r["check_id"], r["claim_no"]) not in mine]
    return todo, len(drawn) - len(todo), len(drawn)


def _digest(item: dict) -> str:
    """Digest of what the reviewer reads: question, claim, answer and passages; not the judge's
    verdict (which is not on the card)."""
    return labeling.digest(item["question"] or "", item["claim"], item["answer"] or "", *item["passages"])


def card(item: dict) -> dict[str, Any]:
    """One claim as the surface paints it, blind to the judge (plain text: the surface sets it
    as text, never as HTML)."""
    blocks = [{"heading": "Question", "segments": [[item["question"] or "", "plain"]]},
              {"heading": "The answer the claim comes from", "segments": [[item["answer"] or "", "plain"]]}]
    blocks += [{"heading": f"Context [{i}]", "segments": [[p, "plain"]]} for i, p in enumerate(item["passages"], 1)]
    return {"item": {"check_id": item["check_id"], "claim_no": item["claim_no"]}, "digest": _digest(item),
            "title": item["claim"], "meta": f"{item['system']} · {item['query_id']} · claim {item['claim_no']}",
            "blocks": blocks}


def cards(store: Store, user: User, todo: Sequence[dict], n: int = QUEUE_AHEAD) -> list[dict[str, Any]]:
    """The next ``n`` claims of a queue, ready to paint."""
    _require_review(user)
    out = []
    with store.cursor() as cur:
        for r in todo[:n]:
            item = faithfulness.review_item_tx(cur, r["check_id"], r["claim_no"])
            if item is not None:
                out.append(card(item))
    return out


# ---- writing reviews ---------------------------------------------------------------------------


def _ids(item: object) -> tuple[int, int]:
    if isinstance(item, dict):
        check_id, claim_no = item.get("check_id"), item.get("claim_no")
        if type(check_id) is int and type(claim_no) is int:
            return check_id, claim_no
    raise ValidationError("A claim review names its check (check_id) and claim (claim_no) as whole numbers.")


def _record_tx(cur: Cursor, user: User, check_id: int, claim_no: int, verdict: str,
               digest: str | None = None) -> tuple[int, dict]:
    """Check and write one review inside a transaction: (its id, the claim as read)."""
    if verdict not in VERDICTS:
        raise ValidationError(f"{verdict!r} is not a claim verdict: give supported, contradicted or insufficient.")
    item = faithfulness.review_item_tx(cur, check_id, claim_no)
    if item is None:
        raise NotFoundError(f"There is no claim {claim_no} of check {check_id}: take the ids from the review queue.")
    if not item["reviewable"]:
        why = ("its question is retired" if not item["live"] else
               "the answer was checked again since" if item["superseded"] else
               "the answer's text changed since its claims were checked" if item["stale"] else
               "the judge refused that answer")
        raise ValidationError(f"Claim {claim_no} of check {check_id} is no longer reviewed: {why}.")
    if digest is not None and digest != _digest(item):
        raise ValidationError(f"Not saved: claim {claim_no} of check {check_id} is not the claim that was on screen.")
    return faithfulness.review_tx(cur, check_id=check_id, claim_no=claim_no, reviewer=user.username,
                                  verdict=verdict), item


def _write(cur: Cursor, user: User, label: Label) -> int:
    """The surface's rules for one label, inside its transaction."""
    _require_review(user)
    if label.action == "undo":
        target = label_receipts.written_by(cur, label.target, user.username)
        if target is None:
            raise LabelRefused("Nothing to undo: that review was never saved.")
        check_id, claim_no = _ids(target[1])
        latest = faithfulness.latest_review_tx(cur, check_id, claim_no, user.username)
        if latest is None or latest[0] != target[0]:
            raise LabelRefused(f"Not undone: your review of claim {claim_no} of check {check_id} changed since.")
        return faithfulness.review_tx(cur, check_id=check_id, claim_no=claim_no, reviewer=user.username,
                                      verdict=faithfulness.WITHDRAWN)
    check_id, claim_no = _ids(label.item)
    try:
        return _record_tx(cur, user, check_id, claim_no, label.action, label.digest)[0]
    except NotFoundError as exc:
        raise LabelRefused(f"Not saved: {exc}") from None


def submit(store: Store, user: User | None, raw_labels: object) -> list[Ack]:
    """Write the reviews the surface sent (each bound to the claim that was on screen)."""
    if user is not None and not may_review(user) and isinstance(raw_labels, list):
        return [Ack(str(r.get("id"))[:64] if isinstance(r, dict) else "", "refused",
                    "Not saved: your account may no longer review the judge's claim verdicts.") for r in raw_labels]
    perm = next((p for p in REVIEWING if user is not None and user.can(p)), Permission.REVIEW)
    return labeling.submit(store, user, SURFACE, raw_labels, _write, perm)


def record(store: Store, user: User, check_id: int, claim_no: int, verdict: str) -> dict[str, Any]:
    """Record one review (the API's way, without the surface); what the judge said comes back
    with it, now that the reviewer has committed theirs."""
    _require_review(user)
    review_id, item = store.write(lambda cur: _record_tx(cur, user, check_id, claim_no, verdict))
    return {"review_id": review_id, "check_id": check_id, "claim_no": claim_no, "reviewer": user.username,
            "verdict": verdict, "judge": item["judge"], "agrees": verdict == item["judge"], "quote": item["quote"],
            "justification": item["justification"]}


# ---- after the review: the judge's verdicts and the agreement ---------------------------------


def my_reviews(store: Store, user: User, system: str | None = None, limit: int = 20) -> list[dict]:
    """The reviewer's latest reviews with what the judge said (shown only once theirs is saved)."""
    _require_review(user)
    return [{**r, "agrees": r["review"] == r["judge"]}
            for r in faithfulness.current_reviews(store, user.username, system)[:limit]]


def report(store: Store, user: User, system: str | None = None) -> dict[str, Any]:
    """People against the judge over every current review of a claim that is still reviewable
    (the answer's latest check, its text unchanged): pooled over reviewers (each reviewer's
    review of a claim one pair) and per reviewer; reviews of superseded or stale checks are
    counted apart (they measured a judge run that no longer stands)."""
    _require_any(user, READING, "see the judge's agreement with reviewers")
    live = {(r["check_id"], r["claim_no"]) for r in faithfulness.reviewable_claims(store, system)}
    reviews = faithfulness.current_reviews(store, None, system)
    kept = [r for r in reviews if (int(r["check_id"]), int(r["claim_no"])) in live]
    by: dict[str, list[dict]] = {}
    for r in kept:
        by.setdefault(r["reviewer"], []).append(r)

    def figures(rows: list[dict]) -> dict[str, Any]:
        return claim_agreement([r["review"] for r in rows], [r["judge"] for r in rows]).as_dict()

    return {"system": system, "reviews": len(kept), "claims": len({(r["check_id"], r["claim_no"]) for r in kept}),
            "left_out_stale": len(reviews) - len(kept), "reviewers": sorted(by),
            "judges": sorted({r["model"] for r in kept}), "check_shas": sorted({r["check_sha"] for r in kept}),
            "overall": figures(kept), "per_reviewer": {name: figures(rows) for name, rows in sorted(by.items())}}
