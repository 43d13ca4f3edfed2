"""Background jobs for long work started from a page (bulk nugget drafting): a thread per
job, its progress readable from any rerun of any session in this process. Jobs live as long
as the process; their results are in the store, so nothing is lost if the app restarts
(the job's own progress display is)."""

from __future__ import annotations

import itertools
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

_lock = threading.Lock()
_jobs: dict[str, "Job"] = {}
_ids = itertools.count(1)


@dataclass
class Job:
    job_id: str
    label: str
    owner: str
    done: int = 0
    total: int = 0
    status: str = "running"  # running | done | failed
    result: Any = None
    error: str | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total


def start(label: str, owner: str, work: Callable[[Callable[[int, int], None]], Any]) -> Job:
    """Run ``work(progress)`` in a daemon thread; returns the job at once."""
    job = Job(f"job-{next(_ids)}", label, owner)

    def run() -> None:
        try:
            job.result = work(job.progress)
            job.status = "done"
        except Exception as exc:  # noqa: BLE001 - a job reports its failure instead of dying silently
            job.error = f"{exc.__class__.__name__}: {exc}"
            job.status = "failed"
            traceback.print_exc()

    with _lock:
        _jobs[job.job_id] = job
    threading.Thread(target=run, name=job.job_id, daemon=True).start()
    return job


def get(job_id: str | None) -> Job | None:
    with _lock:
        return _jobs.get(job_id) if job_id else None


def running(label_prefix: str) -> list[Job]:
    """The jobs of this process still running whose label starts with ``label_prefix``: what
    another tab, or the same tab after a refresh, shows progress for."""
    with _lock:
        return [j for j in _jobs.values() if j.status == "running" and j.label.startswith(label_prefix)]
