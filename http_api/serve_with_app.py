"""``golden serve``: the Streamlit app and the HTTP API in ONE process, because one process
owns a DuckDB store file. ``golden serve`` execs ``python -m http_api.serve_with_app`` (so a
signal to it reaches this process, as it reached Streamlit before): the API runs in a
daemon thread (uvicorn), background work starts, then Streamlit's own CLI runs in the main
thread with the arguments ``golden serve`` gives it (``python -m streamlit`` run in-process). When Streamlit stops, the process ends
and the API thread with it. The process also opens the command channel (:mod:`http_api.local_channel`):
``golden`` commands run on this machine against the same DuckDB store are run here.

    python -m http_api.serve_with_app --api-host H --api-port P -- run app.py --server.port ...
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, streamlit_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    p = argparse.ArgumentParser(prog="python -m http_api.serve_with_app")
    p.add_argument("--api-host", default="127.0.0.1")
    p.add_argument("--api-port", type=int, default=0)
    p.add_argument("--no-api", action="store_true", help="serve the app without the HTTP API")
    p.add_argument("--api-port-is-default", action="store_true",
                   help="the port was not asked for (the app's + 1): if taken, serve the app alone, with a warning")
    a = p.parse_args(ours)

    from annotator.integration import background
    from annotator.labeling import label_channel
    from annotator.people import api_tokens
    from annotator.process import context
    from http_api import local_channel
    from http_api.serving import ThreadedServer

    from golden_store.core.errors import GoldenError

    location = os.environ.get("GOLDEN_DB")
    try:
        api_tokens.audit_retention()  # a bad GOLDEN_TOKEN_AUDIT_* setting: one sentence, before anything starts
        workers = background.start(context.get_store(location))
    except GoldenError as exc:  # e.g. another process holds the DuckDB file
        print(f"golden: {exc}", file=sys.stderr)
        return 1
    server: ThreadedServer | None = None
    if not a.no_api:
        try:
            server = ThreadedServer(location, a.api_host, a.api_port).start()
            label_channel.advertise(server.port)  # the app's labeling surfaces post their labels here
            print(f"golden serve: API at http://{a.api_host}:{server.port}/api/v1 (docs at /api/v1/docs)",
                  file=sys.stderr)
        except RuntimeError:
            if not a.api_port_is_default:  # asked for: not serving it is an error
                background.stop(workers)
                print(f"golden: the API could not listen on {a.api_host}:{a.api_port} (in use?); pick another "
                      f"with --api-port, or serve the app alone with --no-api.", file=sys.stderr)
                return 1
            print(f"golden serve: warning: the API could not listen on {a.api_host}:{a.api_port} (in use?), so the "
                  f"app is served without it; choose its port with --api-port.", file=sys.stderr)
    api_url = f"http://{a.api_host}:{server.port}/api/v1" if server is not None else None
    channel = local_channel.start_for(location, api_url)  # `golden` commands on this machine run here
    # `python -m streamlit ...` run in this process (runpy, as the interpreter runs -m): the
    # API layer never uses Streamlit itself (tests/test_layering.py), it hands over the main thread
    sys.argv = ["streamlit", *streamlit_args]
    try:
        runpy.run_module("streamlit", run_name="__main__", alter_sys=True)
    finally:
        if channel is not None:
            channel.stop()
        background.stop(workers)
        if server is not None:
            server.stop()
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
