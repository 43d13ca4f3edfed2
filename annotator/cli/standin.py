"""``golden llm-standin``: the local Messages-API stand-in, to try the LLM features without a key."""

from __future__ import annotations

import argparse
import sys
from typing import Any

STANDIN_HELP = (
    "start a local stand-in for the Anthropic Messages API, to try the studio's LLM features (the Claude "
    "judge, pool grading, nugget and question drafting) without a key or the network. It is no model: its "
    "relevance judge grades by the words a passage shares with the question. Point the studio at it from "
    "another terminal: ANTHROPIC_BASE_URL=http://127.0.0.1:PORT ANTHROPIC_API_KEY=standin golden serve "
    "(any key will do; GOLDEN_LLM_MODEL picks the model id the studio asks for, and the demo's judge is "
    "GOLDEN_LLM_MODEL=demo-judge-1). Ctrl-C stops it.")


def cmd_llm_standin(args: argparse.Namespace) -> int:
    from annotator.judge.llm_standin import MessagesServer

    try:
        server = MessagesServer(args.host, args.port).standalone()
    except OSError as exc:
        print(f"golden: cannot listen on {args.host}:{args.port} ({exc.strerror or exc}): pick another --port.",
              file=sys.stderr)
        return 2
    print(f"Messages API stand-in listening on {server.url} (no model: answers are made from each request).\n"
          f"In another terminal:\n"
          f"  export ANTHROPIC_BASE_URL={server.url}\n"
          f"  export ANTHROPIC_API_KEY=standin   # any value: the stand-in ignores it\n"
          f"  golden serve                       # or any golden command that calls Claude\n"
          f"Ctrl-C stops it.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("Stand-in stopped.")
    return 0


def register(sub: Any, add: Any) -> None:
    """This group's parser, beside its handler (``add``: a command with the global options)."""
    sp = add("llm-standin", cmd_llm_standin, "start a local stand-in for the Anthropic Messages API: try the LLM "
                                             "features without a key (see golden llm-standin --help)")
    sp.description = STANDIN_HELP
    sp.add_argument("--port", type=int, default=8787, help="port to listen on (default 8787; 0 picks a free one)")
    sp.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, this machine only)")
