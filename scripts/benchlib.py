"""Helpers shared by the benchmark scripts: peak memory of the measuring process."""

from __future__ import annotations

import resource


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _maxrss_kib() -> int:
    """Peak RSS of this process's own address space, KiB.

    ``VmHWM`` rather than ``getrusage().ru_maxrss``: on Linux ``ru_maxrss`` survives
    ``exec``, so a child started by a 250 MiB parent reports at least 250 MiB (and so does
    the parent's ``RUSAGE_CHILDREN``). ``VmHWM`` belongs to the child's fresh address space.
    """
    hwm = _status_kib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _mark_before() -> tuple[int, int]:
    """(peak so far, current RSS), then reset the peak so the next reading is the call's own."""
    peak, cur = _maxrss_kib(), _status_kib("VmRSS") or 0
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass
    return peak, cur


def print_profile(path: str, title: str, n: int = 16) -> None:
    """The top ``n`` entries of a cProfile dump, by cumulative and by own time."""
    import io
    import pstats

    for key in ("cumulative", "tottime"):
        buf = io.StringIO()
        pstats.Stats(path, stream=buf).strip_dirs().sort_stats(key).print_stats(n)
        text = buf.getvalue()
        start = text.find("   ncalls")
        print(f"\n--- profile: {title}, top {n} by {key} ---")
        print(text[start:].rstrip())
