"""The frozen-version format: a version's folder, manifest and digests (``frozen``), the
signature (``signing``), the qrels and chunk-label rules (``qrels``, ``chunk_labels``) and
exports (``export``). Reads and checks versions; never opens the database.

May import only ``golden_store.core`` (see README "Layout"; tests/test_layering.py checks it).
The format's public names load from ``frozen`` on first use (PEP 562), so
``from golden_store.versions import load_version`` works and importing a sibling such as
``golden_store.versions.signing`` does not pay for pandas and pyarrow.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# the public names of golden_store.versions.frozen, re-exported here
_FROZEN = (
    "FORMAT", "DEFAULT_HIT_RULE", "DATA_FILES", "QRELS_FILE", "JUDGE_LABELS_FILE", "OPTIONAL_DATA_FILES",
    "JUDGE_LABEL_COLUMNS", "LABEL_SETS", "check_labels", "label_counts", "judge_provenance", "file_entry", "data_digest",
    "write_manifest", "manifest_digest", "deep_freeze", "thaw", "validate_name", "span_problem",
    "short_repr", "list_versions", "version_names", "version_page", "TEMP_PREFIX", "OWNER_FILE",
    "STALE_TEMP_S", "new_temp_folder", "sweep_temp_folders", "FrozenVersion", "load_version",
    "VerifyReport", "verify", "diff_versions", "format_diff", "split_version_url", "version_exists",
)

__all__ = sorted(_FROZEN)

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from golden_store.versions.frozen import *  # noqa: F401,F403


def __getattr__(name: str) -> Any:
    if name not in _FROZEN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module("golden_store.versions.frozen"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROZEN))
