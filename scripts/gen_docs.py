"""Write the generated references: docs/cli.md from the ``golden`` command's argparse parsers
(``annotator.cli.build_parser()``) and docs/api.md from the HTTP API's OpenAPI document
(``http_api.app.create_app().openapi()``), so neither can drift from the code.

    python scripts/gen_docs.py           # rewrite docs/cli.md and docs/api.md
    python scripts/gen_docs.py --check   # exit 1, naming the stale file, if either differs

tests/test_docs.py fails when a committed file differs from what this writes, so a new
command, option or route forces a regeneration.

The text is built from the parsers' and routes' own data (names, metavars, defaults, choices,
help strings, parameters, responses), never from argparse's formatted ``--help`` (whose
layout changes with the Python version and the terminal's width).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

CLI_MD = ROOT / "docs" / "cli.md"
API_MD = ROOT / "docs" / "api.md"
REGENERATE = "python scripts/gen_docs.py"

# options every command takes (argparse ``parents=[common]``): documented once, at the top
GLOBAL_DESTS = ("help", "db", "json", "server", "token_file", "version")


# ---- the command line -------------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def commands(parser: argparse.ArgumentParser | None = None) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """Every command of ``golden`` as (full name, its parser, its one-line help), in the order
    of ``golden --help``, groups before their subcommands (``golden pool``, ``golden pool
    build``, ...). Aliases are listed once, under their first name."""
    if parser is None:
        from annotator.cli import build_parser

        parser = build_parser()
    out: list[tuple[str, argparse.ArgumentParser, str]] = []

    def walk(p: argparse.ArgumentParser, path: list[str]) -> None:
        for action in _subparsers(p):
            helps = {c.dest: (c.help or "") for c in action._choices_actions}
            seen: set[int] = set()
            for name, sp in action.choices.items():
                if id(sp) in seen:
                    continue
                seen.add(id(sp))
                full = path + [name]
                out.append((" ".join(full), sp, helps.get(name, "")))
                walk(sp, full)

    walk(parser, ["golden"])
    return out


def _md(text: str) -> str:
    """A help string inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _metavar(a: argparse.Action) -> str:
    if a.metavar is not None:
        return a.metavar if isinstance(a.metavar, str) else " ".join(a.metavar)
    if a.choices:
        return "{" + ",".join(str(c) for c in a.choices) + "}"
    return a.dest.upper() if a.option_strings else a.dest


def _arg_form(a: argparse.Action) -> str:
    mv = _metavar(a)
    if a.nargs in (0,):
        value = ""
    elif a.nargs == "?":
        value = f" [{mv}]"
    elif a.nargs in ("*",):
        value = f" [{mv} ...]"
    elif a.nargs == "+":
        value = f" {mv} [{mv} ...]"
    elif isinstance(a.nargs, int) and a.nargs > 1:
        value = " " + " ".join([mv] * a.nargs)
    else:
        value = f" {mv}"
    if not a.option_strings:
        return value.strip()
    return ", ".join(a.option_strings) + value


def _default(a: argparse.Action) -> str:
    d = a.default
    if d is None or d is argparse.SUPPRESS or d is False or a.nargs == 0 or d == []:
        return ""
    return f"`{d}`"


def _usage(name: str, sp: argparse.ArgumentParser) -> str:
    parts = [name]
    own = [a for a in sp._actions if a.dest not in GLOBAL_DESTS and not isinstance(a, argparse._SubParsersAction)]
    if any(a.option_strings for a in own):
        parts.append("[options]")
    for a in own:
        if not a.option_strings:
            parts.append(_arg_form(a) if a.nargs not in ("?", "*") else f"[{_metavar(a)}]")
    if _subparsers(sp):
        parts.append("COMMAND")
    return " ".join(parts)


