"""The docs stay true to the code (in the manner of datasette's tests/test_docs.py): every
``golden`` command is in docs/cli.md and every command the docs name exists; the generated
references equal what scripts/gen_docs.py writes now; every API route is in docs/api.md; every
relative link (file and ``#anchor``) in README.md, CONTRIBUTING.md and docs/*.md resolves inside
the repository; no doc or page points at a methodology file outside it. No server is started."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
REGENERATE = "python scripts/gen_docs.py"
# docs/ARCHITECTURE.md is kept by the lead and checked once its own pointers are in the repository
NOT_CHECKED: set[str] = set()


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md",
            *sorted(p for p in DOCS.glob("*.md") if p.name not in NOT_CHECKED)]


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    out, fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            out.append(line)
    return "\n".join(out)


def _code_lines(text: str) -> list[str]:
    """The lines inside fenced code blocks (and indented four-space blocks)."""
    out, fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence or line.startswith("    "):
            out.append(line.strip())
    return out


# ---- the command line --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def commands() -> dict[str, object]:
    return {name: parser for name, parser, _ in gen_docs.commands()}


@pytest.fixture(scope="module")
def cli_md() -> str:
    return (DOCS / "cli.md").read_text(encoding="utf-8")


def test_every_command_is_documented(commands, cli_md):
    headings = set(re.findall(r"^## (golden .+)$", cli_md, re.M))
    missing = sorted(set(commands) - headings)
    assert not missing, f"docs/cli.md lacks {missing}: run {REGENERATE} and commit docs/cli.md"


def test_every_documented_command_exists(commands, cli_md):
    headings = set(re.findall(r"^## (golden .+)$", cli_md, re.M))
    gone = sorted(headings - set(commands))
    assert not gone, f"docs/cli.md documents {gone}, which `golden` no longer has: run {REGENERATE}"


_GLOBAL_WITH_VALUE = {"--db", "--server", "--token-file"}


def _named_command(words: list[str], commands: dict[str, object]) -> tuple[str, str | None]:
    """The command a ``golden ...`` line names: (the longest known prefix, the unknown word
    after it that should have been a subcommand, or None)."""
    rest = list(words)
    while rest and rest[0].startswith("-"):  # global options before the command
        opt = rest.pop(0)
        if opt in _GLOBAL_WITH_VALUE and "=" not in opt and rest:
            rest.pop(0)
    name = "golden"
    for word in rest:
        candidate = f"{name} {word}"
        if candidate in commands:
            name = candidate
            continue
        has_sub = any(c.startswith(name + " ") for c in commands)
        if has_sub or name == "golden":
            return name, word
        break
    return name, None


def test_every_command_the_docs_show_exists(commands):
    """A `golden ...` line in a code block of README.md or a guide names a real command (and a
    real subcommand where the command has them): a renamed command cannot linger in the docs."""
    wrong = []
    for path in _doc_files():
        if path.name in ("cli.md", "api.md"):
            continue
        for line in _code_lines(path.read_text(encoding="utf-8")):
            for m in re.finditer(r"(?:^|[;&|]\s*|\$\s+|\bbin/|^\S+=\S+\s+)golden((?:\s+[^\s#;&|]+)*)", line):
                words = m.group(1).split()
                if not words or words[0] in ("--help", "-h", "--version"):
                    continue
                if any(w in ("|", "...") for w in words[:2]):
                    continue
                name, unknown = _named_command(words, commands)
                if unknown is not None and not unknown.startswith(("-", "[", "<", "$", "\\")) \
                        and not re.search(r"[',)]", unknown):
                    wrong.append(f"{path.relative_to(ROOT)}: `{line}` ({unknown!r} is not a command of {name!r})")
    assert not wrong, "the docs show commands `golden` does not have:\n" + "\n".join(wrong)


def test_cli_md_is_what_the_generator_writes(cli_md):
    assert cli_md == gen_docs.render_cli(), (
        f"docs/cli.md differs from the parsers (a command or option was added or changed): run {REGENERATE} "
        "and commit docs/cli.md")


# ---- the HTTP API ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def api_app():
    from http_api.app import create_app

    return create_app("golden.duckdb")  # builds the app; opens no store


def _api_routes(routes, prefix: str = "", in_schema: bool = True):
    """(METHOD, full path) of every route the app serves in its schema, through included routers
    (FastAPI before 0.16x flattens them into APIRoutes; later ones keep an include context)."""
    from fastapi.routing import APIRoute

    for r in routes:
        if isinstance(r, APIRoute):
            if in_schema and r.include_in_schema:
                yield from ((m, prefix + r.path) for m in sorted((r.methods or set()) - {"HEAD", "OPTIONS"}))
        ctx = getattr(r, "include_context", None)
        if ctx is not None:
            yield from _api_routes(ctx.included_router.routes, prefix + ctx.prefix, in_schema and ctx.include_in_schema)


def test_every_route_is_documented(api_app):
    api_md = (DOCS / "api.md").read_text(encoding="utf-8")
    routes = list(_api_routes(api_app.routes))
    assert len(routes) >= 10, routes
    missing = [f"{m} {p}" for m, p in routes if f"| {m} | [`{p}`]" not in api_md]
    assert not missing, f"docs/api.md lacks {missing}: run {REGENERATE} and commit docs/api.md"


def test_api_md_is_what_the_generator_writes(api_app):
    assert (DOCS / "api.md").read_text(encoding="utf-8") == gen_docs.render_api(api_app), (
        f"docs/api.md differs from the OpenAPI document (a route, parameter or response changed): run "
        f"{REGENERATE} and commit docs/api.md")


# ---- links -----------------------------------------------------------------------------------------


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = gen_docs.anchor(m.group(1))  # backticks and emphasis marks drop out as punctuation
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(text: str) -> list[str]:
    prose = re.sub(r"`[^`\n]*`", "", _prose(text))  # inline code is not a link
    return re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose)


@pytest.mark.parametrize("path", _doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    broken = []
    for target in _links(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, frag = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.is_relative_to(ROOT):
            broken.append(f"{target} (outside the repository)")
            continue
        if not dest.exists():
            broken.append(f"{target} (no such file)")
            continue
        if frag and dest.suffix == ".md" and frag not in _anchors(dest):
            broken.append(f"{target} (no heading with anchor #{frag} in {dest.relative_to(ROOT)})")
    assert not broken, f"{path.relative_to(ROOT)}: links that do not resolve: {broken}"


# ---- nothing points outside the repository ------------------------------------------------------------


def _pages_and_docs() -> list[Path]:
    return _doc_files() + sorted((ROOT / "app_pages").glob("*.py"))


@pytest.mark.parametrize("path", _pages_and_docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_pointer_to_a_methodology_file_outside_the_repository(path):
    """The methodology the studio implements is docs/methodology.md; a page or a doc cites the
    public methodology by section (§3.7) and links docs/methodology.md, never a METHODOLOGY file
    that a clone does not have."""
    text = path.read_text(encoding="utf-8")
    bad = [f"line {i}: {line.strip()[:100]}" for i, line in enumerate(text.splitlines(), 1)
           if re.search(r"\bMETHODOLOGY\b|\.\./shared/|METHODOLOGY\.md", line)]
    assert not bad, (f"{path.relative_to(ROOT)} points at a file outside the repository; cite the section and "
                     f"link docs/methodology.md instead: {bad}")


def test_readme_is_a_quick_start_under_300_lines():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 300
    # CI (.ci/run) runs the README's test command; the README keeps both of its commands
    assert "make run" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
