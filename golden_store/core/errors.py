"""Errors that carry a message meant for a person: what went wrong, where, and what to do."""

from __future__ import annotations


class GoldenError(Exception):
    """Base class. ``str(err)`` is a complete sentence fit for a CLI or a page."""


class StoreLockedError(GoldenError):
    """Another process holds the DuckDB file lock."""


class StoreSchemaError(GoldenError):
    """The store was written by a newer version of the studio, or is not a studio store."""


MAX_PROBLEM_CHARS = 600


def _capped(text: str) -> str:
    """A backstop for messages that quote input: no single line of an error runs past
    MAX_PROBLEM_CHARS (importers cap each value they echo; this catches the rest)."""
    return text if len(text) <= MAX_PROBLEM_CHARS else text[:MAX_PROBLEM_CHARS] + "…"


class ValidationError(GoldenError):
    """Bad input. ``problems`` lists every problem found (file/line/field), not just the first."""

    def __init__(self, summary: str, problems: list[str] | None = None) -> None:
        self.summary = _capped(summary)
        self.problems = [_capped(p) for p in problems or []]
        shown = self.problems[:20]
        more = len(self.problems) - len(shown)
        lines = [self.summary, *(f"  - {p}" for p in shown)]
        if more > 0:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))


class OptionRequiredError(ValidationError):
    """Refused unless asked for explicitly (replace what exists, skip unknown ids). ``reason``
    says what is wrong; the message adds the CLI's way to ask (``advice``, naming ``option``),
    and a page shows ``reason`` with the control to tick instead (app_pages._shared.attempt)."""

    def __init__(self, reason: str, *, option: str, advice: str, problems: list[str] | None = None) -> None:
        self.reason = reason
        self.option = option
        super().__init__(f"{reason} {advice}", problems)


class NotFoundError(GoldenError):
    """A named thing (version, query, document, user) does not exist."""


class VersionExistsError(GoldenError):
    """Freezing refuses to overwrite an existing version."""


class VerificationError(GoldenError):
    """A frozen version failed verification; ``problems`` names each file or check."""

    def __init__(self, summary: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join([summary, *(f"  - {p}" for p in problems)]))


class StoreUnavailableError(GoldenError):
    """The store's database server cannot be reached (PostgreSQL stopped, restarting or not
    taking connections). The sentence names the server as HOST:PORT, never the URL (it may
    hold a password). ``retry_after``: seconds a client should wait before trying again (the
    HTTP API's ``Retry-After``); the store reconnects by itself once the server answers."""

    retry_after = 5


class DiskFullError(GoldenError):
    """No room to write a file the operation needed: the disk holding it is full, its quota
    is used up, or the process's file-size limit was reached (``golden_store.core.disk``).
    ``str()`` names the file or folder; :attr:`public` is the same sentence without it, for
    the HTTP API, which does not show a client the server's folders. ``path``: that file or
    folder; ``what``: what it is, in words ("the store's write-ahead log"); ``saved``: the
    operation's change was committed all the same (DuckDB: the commit was durable, folding it
    into the file found no room), so there is nothing to retry."""

    def __init__(self, sentence: str, *, public: str | None = None, path: str | None = None,
                 what: str | None = None, saved: bool = False) -> None:
        self.public = public or sentence
        self.path = path
        self.what = what
        self.saved = saved
        super().__init__(sentence)
