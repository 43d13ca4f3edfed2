"""What the differential harness did in this process: generated stores, numbers compared,
mismatches. Reported at the end of the run by tests/differential/conftest.py (over every
xdist worker)."""

from __future__ import annotations

TOTALS: dict[str, int] = {"stores": 0, "mismatches": 0, "numbers": 0, "mutation_stores": 0}


def record(report, *, mutation: bool = False) -> None:
    TOTALS["mutation_stores" if mutation else "stores"] += 1
    if not mutation:
        TOTALS["mismatches"] += len(report.mismatches)
        TOTALS["numbers"] += sum(report.checked.values())


def merge(other: dict[str, int]) -> None:
    for k, v in other.items():
        TOTALS[k] = TOTALS.get(k, 0) + int(v)
