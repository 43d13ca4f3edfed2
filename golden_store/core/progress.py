"""How a long job says how far it is, without any display: a callback and named phases.

Library code (the store, the importers, freezing) calls ``progress(done, total)`` or
``progress(done, total, phase)``; whoever started the job decides what a person sees (the
CLI's terminal bars in ``annotator.cli.progress``, the app's ``st.progress``, a background
job's counters). Nothing here imports a UI library, so ``golden_store`` stays usable from a
script or a server with none installed.

Why phases: a job is often several steps of different kinds (a corpus import reads bytes,
then writes documents, then indexes them). One bar over the first step alone left a person
looking at a finished bar and then silence for a third of the run (issue 38, item 4). A
:class:`Phase` names the step and the unit its ``done``/``total`` count in, so a display can
show each step with its own units, rate and time left. A plain ``str`` third argument is a
note on the current step (freezing: "writing qrels.parquet"), kept for callers that had one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

BYTES = "bytes"


@dataclass(frozen=True)
class Phase:
    """One step of a long job: ``name`` as a person reads it ("writing documents to the
    store"), ``unit`` what its counts are (:data:`BYTES`, or a plural noun such as
    "documents"). ``str()`` is the name, so a display that only knows strings still reads it."""

    name: str
    unit: str

    def __str__(self) -> str:
        return self.name


Progress = Callable[..., None]
"""``progress(done, total)`` or ``progress(done, total, phase)``: ``phase`` a :class:`Phase`
(a new step) or a ``str`` (a note on the current one). ``done == total`` ends a step."""


def report(progress: Progress | None, done: int, total: int, phase: Phase | str | None = None) -> None:
    """Tell ``progress`` (if any) how far ``phase`` is; a no-op without a callback, or for a
    step with nothing to count (``total`` 0: an import with nothing new to write)."""
    if progress is None or total <= 0:
        return
    if phase is None:
        progress(done, total)
    else:
        progress(done, total, phase)


def in_phase(progress: Progress | None, phase: Phase) -> Progress | None:
    """``progress`` for code that reports only ``(done, total)`` (the index builder, the
    passage placer), each call told as ``phase``."""
    if progress is None:
        return None
    target = progress

    def told(done: int, total: int, *_: object) -> None:
        target(done, total, phase)

    return told


@contextmanager
def step(progress: Progress | None, total: int, phase: Phase) -> Iterator[None]:
    """A step that is one blocking call (a vectorised read, one SQL statement): told at its
    start (0 of ``total``) and, when the block returns, at its end; a display shows it running
    (its elapsed time) rather than nothing. An exception leaves the step unfinished."""
    report(progress, 0, total, phase)
    yield
    report(progress, total, total, phase)