def _rows(sp: argparse.ArgumentParser) -> list[str]:
    rows = []
    for a in sp._actions:
        if a.dest in GLOBAL_DESTS or isinstance(a, argparse._SubParsersAction) or a.help is argparse.SUPPRESS:
            continue
        required = " (required)" if a.option_strings and a.required else ""
        rows.append(f"| `{_md(_arg_form(a))}`{required} | {_md(a.help or '')} | {_default(a)} |")
    return rows


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading (lower case, punctuation dropped, spaces to -)."""
    out = []
    for ch in heading.strip().lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def render_cli(parser: argparse.ArgumentParser | None = None) -> str:
    from annotator.cli import build_parser

    top = parser or build_parser()
    cmds = commands(top)
    lines = [
        "# Command-line reference",
        "",
        f"<!-- Generated by `{REGENERATE}` from the argparse parsers (annotator.cli.build_parser); "
        "do not edit by hand. tests/test_docs.py fails when it is stale. -->",
        "",
        "Every `golden` command, with its options, as the code defines them. For what to do with",
        "them, see the guides: [engineer](guide-engineer.md), [lead](guide-lead.md),",
        "[expert](guide-expert.md), [reviewer](guide-reviewer.md); the definitions behind the",
        "numbers are in [methodology.md](methodology.md).",
        "",
        "## Options every command takes",
        "",
        "| option | what | default |",
        "|---|---|---|",
    ]
    for a in top._actions:
        if a.dest in GLOBAL_DESTS:
            lines.append(f"| `{_md(_arg_form(a))}` | {_md(a.help or '')} | {_default(a)} |")
    lines += [
        "",
        "Exit status, the same for every command: 0 done, 1 a check or gate failed (`compare`, `verify`, "
        "`calibration`), 2 could not run (an error, a refusal, a declined spend, a usage error).",
        "",
        "## Commands",
        "",
    ]
    for name, _, help_ in cmds:
        depth = name.count(" ") - 1
        lines.append(f"{'  ' * depth}- [`{name}`](#{anchor(name)}): {_md(help_)}")
    lines.append("")
    for name, sp, help_ in cmds:
        lines += [f"## {name}", ""]
        desc = sp.description or help_
        if desc:
            lines += [_md(desc).replace("\\|", "|"), ""]
        lines += ["```", _usage(name, sp), "```", ""]
        subs = _subparsers(sp)
        if subs:
            lines.append("Subcommands: " + ", ".join(
                f"[`{name} {n}`](#{anchor(name + ' ' + n)})"
                for n in dict.fromkeys(subs[0].choices)) + ".")
            lines.append("")
        rows = _rows(sp)
        if rows:
            lines += ["| argument | what | default |", "|---|---|---|", *rows, ""]
    return "\n".join(lines).rstrip() + "\n"


# ---- the HTTP API -----------------------------------------------------------------------------


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/")
        cur: Any = schema
        for part in ref[2:].split("/"):
            cur = cur[part]
        node = cur
    return node


def _type(schema: dict[str, Any], node: dict[str, Any]) -> str:
    node = _resolve(schema, node)
    if "anyOf" in node:
        return " or ".join(_type(schema, n) for n in node["anyOf"])
    t = node.get("type", "object")
    if t == "array":
        return f"array of {_type(schema, node.get('items', {}))}"
    if node.get("format") == "binary":
        return "file"
    extra = []
    if "enum" in node:
        extra.append("one of " + ", ".join(f"`{v}`" for v in node["enum"]))
    if "pattern" in node:
        extra.append(f"pattern `{node['pattern']}`")
    if "minLength" in node:
        extra.append(f"at least {node['minLength']} character(s)")
    return str(t) + (f" ({'; '.join(extra)})" if extra else "")


def routes(app: Any = None) -> list[tuple[str, str]]:
    """Every documented route of the API app as (METHOD, path)."""
    schema = _schema(app)
    return [(m.upper(), p) for p, ops in schema["paths"].items() for m in ops]


def _schema(app: Any = None) -> dict[str, Any]:
    if app is None:
        from http_api.openapi import schema

        return schema()
    return app.openapi()


def render_api(app: Any = None) -> str:
    s = _schema(app)
    info = s["info"]
    lines = [
        "# HTTP API reference",
        "",
        f"<!-- Generated by `{REGENERATE}` from the OpenAPI document (http_api.app.create_app().openapi()); "
        "do not edit by hand. tests/test_docs.py fails when it is stale. -->",
        "",
        f"{info['title']}, OpenAPI {s['openapi']}. The same schema is served at `/api/v1/openapi.json` "
        "(browse it at `/api/v1/docs`) and committed at [openapi.json](openapi.json). How to start the "
        "API, make a token and use the Python client: [guide-engineer.md](guide-engineer.md#the-http-api).",
        "",
        " ".join(info.get("description", "").split()),
        "",
        "## Routes",
        "",
        "| method | path | operationId | what |",
        "|---|---|---|---|",
    ]
    ops = [(p, m, o) for p, methods in s["paths"].items() for m, o in methods.items()]
    for p, m, o in ops:
        lines.append(f"| {m.upper()} | [`{p}`](#{anchor(o['operationId'])}) | `{o['operationId']}` | "
                     f"{_md(o.get('summary', ''))} |")
    lines.append("")
    for p, m, o in ops:
        lines += [f"## {o['operationId']}", "", f"`{m.upper()} {p}`: {_md(o.get('summary', ''))}.", ""]
        if o.get("description"):
            lines += [" ".join(o["description"].split()), ""]
        lines.append("Authentication: " + ("`Authorization: Bearer <token>`" if o.get("security") else "none") + ".")
        lines.append("")
        params = o.get("parameters", [])
        if params:
            lines += ["| parameter | in | type | required | what |", "|---|---|---|---|---|"]
            for prm in params:
                lines.append(f"| `{prm['name']}` | {prm['in']} | {_md(_type(s, prm.get('schema', {})))} | "
                             f"{'yes' if prm.get('required') else 'no'} | {_md(prm.get('description', ''))} |")
            lines.append("")
        body = o.get("requestBody")
        if body:
            for ctype, content in body.get("content", {}).items():
                bs = _resolve(s, content.get("schema", {}))
                lines += [f"Request body (`{ctype}`{', required' if body.get('required') else ''}):", ""]
                props = bs.get("properties", {})
                if props:
                    req = set(bs.get("required", []))
                    lines += ["| field | type | required | what |", "|---|---|---|---|"]
                    for fname, fs in props.items():
                        lines.append(f"| `{fname}` | {_md(_type(s, fs))} | {'yes' if fname in req else 'no'} | "
                                     f"{_md(_resolve(s, fs).get('description', ''))} |")
                    lines.append("")
        lines += ["| status | meaning |", "|---|---|"]
        for code, resp in o.get("responses", {}).items():
            ctypes = ", ".join(f"`{c}`" for c in resp.get("content", {}))
            lines.append(f"| {code} | {_md(resp.get('description', ''))}{' (' + ctypes + ')' if ctypes else ''} |")
        lines.append("")
    lines += [
        "## Problem documents",
        "",
        "Every refusal is an RFC 9457 problem document (`application/problem+json`) whose `detail` is the "
        "sentence the CLI prints; `GET /api/v1/problems/{kind}` (no token) says what each `type` means.",
        "",
    ]
    return "\n".join(lines).rstrip() + "\n"


# ---- main --------------------------------------------------------------------------------------


def outputs() -> dict[Path, str]:
    return {CLI_MD: render_cli(), API_MD: render_api()}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print(f"usage: {REGENERATE} [--check]", file=sys.stderr)
        return 2
    stale = []
    for path, text in outputs().items():
        rel = path.relative_to(ROOT)
        if args == ["--check"]:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(rel))
        else:
            path.write_text(text, encoding="utf-8")
            print(f"Wrote {rel}", file=sys.stderr)
    if stale:
        print(f"Stale: {', '.join(stale)}; run {REGENERATE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
