"""The golden-set artifact: canonical corpus, live store, frozen versions, exports.

Scorers (``golden_store.scoring``) consume frozen versions only; see DESIGN.md.

The public names load on first use (PEP 562): ``import golden_store`` stays cheap, so a
command such as ``golden score`` does not pay for DuckDB, pandas and the version format
before it needs them.
"""

from __future__ import annotations

import re
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The studio's version is written in one place, pyproject.toml's [project] version; it goes
# into every manifest as ``studio_version``. It is bumped with every migration or frozen-format
# change (CONTRIBUTING.md, "The version"). ``__version__`` is read on first use, below.
DISTRIBUTION = "golden-studio"
__version__: str  # for type checkers; the value comes from __getattr__


def _studio_version(checkout: Path | None = None) -> str:
    """pyproject.toml's version: read from the source checkout this package sits in (an
    editable install's metadata keeps the version of its last ``pip install``, so after a bump
    the file is the truth), else from the installed distribution's metadata, else "unknown"."""
    checkout = Path(__file__).resolve().parent.parent if checkout is None else checkout
    try:
        text = (checkout / "pyproject.toml").read_text("utf-8")
    except OSError:
        text = ""
    project = re.search(r"^\[project\][ \t]*$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    if project:
        name = re.search(r'^name\s*=\s*"([^"]+)"', project.group(1), re.MULTILINE)
        version = re.search(r'^version\s*=\s*"([^"]+)"', project.group(1), re.MULTILINE)
        if name and version and name.group(1) == DISTRIBUTION:
            return version.group(1)
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


_WHERE = {
    "CanonicalText": "golden_store.core.canonical",
    "canonical_text": "golden_store.core.canonical",
    "canonicalize": "golden_store.core.canonical",
    "GoldenError": "golden_store.core.errors",
    "Store": "golden_store.db.store",
    "FrozenVersion": "golden_store.versions.reader",
    "load_version": "golden_store.versions.reader",
}

__all__ = ["__version__", *sorted(_WHERE)]

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from golden_store.core.canonical import CanonicalText, canonical_text, canonicalize  # noqa: F401
    from golden_store.core.errors import GoldenError  # noqa: F401
    from golden_store.db.store import Store  # noqa: F401
    from golden_store.versions.reader import FrozenVersion, load_version  # noqa: F401


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = version = _studio_version()
        return version
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'golden_store' has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
