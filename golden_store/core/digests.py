"""The content digests written into every manifest, with no database import.

``corpus_digest`` is part of the frozen-version format: :func:`golden_store.versions.verify`
re-derives it from a version's files, so its definition lives beside the format rather than
in the live store's corpus module (``golden_store.live.documents`` imports these very functions for
the live corpus, so the two cannot disagree).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_digest(doc_hashes: Iterable[tuple[str, str]]) -> str:
    """Digest of the canonical corpus: sha256 over ``doc_id\\tcanonical_sha256`` lines,
    sorted by doc_id. Equal digests mean every document's canonical text is equal; it does
    not depend on raw formatting that canonicalization removes."""
    h = hashlib.sha256()
    for doc_id, sha in sorted(doc_hashes):
        h.update(f"{doc_id}\t{sha}\n".encode("utf-8"))
    return "sha256:" + h.hexdigest()
