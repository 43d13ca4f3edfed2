"""The golden-set artifact: canonical corpus, live store, frozen versions, exports.

Scorers (``golden_store.scoring``) consume frozen versions only; see DESIGN.md.

The public names load on first use (PEP 562): ``import golden_store`` stays cheap, so a
command such as ``golden score`` does not pay for DuckDB, pandas and the version format
before it needs them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_WHERE = {
    "CanonicalText": "golden_store.core.canonical",
    "canonical_text": "golden_store.core.canonical",
    "canonicalize": "golden_store.core.canonical",
    "GoldenError": "golden_store.core.errors",
    "Store": "golden_store.db.store",
    "FrozenVersion": "golden_store.versions.frozen",
    "load_version": "golden_store.versions.frozen",
}

__all__ = ["__version__", *sorted(_WHERE)]

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from golden_store.core.canonical import CanonicalText, canonical_text, canonicalize  # noqa: F401
    from golden_store.core.errors import GoldenError  # noqa: F401
    from golden_store.db.store import Store  # noqa: F401
    from golden_store.versions.frozen import FrozenVersion, load_version  # noqa: F401


def __getattr__(name: str) -> Any:
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'golden_store' has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
