"""The frozen-version format: the files, names and digests of a version (``format``), where
versions live and the folders of freezes under way (``folders``), the checks every load runs
(``integrity``), reading a version (``reader``: ``FrozenVersion``, ``load_version``),
verifying one (``verification``), diffing two (``diff``), writing one's files (``writer``:
the freeze's half without SQL), the signature (``signing``), the
qrels and chunk-label rules (``qrels``, ``chunk_labels``), object storage (``storage``) and
exports (``export``). Reads and checks versions; never opens the database.

May import only ``golden_store.core`` (see README "Layout"; tests/test_layering.py checks it).
The format's public names load from their module on first use (PEP 562), so
``from golden_store.versions import load_version`` works and importing a sibling such as
``golden_store.versions.signing`` does not pay for pandas and pyarrow.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# the public names of the format's modules, re-exported here: name -> the module holding it
_WHERE: dict[str, str] = {
    **dict.fromkeys((
        "FORMAT", "DEFAULT_HIT_RULE", "DATA_FILES", "QRELS_FILE", "JUDGE_LABELS_FILE", "OPTIONAL_DATA_FILES",
        "JUDGE_LABEL_COLUMNS", "LABEL_SETS", "check_labels", "label_counts", "judge_provenance", "data_digest",
        "manifest_digest", "deep_freeze", "thaw", "validate_name", "span_problem", "short_repr"),
        "golden_store.versions.format"),
    **dict.fromkeys(("file_entry", "write_manifest"), "golden_store.versions.writer"),
    **dict.fromkeys((
        "list_versions", "version_names", "version_page", "TEMP_PREFIX", "OWNER_FILE", "STALE_TEMP_S",
        "new_temp_folder", "sweep_temp_folders", "split_version_url", "version_exists"), "golden_store.versions.folders"),
    **dict.fromkeys(("FrozenVersion", "load_version"), "golden_store.versions.reader"),
    **dict.fromkeys(("VerifyReport", "verify"), "golden_store.versions.verification"),
    **dict.fromkeys(("diff_versions", "format_diff"), "golden_store.versions.diff"),
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from golden_store.versions.diff import diff_versions, format_diff  # noqa: F401
    from golden_store.versions.folders import (  # noqa: F401
        OWNER_FILE, STALE_TEMP_S, TEMP_PREFIX, list_versions, new_temp_folder, split_version_url, sweep_temp_folders,
        version_exists, version_names, version_page)
    from golden_store.versions.format import (  # noqa: F401
        DATA_FILES, DEFAULT_HIT_RULE, FORMAT, JUDGE_LABEL_COLUMNS, JUDGE_LABELS_FILE, LABEL_SETS, OPTIONAL_DATA_FILES,
        QRELS_FILE, check_labels, data_digest, deep_freeze, judge_provenance, label_counts, manifest_digest,
        short_repr, span_problem, thaw, validate_name)
    from golden_store.versions.reader import FrozenVersion, load_version  # noqa: F401
    from golden_store.versions.verification import VerifyReport, verify  # noqa: F401
    from golden_store.versions.writer import file_entry, write_manifest  # noqa: F401


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
