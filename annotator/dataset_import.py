"""Reading back what the studio exports, for the exports that are not a version's (issue 38
item 2): a ``golden results export`` Parquet file back into a store, so recorded evaluations
move between stores (a CI runner's store into the team's) with their provenance. A version's
own exports read back through the importers of their kinds (``golden import-beir``, ``queries
import``, ``judgments import``; see ``tests/annotator/test_export_round_trip.py``)."""

from __future__ import annotations

from pathlib import Path

from annotator.identity import User, require
from annotator.roles import Permission
from golden_store.db.store import Store


def import_results(store: Store, user: User, path: str | Path) -> dict[str, list[str]]:
    """Recorded evaluations from a results export (engineers, as recording one:
    ``Permission.IMPORT_RUNS``); all or nothing, never overwriting (see
    :func:`golden_store.live.results.import_results`)."""
    require(user, Permission.IMPORT_RUNS)
    from golden_store.live import results

    return results.import_results(store, Path(path))
