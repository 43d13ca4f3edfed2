"""The agreement bar in force, the SQL side (METHODOLOGY §3.7).

The bar is a lead's recorded choice: each choice is an appended event, the latest one is in
force, and with none the methodology's bar applies (binary κ ≥ 0.7 and unweighted graded
κ ≥ 0.6). The figures are read against it by the pure ``AgreementBar.check``.
"""

from __future__ import annotations

from typing import Any

from golden_store.db.store import Store, utcnow
from golden_store.scoring.agreement_report import AgreementBar

_LATEST = ("SELECT graded_measure, graded_threshold, binary_threshold, note, actor, created_at "
           "FROM agreement_bar_events ORDER BY event_id DESC LIMIT 1")


def _from_row(row: tuple | None) -> tuple[AgreementBar, dict[str, Any]]:
    if row is None:
        return AgreementBar(), {"chosen_by": None, "chosen_at": None, "note": None}
    measure, graded, binary, note, actor, at = row
    bar = AgreementBar(measure, float(graded), float(binary))
    return bar, {"chosen_by": actor, "chosen_at": at.isoformat() + "Z", "note": note}


def current(store: Store) -> tuple[AgreementBar, dict[str, Any]]:
    """The bar in force and who chose it when (all None for the methodology's default)."""
    return _from_row(store.read_one(_LATEST))


def current_tx(cur: Any) -> tuple[AgreementBar, dict[str, Any]]:
    """:func:`current` inside a transaction (the freeze reads it in its own snapshot)."""
    return _from_row(cur.execute(_LATEST).fetchone())


def choose(store: Store, bar: AgreementBar, *, actor: str, note: str | None = None) -> None:
    """Record a lead's choice of bar (appended; the latest is in force)."""
    store.write(lambda cur: cur.execute(
        "INSERT INTO agreement_bar_events (graded_measure, graded_threshold, binary_threshold, note, actor, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?)",
        [bar.graded_measure, bar.graded_threshold, bar.binary_threshold, note or None, actor, utcnow()]))


def history(store: Store) -> list[dict]:
    """Every choice, newest first."""
    return store.read_dicts("SELECT graded_measure, graded_threshold, binary_threshold, note, actor, created_at "
                            "FROM agreement_bar_events ORDER BY event_id DESC")
