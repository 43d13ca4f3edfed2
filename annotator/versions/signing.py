"""Signed frozen versions as people use them (role-checked): make a key, freeze signed,
verify against a trusted public key. The crypto lives in golden_store.versions.signing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from annotator.events import webhooks
from annotator.people.identity import User, require
from annotator.people.roles import Permission
from golden_store import freezing, versions
from golden_store.versions import signing
from golden_store.db.store import Store


def keygen(path: str | Path) -> tuple[Path, Path, str]:
    """A new Ed25519 key pair: ``path`` (private, owner-only) and ``path.pub``."""
    return signing.keygen(path)


def freeze_signed(store: Store, user: User, name: str, key_file: str | Path, *, note: str = "",
                  hit_rule: str | None = None,
                  progress: Callable[[int, int, str], None] | None = None) -> freezing.FreezeResult:
    """Freeze ``name`` and sign it with the private key in ``key_file`` (read before anything
    is written, so a bad key file freezes nothing)."""
    require(user, Permission.FREEZE)
    key = signing.load_private_key(key_file)
    kwargs = {"hit_rule": hit_rule} if hit_rule else {}
    result = freezing.freeze(store, name, actor=user.username, note=note, progress=progress, signing_key=key,
                             **kwargs)
    webhooks.emit_frozen(store, result, user.username, signed=True)  # after the publish (see emit_frozen)
    return result


def verify(user: User, vdir: Path | str, name: str, *, live_corpus_digest: str | None = None,
           verify_key: str | Path | None = None) -> versions.VerifyReport:
    """:func:`golden_store.versions.verify` with a trusted key given explicitly."""
    require(user, Permission.VIEW_VERSIONS)
    return versions.verify(name, vdir, live_corpus_digest=live_corpus_digest, verify_key=verify_key)
