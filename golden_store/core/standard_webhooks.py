"""Standard Webhooks signing (https://www.standardwebhooks.com, the scheme Svix, Argilla and
others use), pure: no store, no network.

A secret is ``whsec_`` + base64 of random bytes; the signature of one message is
``v1,`` + base64(HMAC-SHA256(secret bytes, "{id}.{timestamp}.{body}")). A receiver checks it
with any Standard Webhooks library, e.g. ``standardwebhooks.Webhook(secret).verify(body, headers)``."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

# the studio's event types (README "Webhooks"); here, beside the signing, so the CLI's parser
# can offer them without importing the store
EVENT_TYPES = ("version.frozen", "round.completed", "agreement.below_bar", "adjudication.decided",
               "evaluation.recorded")
TEST_EVENT = "webhook.test"

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32  # the spec asks for at least 24


def new_secret() -> str:
    """A fresh endpoint secret (shown once to whoever adds the endpoint)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_bytes(secret: str) -> bytes:
    """The key a secret stands for: the base64 after ``whsec_``."""
    raw = secret[len(SECRET_PREFIX):] if secret.startswith(SECRET_PREFIX) else secret
    return base64.b64decode(raw)


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value for one message."""
    signed = msg_id.encode("utf-8") + b"." + str(int(timestamp)).encode("ascii") + b"." + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Every header a delivery carries: id (the same on every retry, so a receiver can
    de-duplicate), timestamp (of this attempt, in seconds) and signature."""
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(timestamp)),
            "webhook-signature": sign(secret, msg_id, timestamp, body), "content-type": "application/json"}
