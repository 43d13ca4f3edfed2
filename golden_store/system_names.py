"""The one rule for a system's name (runs, answers, recorded results).

Nugget support labels are keyed ``system|query_id|nugget_id`` in ``verdict_events`` and
read back with ``split_part(item_id, '|', 3)``: a ``|`` inside a system name would shift
the parts and silently drop that system's labels from scoring. Until that key is split into
real columns, every place a system name enters refuses ``|`` with the same message.
"""

from __future__ import annotations

from golden_store.errors import ValidationError
from golden_store.textin import shown

RULE = "a system name must be non-empty, with no spaces and no '|' (e.g. bm25-v2)"


def check_system_name(system: object) -> str:
    """``system`` unchanged if it follows :data:`RULE`, else a ValidationError naming it."""
    if not isinstance(system, str) or not system or any(c.isspace() or c == "|" for c in system):
        raise ValidationError(f"System name {shown(system)} refused: {RULE}.")
    return system
