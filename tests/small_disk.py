"""A real filesystem with little room, for the disk-full tests (issue 37, probes F1/F2).

First choice: a tmpfs of a few MB mounted on a folder of the test's own (``mount -t tmpfs``
needs root or CAP_SYS_ADMIN; the tests and CI run as root). A write past its size fails with
ENOSPC, as on a full disk, and ``fill`` leaves exactly as much room as a test asks for.

Where mounting is refused, the same folder with the file-size limit (RLIMIT_FSIZE) of the
process under test: a write past it fails with EFBIG, which the studio reports as it reports
a full disk (the sentence begins "The file-size limit ..."). The limit is the room the tmpfs
would have had, per file; the test's warnings say which mechanism ran. Either way the kernel
refuses the write: nothing is mocked.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MB = 1024 * 1024


def _mount(folder: Path, size_mb: int) -> str | None:
    """Mount a tmpfs of ``size_mb`` on ``folder``; None, or why it could not.
    ``GOLDEN_TEST_SMALL_DISK=fsize`` takes the fallback on purpose (to check it as root)."""
    if os.environ.get("GOLDEN_TEST_SMALL_DISK") == "fsize":
        return "GOLDEN_TEST_SMALL_DISK=fsize"
    if shutil.which("mount") is None:
        return "no mount command"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0777", "tmpfs", str(folder)],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip() or f"mount exited {r.returncode}")


class SmallDisk:
    """``root``: a folder with ``size_mb`` of room (a tmpfs, else a file-size limit)."""

    def __init__(self, root: Path, size_mb: int) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.size_mb = size_mb
        self.why_not_tmpfs = _mount(root, size_mb)
        self.mechanism = "tmpfs" if self.why_not_tmpfs is None else "fsize"
        if self.why_not_tmpfs is not None:
            warnings.warn(f"cannot mount a tmpfs ({self.why_not_tmpfs}): the disk-full test runs with a file-size "
                          "limit (RLIMIT_FSIZE, EFBIG) instead", stacklevel=2)
        self._limit: int | None = size_mb * MB  # fsize: what any one file may reach in a run under the limit
        self._filler = root / ".filler"

    @property
    def no_room_head(self) -> str:
        """How the studio's sentence begins for this mechanism (golden_store.core.disk)."""
        return "No space left on the disk holding" if self.mechanism == "tmpfs" else \
            "The file-size limit of this process (ulimit -f) stopped a write to"

    def free_bytes(self) -> int:
        return shutil.disk_usage(self.root).free

    def fill(self, leave_kb: int) -> None:
        """Leave only ``leave_kb`` KiB of room: a filler file (tmpfs), or the limit (fsize)."""
        if self.mechanism == "fsize":
            self._limit = leave_kb * 1024
            return
        free = self.free_bytes() + (self._filler.stat().st_size if self._filler.exists() else 0)
        self._filler.unlink(missing_ok=True)
        size = max(0, free - leave_kb * 1024)
        with open(self._filler, "wb") as f:
            try:
                os.posix_fallocate(f.fileno(), 0, size)
            except OSError:  # fallocate refused: write it out (stops at a full disk, which is the point)
                chunk = b"\0" * MB
                try:
                    while f.tell() < size:
                        f.write(chunk[: min(MB, size - f.tell())])
                    f.flush()
                except OSError:
                    pass

    def make_room(self) -> None:
        """As an operator would: delete the filler and grow the disk four times (tmpfs), or
        lift the limit (fsize)."""
        self._filler.unlink(missing_ok=True)
        self._limit = None
        if self.mechanism == "tmpfs":
            subprocess.run(["mount", "-o", f"remount,size={self.size_mb * 4}m", str(self.root)], check=True,
                           capture_output=True)

    def _apply_limit(self) -> None:
        if self._limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (self._limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    def run(self, cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """``cmd`` in a subprocess that meets the small disk (under the limit, for fsize; Python
        ignores SIGXFSZ, so a write past it fails with EFBIG instead of killing the process)."""
        preexec = self._apply_limit if self.mechanism == "fsize" else None
        return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=preexec, **kwargs)

    @contextmanager
    def in_this_process(self) -> Iterator[None]:
        """While the block runs, this process meets the small disk too (the API in a thread):
        nothing to do for a tmpfs; the soft file-size limit, lifted afterwards, for fsize."""
        if self.mechanism != "fsize" or self._limit is None:
            yield
            return
        before = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (self._limit, before[1]))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, before)

    def close(self) -> None:
        """Unmount (lazily if a process still holds a file there) and leave an empty folder."""
        if self.mechanism != "tmpfs":
            return
        r = subprocess.run(["umount", str(self.root)], capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["umount", "-l", str(self.root)], capture_output=True, text=True)


@contextmanager
def small_disk(root: Path, size_mb: int) -> Iterator[SmallDisk]:
    disk = SmallDisk(root, size_mb)
    try:
        yield disk
    finally:
        disk.close()
