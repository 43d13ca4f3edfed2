"""`golden serve`: the Streamlit app on this store."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from annotator.cli.common import context
from golden_store.core.errors import GoldenError
from golden_store.core.paths import default_db_path, describe_data_dir


def _app_entry() -> Path | None:
    """The installed Streamlit entry (found without importing the UI layer)."""
    import importlib.util

    spec = importlib.util.find_spec("app_pages")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "streamlit_app.py"


def _serve_location(given: str | None) -> str:
    """The store the app will open, as GOLDEN_DB: a PostgreSQL URL as given (a team store;
    ``Path().resolve()`` made it a DuckDB file inside a ``postgresql:`` folder, so the app
    served a new empty store in single-user mode), else the DuckDB file's absolute path."""
    from golden_store.core.paths import is_postgres_url

    raw = str(given or default_db_path())
    if is_postgres_url(raw):
        from golden_store.db.postgres import normalize_url

        return normalize_url(raw)
    return str(Path(raw).resolve())


def _has_accounts(db: str) -> bool:
    """Whether the store has an enabled account. Anything that keeps us from telling (no
    store yet, in use, unreachable) counts as no: the safe answer binds to loopback."""
    from golden_store.core.paths import is_postgres_url

    if not is_postgres_url(db) and not Path(db).exists():
        return False
    try:
        from golden_store.live.users import count_users

        return count_users(context.get_store(db, create=False)) > 0
    except GoldenError:
        return False
    finally:
        context.close_all()  # the app opens the store itself: DuckDB allows one process


DEFAULT_PORT = 8501


# Streamlit settings of a served studio, passed by `golden serve` as flags (so they hold
# wherever it is started from) and kept in .streamlit/config.toml for `streamlit run app.py`
# (a test checks the two agree). Why each:
# - client.toolbarMode viewer: no "Deploy" button or developer menu for anyone.
# - server.fileWatcherType none: the watcher is for editing the app's code. At the end of every
#   script run it resolved the path of every imported module (thousands: pandas, pyarrow,
#   altair...) on the server's event loop, 0.2-0.3 s during which the finished page waited
#   to be sent; a served studio's code does not change under it (issue 19).
# - runner.postScriptGC false: after every script run Streamlit forced a full garbage
#   collection, which walks every live object of the process (the cached team-scale figures
#   included) while holding the GIL: another 0.2-0.4 s on every page and every key's rerun at
#   team scale. Python's own collector still runs as objects are allocated; memory is freed
#   by reference counting as before (the server's peak is measured in the benchmark).
SERVER_OPTIONS = {"client.toolbarMode": "viewer", "server.fileWatcherType": "none", "runner.postScriptGC": "false"}


def server_flags() -> list[str]:
    """:data:`SERVER_OPTIONS` as ``streamlit run`` flags."""
    return [x for k, v in SERVER_OPTIONS.items() for x in (f"--{k}", v)]


def _serve_port(flag: int | None) -> int:
    """--port, else $STREAMLIT_SERVER_PORT (Streamlit's own variable), else 8501."""
    if flag is not None:
        return flag
    raw = os.environ.get("STREAMLIT_SERVER_PORT", "").strip()
    if not raw:
        return DEFAULT_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise GoldenError(f"STREAMLIT_SERVER_PORT={raw!r} is not a port number (1-65535).")
    return int(raw)


def _served_host(host: str, db: str, what: str) -> str:
    """``host``, or 127.0.0.1 when the store has no account yet (single-user mode: the app
    grants admin to whoever reaches it), said on stderr."""
    if host not in ("127.0.0.1", "localhost", "::1") and not _has_accounts(db):
        print(f"golden: no accounts yet (single-user mode), so the {what} listens on 127.0.0.1 only, not {host}; "
              "add an account (golden users add NAME --role admin) to serve other machines.", file=sys.stderr)
        return "127.0.0.1"
    return host


def _api_port(flag: int | None, default: int) -> int:
    """--api-port / --port of `golden api`, else $GOLDEN_API_PORT, else ``default``."""
    if flag is not None:
        return flag
    raw = os.environ.get("GOLDEN_API_PORT", "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise GoldenError(f"GOLDEN_API_PORT={raw!r} is not a port number (1-65535).")
    return int(raw)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run Streamlit in place of this process (exec), so a signal to `golden serve` reaches
    the server itself: no orphan keeps serving and holding the store lock. With no account
    the app is in single-user mode (admin for whoever reaches it), so it listens on
    127.0.0.1 only, whatever --host says.

    The HTTP API (issue 28) is served by the same process, on --api-port (default the app's
    port + 1): a DuckDB file has one owner. The process exec'd is then
    ``python -m http_api.serve_with_app`` (the API in a thread, Streamlit's CLI in the main
    thread); ``--no-api`` leaves the API out. Either way the process opens the command channel
    for ``golden`` commands run on this machine against the same DuckDB store
    (:mod:`http_api.local_channel`)."""
    entry = _app_entry()
    if entry is None or not entry.exists():
        raise GoldenError("The app is not installed (package app_pages is missing); reinstall with pip install -e .")
    db = _serve_location(args.db)
    host = _served_host(args.host, db, "app")
    port = _serve_port(args.port)
    print(describe_data_dir(db), flush=True)  # where the corpus index lives; refuses an unwritable data dir
    env = dict(os.environ, GOLDEN_DB=db)
    streamlit_args = ["run", str(entry), "--server.port", str(port), "--server.address", host,
                      "--server.headless", "true", "--browser.gatherUsageStats", "false", *server_flags()]
    if getattr(args, "no_api", False):  # still through serve_with_app: it opens the command channel
        cmd = [sys.executable, "-m", "http_api.serve_with_app", "--no-api", "--", *streamlit_args]
    else:
        api_port = _api_port(getattr(args, "api_port", None), 0)
        default = api_port == 0  # not asked for: the app's port + 1, and the app alone if that is taken
        # a module name, not an import: annotator never imports the HTTP layer (tests/test_layering.py)
        cmd = [sys.executable, "-m", "http_api.serve_with_app", "--api-host", host,
               "--api-port", str(port + 1 if default else api_port), *(["--api-port-is-default"] if default else []),
               "--", *streamlit_args]
    context.close_all()
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execve(sys.executable, cmd, env)  # does not return
    return subprocess.call(cmd, env=env)


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    sv = add("serve", cmd_serve, "start the Streamlit app on this store")
    sv.add_argument("--port", type=int, default=None,
                    help=f"port to listen on (default: $STREAMLIT_SERVER_PORT, else {DEFAULT_PORT})")
    sv.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: with no accounts the app grants admin "
                         "to whoever reaches it; add accounts before serving on 0.0.0.0)")
    sv.add_argument("--api-port", type=int, default=None,
                    help="port of the HTTP API served by the same process (default: $GOLDEN_API_PORT, else the "
                         "app's port + 1)")
    sv.add_argument("--no-api", action="store_true", help="serve the app only, without the HTTP API")
