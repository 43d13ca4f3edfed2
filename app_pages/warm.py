"""Warm the app process while the first page waits for a person (issue 19).

Why: a page's first render after the server started paid for what the process had not
done yet: importing altair (~0.3 s, the first chart on Home, Agreement, Power), building its
JSON-schema validator (the first chart's ``to_dict``, ~0.2 s), Streamlit's emoji table (the
first ``st.success``/``st.warning``, ~0.15 s), the annotator modules behind the pages
(``annotator.judge.calibration`` ~0.1 s) - over 1 s of a first render on 2 shared cores, paid again
by whoever opened each page first. :func:`start` does that work once per process in a
background thread, started by the entry script's first run (the sign-in page, which then
waits for a password), one step at a time and only while no page renders
(:func:`page_running`), so it uses the time between clicks: imports are idempotent and Python's per-module import lock makes a
page that needs a module while it is being imported wait for that one import, never import
it twice.

Then, in a served app (not under AppTest, whose tests own their stores), it computes the
whole-store figures the pages cache per store generation (``annotator.process.cache``): Home's
overview and broken-label check, the Agreement report, the runs' pool coverage, the
questions' nugget status - so the first visitor after a start reads them instead of waiting
for them (a page asking while they are being computed waits for that one computation, never
runs it twice). It reads only; a failure only means a page
computes its own figures, so it is swallowed.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from golden_store.db.store import Store

# the page layer's heavy dependencies, in the order the pages reach them (Home's first: its
# chart), after the chart validator: the alerts' emoji table, pandas' Styler (jinja2
# templates: Agreement's distributions), the annotator modules behind the pages
MODULES = (
    "streamlit.emojis", "pandas.io.formats.style", "annotator.evaluation.overview", "annotator.versions.versioning", "annotator.labeling.judging",
    "annotator.evidence.evidence_authoring", "annotator.evidence.nuggets", "annotator.labeling.agreement", "annotator.labeling.adjudication",
    "annotator.labeling.rounds", "annotator.evaluation.runs_import", "annotator.evaluation.power", "annotator.judge.calibration", "annotator.evaluation.transcripts",
    "annotator.evidence.query_editing", "annotator.integration.corpus_import", "annotator.evaluation.evaluations",
)

_started = False
_guard = threading.Lock()
_running = 0  # page scripts running now, in every session of this process
_idle = threading.Condition(_guard)
IDLE_WAIT_S = 20.0  # a step waits at most this long for the pages to go quiet


@contextmanager
def page_running() -> Iterator[None]:
    """Around every page run (the entry script): the warm-up takes its next step only while
    no page renders, so it fills the idle time between a person's clicks instead of slowing
    the page they wait for (2 shared cores: a page and the warm-up run at half speed each)."""
    global _running
    with _guard:
        _running += 1
    try:
        yield
    finally:
        with _guard:
            _running -= 1
            _idle.notify_all()


def _when_idle() -> None:
    """Wait until no page renders (at most ``IDLE_WAIT_S``: a busy server still warms)."""
    with _guard:
        _idle.wait_for(lambda: _running == 0, timeout=IDLE_WAIT_S)


def start(store: Store | None = None) -> bool:
    """Start the warm-up once per process (``store``: also compute its cached figures, in a
    served app only); True if this call started it."""
    global _started
    with _guard:
        if _started:
            return False
        _started = True
    figures = store if store is not None and served() else None
    threading.Thread(target=_warm, args=(figures,), name="golden-warm-up", daemon=True).start()
    return True


def served() -> bool:
    """True in an app served by ``streamlit run`` / ``golden serve``; False under AppTest,
    whose runtime is a stand-in (tests open, fill and close their own stores)."""
    try:
        from streamlit.runtime import Runtime

        return Runtime.exists() and type(Runtime.instance()) is Runtime
    except Exception:  # noqa: BLE001
        return False


def warm_figures(store: Store) -> None:
    """The whole-store figures the first pages read, into the per-generation cache, in the
    order a person meets them: Home (overview and broken labels, as a lead or admin sees
    them), then the Agreement report, the runs' pool coverage (Runs & pool), the questions'
    nugget status (Nuggets). A system account with every role asks: the cached values do not
    depend on who asks, only on what they may see, and each page re-checks its visitor's role
    before reading them."""
    from annotator.evaluation import overview, runs_import
    from annotator.evidence import nuggets
    from annotator.labeling import agreement
    from annotator.versions import versioning
    from annotator.people.identity import cli_user

    who = cli_user()
    for compute in (lambda: overview.store_overview(store, who), lambda: versioning.live_problems(store, who),
                    lambda: agreement.compute(store, who), lambda: runs_import.pool_status(store, who),
                    lambda: nuggets.status(store, who)):
        _when_idle()
        try:
            compute()
        except Exception:  # noqa: BLE001 - the page computes (and reports) it itself
            pass


def _warm(store: Store | None = None) -> None:
    _when_idle()  # the sign-in page's own first run first
    try:
        import altair as alt
        import pandas as pd

        # the first chart builds altair's schema validator; later charts reuse it
        alt.Chart(pd.DataFrame({"x": [0, 1], "y": [0.0, 1.0]})).mark_line().encode(x="x:Q", y="y:Q").to_dict()
    except Exception:  # noqa: BLE001 - a page imports it again and reports what fails
        pass
    for name in MODULES:
        _when_idle()
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass
    if store is not None:
        warm_figures(store)
