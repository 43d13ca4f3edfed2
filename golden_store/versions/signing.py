"""Signed frozen versions (issue 18): a team tells its own frozen sets from edited copies.

A freeze made with a private Ed25519 key writes ``signature.json`` beside the manifest.
It signs the version's name and its ``content_digest``, which hashes the whole manifest,
and the manifest lists every file's sha256: the signature covers every byte of the version.
Whoever holds only the public key (``GOLDEN_VERIFY_KEY``: the key itself or a file holding
it) can check that a version was frozen by the key's owner, and not rewritten since, even
when the rewriter recomputed every digest.

Key files: the private key is PKCS#8 PEM (``golden keygen`` writes it readable by its owner
only); the public key is one line, ``ed25519:<base64 of the 32 raw bytes>``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from golden_store.core.errors import ValidationError

SIGNATURE_FILE = "signature.json"
SIGNATURE_FORMAT = "golden-studio/version-signature@1"
VERIFY_KEY_ENV = "GOLDEN_VERIFY_KEY"
_PREFIX = "ed25519:"


def _crypto():
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    except ImportError:  # pragma: no cover - a dependency of the package
        raise ValidationError("Signed versions need the 'cryptography' package: pip install cryptography.") from None
    return InvalidSignature, serialization, Ed25519PrivateKey, Ed25519PublicKey


def public_key_text(public_key: Any) -> str:
    """``ed25519:<base64>`` for a public key object."""
    _, serialization, _, _ = _crypto()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return _PREFIX + base64.b64encode(raw).decode("ascii")


def fingerprint(key_text: str) -> str:
    """A short name for a public key, for messages: ``ed25519:`` + 16 hex digits of its sha256."""
    return _PREFIX + hashlib.sha256(key_text.encode("utf-8")).hexdigest()[:16]


def keygen(path: str | Path) -> tuple[Path, Path, str]:
    """Write a new private key to ``path`` (mode 0600) and its public key to ``path.pub``;
    refuse to overwrite either. Returns (private path, public path, public key text)."""
    _, serialization, Ed25519PrivateKey, _ = _crypto()
    priv = Path(path)
    pub = priv.with_name(priv.name + ".pub")
    for p in (priv, pub):
        if p.exists():
            raise ValidationError(f"{p} already exists; a key is never overwritten. Pick another path.")
    if not priv.parent.is_dir():
        raise ValidationError(f"{priv.parent}: no such folder.")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(priv, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    text = public_key_text(key.public_key())
    pub.write_text(text + "\n", encoding="ascii")
    return priv, pub, text


def load_private_key(path: str | Path) -> Any:
    """The Ed25519 private key in ``path`` (PKCS#8 PEM, as ``golden keygen`` writes it)."""
    _, serialization, Ed25519PrivateKey, _ = _crypto()
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError:
        raise ValidationError(f"{p}: no such key file (make one with `golden keygen {p}`).") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise ValidationError(f"{p}: not an unencrypted PEM private key (make one with `golden keygen`).") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValidationError(f"{p}: not an Ed25519 key (make one with `golden keygen`).")
    return key


def parse_public_key(text: str) -> Any:
    """A public key from ``ed25519:<base64>`` text."""
    _, _, _, Ed25519PublicKey = _crypto()
    t = text.strip()
    if not t.startswith(_PREFIX):
        raise ValidationError(f"A verify key looks like 'ed25519:<base64>' (the .pub file `golden keygen` writes); "
                              f"got {t[:30]!r}.")
    try:
        raw = base64.b64decode(t[len(_PREFIX):], validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise ValidationError("The verify key is not a valid Ed25519 public key (32 bytes, base64).") from None


def resolve_verify_key(key: str | Path | None = None) -> str | None:
    """The trusted public key text: ``key`` (the key or a file holding it), else
    ``GOLDEN_VERIFY_KEY``, else None (no key configured: signatures are not required)."""
    raw = str(key) if key is not None else os.environ.get(VERIFY_KEY_ENV)
    if not raw or not raw.strip():
        return None
    raw = raw.strip()
    if not raw.startswith(_PREFIX):
        p = Path(raw)
        try:
            raw = p.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            raise ValidationError(f"Verify key {str(p)[:200]!r} is neither an 'ed25519:<base64>' key nor a readable "
                                  f"key file (set {VERIFY_KEY_ENV} or --key to the .pub file `golden keygen` "
                                  "wrote).") from None
    parse_public_key(raw)
    return raw


def _message(name: str, content_digest: str) -> bytes:
    body = {"format": SIGNATURE_FORMAT, "dataset_version": name, "content_digest": content_digest}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


def signature_document(private_key: Any, name: str, content_digest: str) -> dict[str, str]:
    """The contents of ``signature.json`` for a version."""
    sig = private_key.sign(_message(name, content_digest))
    return {"format": SIGNATURE_FORMAT, "algorithm": "ed25519", "dataset_version": name,
            "content_digest": content_digest, "public_key": public_key_text(private_key.public_key()),
            "signature": base64.b64encode(sig).decode("ascii")}


def write_signature(folder: Path, private_key: Any, name: str, content_digest: str) -> None:
    with (folder / SIGNATURE_FILE).open("w", encoding="utf-8") as fh:
        json.dump(signature_document(private_key, name, content_digest), fh, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())


def check_signature(folder: Path, name: str, manifest: Mapping[str, Any], trusted: str | None
                    ) -> tuple[list[str], str | None]:
    """(problems, who signed) for a version folder. With a ``trusted`` key the version must
    carry a valid signature by that key; without one a signature present must still be
    valid for this content (it is then only a consistency check: anyone can sign)."""
    InvalidSignature, _, _, _ = _crypto()
    sp = folder / SIGNATURE_FILE
    if not sp.exists():
        if trusted:
            return [f"{SIGNATURE_FILE}: missing, and a verify key is configured ({fingerprint(trusted)}): only "
                    "versions signed by that key are accepted"], None
        return [], None
    try:
        doc = json.loads(sp.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        return [f"{SIGNATURE_FILE}: unreadable ({str(exc)[:120]})"], None
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str) for k in ("public_key", "signature")):
        return [f"{SIGNATURE_FILE}: not a signature document"], None
    signer = doc["public_key"]
    try:
        key = parse_public_key(trusted or signer)
        sig = base64.b64decode(doc["signature"], validate=True)
    except (ValidationError, ValueError):
        return [f"{SIGNATURE_FILE}: the signature or its key is not valid base64 Ed25519"], None
    digest = manifest.get("content_digest")
    try:
        key.verify(sig, _message(name, str(digest)))
    except InvalidSignature:
        if trusted and signer != trusted:
            return [f"{SIGNATURE_FILE}: signed by {fingerprint(signer)}, not by the configured verify key "
                    f"{fingerprint(trusted)}"], None
        return [f"{SIGNATURE_FILE}: the signature does not match this version's name and content_digest "
                "(the version was edited, copied or renamed after signing)"], None
    return [], fingerprint(trusted or signer)
