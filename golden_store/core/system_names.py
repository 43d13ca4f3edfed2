"""The one rule for a system's name (runs, answers, recorded results).

A system name is written as a bare word in places people type and read it: ``golden runs
import --system``, TREC run files (whose columns are separated by whitespace), score tables.
So it is non-empty and holds no whitespace. Every place a system name enters checks it here,
with the same message. (A ``|`` is fine: nugget support labels have a real ``system`` column,
nothing splits a packed key any more.)
"""

from __future__ import annotations

from golden_store.core.errors import ValidationError
from golden_store.core.textin import shown

RULE = "a system name must be non-empty, with no spaces (e.g. bm25-v2)"


def check_system_name(system: object) -> str:
    """``system`` unchanged if it follows :data:`RULE`, else a ValidationError naming it."""
    if not isinstance(system, str) or not system or any(c.isspace() for c in system):
        raise ValidationError(f"System name {shown(system)} refused: {RULE}.")
    return system
