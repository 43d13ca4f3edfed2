"""Which implementation produced a number (METHODOLOGY §14.3: the metric definition is
versioned): a sha256 over every source that can change a score, recorded with each result
(``eval_results.metric_impl_sha``) and each ``evaluate`` result's definitions, so ``golden
compare`` can say "re-baseline" when two evaluations were scored by different code."""

from __future__ import annotations

import hashlib
from pathlib import Path

# Sources, besides every module of golden_store/scoring/, whose edit can change a score: how
# chunk labels come from spans (hit rules), the qrels rule, and how a frozen version hands its
# labels to the scorers (held-out filter, evidence grade). Conservative on purpose: a false
# "re-baseline" costs a re-run, a missed one makes a dashboard compare across a silent change.
SCORER_SOURCES_OUTSIDE_SCORING = ("versions/chunk_labels.py", "versions/qrels.py", "versions/format.py",
                                  "versions/reader.py")


def scorer_sources(package_root: Path | None = None) -> list[Path]:
    """Every source file whose text can change a number ``golden score`` reports, sorted:
    each ``.py`` under ``scoring/`` (found by glob, so a new module is covered the day it is
    added) and :data:`SCORER_SOURCES_OUTSIDE_SCORING`."""
    root = Path(package_root) if package_root is not None else Path(__file__).parent.parent
    files = sorted((root / "scoring").rglob("*.py")) + [root / n for n in SCORER_SOURCES_OUTSIDE_SCORING]
    return sorted(files)


def metric_impl_sha(package_root: Path | None = None) -> str:
    """sha256 over the scorer sources (METHODOLOGY §14.3: the metric definition is versioned):
    each file's path inside the package and its bytes, so a changed formula, a new module
    or a renamed one shows up as a changed sha and ``golden compare`` says re-baseline.
    Before this covered ``scoring/formulas.py`` (where every measure is computed) and
    ``stats.py``, a formula edit kept the sha."""
    root = Path(package_root) if package_root is not None else Path(__file__).parent.parent
    h = hashlib.sha256()
    for f in scorer_sources(root):
        rel = f.relative_to(root).as_posix().encode()
        data = f.read_bytes()
        h.update(len(rel).to_bytes(4, "big") + rel + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()
