"""The golden-set artifact: canonical corpus, live store, frozen versions, exports.

Scorers (``golden_store.scoring``) consume frozen versions only; see DESIGN.md.
"""

from __future__ import annotations

__version__ = "0.1.0"

from golden_store.canonical import CanonicalText, canonical_text, canonicalize  # noqa: E402
from golden_store.errors import GoldenError  # noqa: E402
from golden_store.store import Store  # noqa: E402
from golden_store.versions import FrozenVersion, load_version  # noqa: E402

__all__ = [
    "CanonicalText",
    "FrozenVersion",
    "GoldenError",
    "Store",
    "__version__",
    "canonical_text",
    "canonicalize",
    "load_version",
]
