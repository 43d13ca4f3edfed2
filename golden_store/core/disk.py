"""A write that failed for want of room, told apart from other failures and said in one
sentence (issue 37, probes F1/F2: a full disk during an import or a freeze ended in a
traceback).

Three causes look alike to the studio and are told apart here: the disk is full (ENOSPC), the
disk quota is used up (EDQUOT), the process's file-size limit (``ulimit -f``, EFBIG) was
reached. They reach the studio as an ``OSError`` with that errno (Python, pyarrow), or only as
text: DuckDB says ``Could not write file "…": No space left on device`` in a
``duckdb.IOException`` or ``TransactionException``, so the errno's own message is looked for
in the exception's text too. No database import: the engines translate their errors with it
(``golden_store.db``), and so do the freeze and the corpus index.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from golden_store.core.errors import DiskFullError

NO_ROOM_ERRNOS: tuple[int, ...] = tuple(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG) if code is not None)
# the C library's text for each ("No space left on device", "Disk quota exceeded", "File too large")
_TEXTS = {code: os.strerror(code) for code in NO_ROOM_ERRNOS}
# tantivy hides the io::Error of a writer thread; a disk with less than this free after a
# failed index write is taken to be the cause (a full disk leaves less than a page)
NEARLY_FULL_BYTES = 4 * 1024 * 1024


def no_room_errno(exc: BaseException | None) -> int | None:
    """The errno (ENOSPC, EDQUOT or EFBIG) if ``exc``, or an exception it was raised from,
    is a write that failed for want of room; else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in NO_ROOM_ERRNOS:
            return int(exc.errno)
        text = str(exc)
        for code, message in _TEXTS.items():
            if message in text:
                return code
        exc = exc.__cause__ or exc.__context__
    return None


def nearly_full(path: str | os.PathLike[str]) -> bool:
    """Whether the disk holding ``path`` (or its nearest existing parent) has almost no room
    left: for libraries that do not say why a write failed (tantivy's writer threads)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free < NEARLY_FULL_BYTES
    except OSError:
        return False


def no_room(code: int, *, what: str, path: str | os.PathLike[str] | None, outcome: str, elsewhere: str,
            saved: bool = False) -> DiskFullError:
    """The one sentence for a write that found no room: what ran out (the disk holding
    ``what``, at ``path``), ``outcome`` (what became of the operation: "nothing was imported"),
    and what to do: make room and retry, or ``elsewhere`` (where else to point the studio).
    ``saved``: the operation's change was committed all the same (nothing to retry).

    For example: "No space left on the disk holding the versions folder (/srv/v); no version
    was written: free space on that disk and retry, or point GOLDEN_VERSIONS at a folder on a
    disk with room."
    """
    where = f" ({path})" if path is not None else ""
    if code == errno.EFBIG:
        head, fix = f"The file-size limit of this process (ulimit -f) stopped a write to {what}", "raise the limit"
    elif code == getattr(errno, "EDQUOT", -1):
        head, fix = f"The disk quota is used up on the disk holding {what}", "free space within the quota"
    else:
        head, fix = f"No space left on the disk holding {what}", "free space on that disk"
    tail = f"; {outcome}: {fix}{'' if saved else ' and retry'}, or {elsewhere}."
    return DiskFullError(head + where + tail, public=head + tail, path=None if path is None else str(path), what=what,
                         saved=saved)
