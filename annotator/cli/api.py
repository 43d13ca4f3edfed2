"""`golden api`: the HTTP API alone (issue 28), the way to serve it for a PostgreSQL store (any
number of processes behind a proxy). On a DuckDB store `golden serve` serves app and API
from the one process that owns the file."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from annotator.cli.serve import _api_port, _served_host, _serve_location
from golden_store.core.paths import describe_data_dir

DEFAULT_API_PORT = 8600


def cmd_api(args: argparse.Namespace) -> int:
    db = _serve_location(args.db)
    host = _served_host(args.host, db, "API")
    port = _api_port(args.port, DEFAULT_API_PORT)
    print(describe_data_dir(db), flush=True)  # where the corpus index lives; refuses an unwritable data dir
    # by name: annotator never imports the HTTP layer statically (tests/test_layering.py)
    serving = importlib.import_module("http_api.serving")
    print(f"golden api: http://{host}:{port}/api/v1 (docs at /api/v1/docs)", flush=True)
    return int(serving.run_api(db, host, port))


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    ap = add("api", cmd_api, "serve the HTTP API alone (/api/v1; PostgreSQL stores: run several behind a proxy; "
                              "on a DuckDB store golden serve serves it beside the app)")
    ap.add_argument("--port", type=int, default=None,
                    help=f"port to listen on (default: $GOLDEN_API_PORT, else {DEFAULT_API_PORT})")
    ap.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1; with no accounts yet, loopback only)")
    add("evaluations", cmd_evaluations, "list recorded evaluations, newest first, with each metric's mean (the "
                                        "Results page's list; with --server, the studio's)")


# ---- `golden evaluations`: the recorded evaluations (the Results page's list), local or remote ----


def print_evaluations(rows: list[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        from annotator.cli.common import _print_json

        _print_json(rows)
    elif not rows:
        print("No evaluations recorded yet. Record one with: golden score --version NAME --run FILE -m MEASURE "
              "--record ID")
    else:
        import pandas as pd

        print(pd.DataFrame(rows).to_string(index=False))


def cmd_evaluations(args: argparse.Namespace) -> int:
    from annotator.evaluation import evaluations
    from annotator.cli.common import _store, identity

    table = evaluations.recorded(_store(args), identity.cli_user())
    # as the API sends them (NaN as null, times in ISO 8601), so local and --server print the same
    rows = [{k: _plain(v) for k, v in r.items()} for r in table.to_dict(orient="records")]
    print_evaluations(rows, as_json=args.json)
    warning = evaluations.health_warning(table)
    if warning and not args.json:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _plain(v: object) -> object:
    from datetime import datetime

    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, datetime):
        return v.isoformat()
    if hasattr(v, "item"):  # a numpy scalar
        return v.item()  # type: ignore[attr-defined]
    return v
