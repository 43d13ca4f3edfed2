"""Warm the app process while the first page waits for a person (issue 19).

Why: a page's first render after the server started paid for what the process had not
done yet: importing altair (~0.3 s, the first chart on Home, Agreement, Power), building its
JSON-schema validator (the first chart's ``to_dict``, ~0.2 s), Streamlit's emoji table (the
first ``st.success``/``st.warning``, ~0.15 s), the annotator modules behind the pages
(``annotator.calibration`` ~0.1 s) - over 1 s of a first render on 2 shared cores, paid again
by whoever opened each page first. :func:`start` does that work once per process in a
background thread, started by the entry script's first run (the sign-in page, which then
waits for a password): imports are idempotent and Python's per-module import lock makes a
page that needs a module while it is being imported wait for that one import, never import
it twice.

Nothing here touches the store or a session: a failure only means a page pays for its own
imports again, so it is swallowed.
"""

from __future__ import annotations

import importlib
import threading

# the page layer's heavy dependencies, in the order the pages reach them (Home's first: its
# chart), after the chart validator: the alerts' emoji table, pandas' Styler (jinja2
# templates: Agreement's distributions), the annotator modules behind the pages
MODULES = (
    "streamlit.emojis", "pandas.io.formats.style", "annotator.overview", "annotator.versioning", "annotator.judging",
    "annotator.evidence_authoring", "annotator.nuggets", "annotator.agreement", "annotator.adjudication",
    "annotator.rounds", "annotator.runs_import", "annotator.power", "annotator.calibration", "annotator.transcripts",
    "annotator.query_editing", "annotator.corpus_import",
)

_started = False
_guard = threading.Lock()


def start() -> bool:
    """Start the warm-up once per process; True if this call started it."""
    global _started
    with _guard:
        if _started:
            return False
        _started = True
    threading.Thread(target=_warm, name="golden-warm-up", daemon=True).start()
    return True


def _warm() -> None:
    try:
        import altair as alt
        import pandas as pd

        # the first chart builds altair's schema validator; later charts reuse it
        alt.Chart(pd.DataFrame({"x": [0, 1], "y": [0.0, 1.0]})).mark_line().encode(x="x:Q", y="y:Q").to_dict()
    except Exception:  # noqa: BLE001 - a page imports it again and reports what fails
        pass
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass
