"""`golden --server URL ...`: the same commands against a studio's HTTP API (issue 28), through
:class:`golden_store.client.Studio`, with the local commands' output. The token comes from
``GOLDEN_TOKEN`` or ``--token-file`` (never a flag's value: it would land in shell history).
A command with no remote form says so in one sentence."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotator.cli.common import GATE_EXIT, UNSIGNED_NOTE, _print_json
from golden_store.core.errors import GoldenError

Remote = Callable[[argparse.Namespace, Any], int]


def server_of(args: argparse.Namespace) -> str | None:
    return (getattr(args, "server", None) or os.environ.get("GOLDEN_SERVER", "")).strip() or None


def _token(args: argparse.Namespace) -> str | None:
    path = getattr(args, "token_file", None)
    if path:
        try:
            text = Path(path).read_text("utf-8").strip()
        except OSError as exc:
            raise GoldenError(f"--token-file {path}: cannot read it ({exc.strerror or exc}).") from None
        if not text:
            raise GoldenError(f"--token-file {path} is empty; put the token (gst_...) on its first line.")
        return text.splitlines()[0].strip()
    return os.environ.get("GOLDEN_TOKEN", "").strip() or None


def run(args: argparse.Namespace, server: str, argv: list[str] | None = None) -> int:
    """Run ``args``' command on ``server``: through its typed route when it has one, else
    through ``POST /commands`` (the same command run by the studio, its output and exit status
    sent back), or refuse one that does not use the store (it runs where its files are)."""
    from annotator.cli import channel

    handler = HANDLERS.get(args.func.__name__)
    if handler is None and not channel.needs_store(args):
        raise GoldenError(f"{channel.command_name(args)} does not use the studio's store, so it has no remote "
                          f"form: run it where its files are, without --server (and with GOLDEN_SERVER unset).")
    from golden_store.client import Studio

    with Studio(server, _token(args)) as studio:
        if handler is None:
            return through_command_route(args, argv or [], studio)
        return handler(args, studio)


def through_command_route(args: argparse.Namespace, argv: list[str], studio: Any) -> int:
    """``argv`` sent to the studio's ``POST /commands``: the files it reads uploaded, the files
    it writes brought back and written here, its output printed, its exit status returned."""
    import base64

    from annotator.cli import channel

    inputs, outputs = channel.file_arguments(args)
    names = {p: f"@upload:{i}" for i, p in enumerate(dict.fromkeys(inputs))}
    names.update({p: f"@output:{i}:{Path(p).name}" for i, p in enumerate(dict.fromkeys(outputs))})
    sent = channel.substitute_paths(_without_client_options(argv), names) + _callers_git_sha(args)
    stdin = sys.stdin.readline() if getattr(args, "password_stdin", False) else ""
    res = studio.run_command(sent, uploads=list(dict.fromkeys(inputs)), stdin=stdin)
    sys.stdout.write(_named(res["stdout"], names))
    sys.stderr.write(_named(res["stderr"], names))
    for path, placeholder in names.items():
        if placeholder in res.get("outputs", {}):
            Path(path).write_bytes(base64.b64decode(res["outputs"][placeholder]))
    return int(res["exit_code"])


def _callers_git_sha(args: argparse.Namespace) -> list[str]:
    """``score --record`` pins the git checkout the person runs it in, which is on this machine,
    not the studio's: its sha is read here and sent as ``--git-sha`` (the note about a checkout
    that is not clean, or not one, is said here too)."""
    if args.command != "score" or not getattr(args, "record", None) or getattr(args, "git_sha", None):
        return []
    from annotator.evaluation import provenance

    sha, note = provenance.git_head(Path.cwd())
    if note:
        print(f"# {note}", file=sys.stderr)
    return ["--git-sha", sha] if sha else []


def _named(text: str, names: dict[str, str]) -> str:
    """The studio's output with each placeholder back as the path the person typed."""
    for path, placeholder in sorted(names.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(placeholder, path)
    return text


_CLIENT_OPTIONS = ("--server", "--token-file", "--db")


def _without_client_options(argv: list[str]) -> list[str]:
    """``argv`` as the studio should parse it: the options that say how to reach the studio
    (``--server``, ``--token-file``, ``--db``) left out."""
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token in _CLIENT_OPTIONS:
            skip = True
            continue
        if token.split("=", 1)[0] in _CLIENT_OPTIONS and "=" in token:
            continue
        out.append(token)
    return out


_SUBCOMMANDS = ("runs_cmd", "transcripts_cmd", "answers_cmd", "queries_cmd", "pool_cmd", "results_cmd",
                "rounds_cmd", "nuggets_cmd", "corpus_cmd", "strata_cmd", "users_cmd", "tokens_cmd",
                "webhooks_cmd", "judgments_cmd")


def _refuse_options(args: argparse.Namespace, command: str, *names: str) -> None:
    given = [n for n in names if getattr(args, n, None)]
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise GoldenError(f"golden {command} {flags} has no remote form; drop it, or run the command on the studio's "
                          f"machine.")


# ---- the commands ----------------------------------------------------------------------------


def runs_import(args: argparse.Namespace, studio: Any) -> int:
    rep = studio.import_run(args.file, args.system, args.format, replace=args.replace, skip_unknown=args.skip_unknown,
                            skip_unknown_docs=args.skip_unknown_docs)
    _print_json(rep) if args.json else print(rep["summary"])
    return 0


def transcripts_import(args: argparse.Namespace, studio: Any) -> int:
    rep = studio.import_transcripts(args.file)
    _print_json(rep) if args.json else print(rep["summary"])
    return 0


def answers_import(args: argparse.Namespace, studio: Any) -> int:
    rep = studio.import_answers(args.file, args.system, replace=args.replace)
    _print_json(rep) if args.json else print(rep["summary"])
    return 0


def queries_import(args: argparse.Namespace, studio: Any) -> int:
    rep = studio.import_queries(args.file, update=args.update, unhold_reason=args.unhold)
    _print_json({k: v for k, v in rep.items() if k != "summary"}) if args.json else print(rep["summary"])
    return 0


def versions(args: argparse.Namespace, studio: Any) -> int:
    from annotator.cli.versions import print_versions

    print_versions(studio.versions(), args.json)
    return 0


def freeze(args: argparse.Namespace, studio: Any) -> int:
    if args.sign:
        raise GoldenError("golden freeze --sign has no remote form: the private key stays on the machine that holds "
                          "it; freeze on the studio's machine to sign.")
    res = studio.freeze(args.name, note=args.note or "", hit_rule=args.hit_rule)
    m = res["manifest"]
    if args.json:
        _print_json({"name": res["name"], "manifest": m})
        return 0
    print(f"Frozen {res['name']} on {studio.url}: {m['n_queries']} queries, {m['n_spans']} spans, "
          f"{m['n_judgments']} judgments; data_digest {m['data_digest']}")
    for line in res["notes"]:
        print(line)
    return 0


def verify(args: argparse.Namespace, studio: Any) -> int:
    if args.name is None:
        raise GoldenError("golden verify with no NAME (the live store's labels) has no remote form; give a version "
                          "name, or run it on the studio's machine.")
    _refuse_options(args, "verify", "key")
    rep = studio.verify(args.name)
    if args.json:
        _print_json(rep)
    elif rep["ok"]:
        checked = ", ".join(f"{n} {k}" for k, n in rep["checked"].items() if k != "signature")
        print(f"{rep['name']}: OK (all file hashes match; re-checked {checked}{UNSIGNED_NOTE})")
    else:
        print(f"{rep['name']}: FAILED verification", file=sys.stderr)
        for p in rep["problems"]:
            print(f"  - {p}", file=sys.stderr)
    if not args.json:
        for w in rep["warnings"]:
            print(f"warning: {w}", file=sys.stderr)
    return 0 if rep["ok"] else 1


def pool_status(args: argparse.Namespace, studio: Any) -> int:
    rep = studio.pool_status(args.k)
    if args.json:
        _print_json(rep)
        return 0
    from annotator.cli.runs_pool import print_pool_runs

    if print_pool_runs(rep):
        from annotator.evaluation.runs_import import pool_ap_note

        if "ap_queries" in rep:  # a server from before issue 36 does not say it
            print(f"# {pool_ap_note(rep)}", file=sys.stderr)
    return 0


def agreement(args: argparse.Namespace, studio: Any) -> int:
    from annotator.labeling.agreement import ALL, count_line

    rep = studio.agreement(args.round)
    # a server from before issue 36 reads every label unless asked for a round, and does not say so
    rep = {"scope": {"round": args.round or ALL, "name": f"Round {args.round}" if args.round else
                     "All rounds pooled"}, **rep}
    if args.json:  # as the local --json (the API adds the bar's description, for the line below)
        _print_json({**rep, "bar": {k: v for k, v in rep["bar"].items() if k != "describe"}})
        return 0
    print(count_line(rep["scope"], rep["n_units"], len(rep["annotators"])))
    if not rep["n_units"]:
        return 0

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    from golden_store.scoring.agreement_report import kappa_linear  # here: pandas only for this command

    # a server from before issue 36 names the linear κ "kappa_graded" (and its reading "reading_graded")
    linear, linear_reading = kappa_linear(rep), rep.get("reading_linear", rep.get("reading_graded"))
    print(f"kappa binary {f(rep['kappa_binary'])} ({rep['reading_binary']})  "
          f"kappa graded unweighted {f(rep['kappa_unweighted'])} ({rep['reading_unweighted']})  "
          f"linear {f(linear)} ({linear_reading})  "
          f"quadratic {f(rep['kappa_quadratic'])}  "
          f"alpha ordinal {f(rep['alpha_ordinal'])}  raw {f(rep['raw_agreement'])}")
    print(f"bar ({rep['bar'].get('describe', '')}): {rep['bar']['text']}")
    for p in rep["pairs"]:
        print(f"  {p['annotator_a']} x {p['annotator_b']}: n={p['n_items']} kappa_binary={p['kappa_binary']:.3f} "
              f"unweighted={p['kappa_unweighted']:.3f} linear={p['kappa_linear']:.3f} "
              f"quadratic={p['kappa_quadratic']:.3f} raw={p['raw_agreement']:.3f}")
    return 0


def evaluations(args: argparse.Namespace, studio: Any) -> int:
    from annotator.cli.api import print_evaluations

    print_evaluations(studio.evaluations(), as_json=args.json)
    return 0


def compare(args: argparse.Namespace, studio: Any) -> int:
    _refuse_options(args, "compare", "held_out_only", "tier", "by", "since")
    c = studio.compare(args.a, args.b, measures=args.measure, min_meaningful=args.min_meaningful,
                       correction=args.correction, min_n=args.min_n,
                       allow_different_definitions=args.allow_different_definitions)
    if args.json:
        _print_json({k: v for k, v in c.items() if k != "text"})
    else:
        print(c["text"])
        print(f"labels: {args.a} {c['labels'][args.a]}; {args.b} {c['labels'][args.b]}")
        print(f"gate: {c['gate']}")
        for n in c["notes"]:
            print(f"warning: {n}", file=sys.stderr)
    return GATE_EXIT[c["gate"]]


HANDLERS: dict[str, Remote] = {
    "cmd_runs_import": runs_import, "cmd_transcripts_import": transcripts_import,
    "cmd_answers_import": answers_import, "cmd_queries_import": queries_import, "cmd_versions": versions,
    "cmd_freeze": freeze, "cmd_verify": verify, "cmd_pool_status": pool_status, "cmd_agreement": agreement,
    "cmd_evaluations": evaluations, "cmd_compare": compare,
}
