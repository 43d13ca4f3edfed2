"""``POST /commands``: any ``golden`` command that uses the store, run by the studio for a
token (issue 38, item 1). ``golden --server URL ...`` sends here each command that has no
typed route of its own, so every command has a remote form with the output and exit status it
has locally.

The command acts as the token's account: the token must hold the permission the command needs
(:data:`annotator.cli.channel.PERMISSION`), and the service layer checks each action again.
Files the command reads come as uploads, named in ``argv`` by the placeholder ``@upload:N``;
files it writes are named ``@output:N`` and come back in the answer, base64-encoded. Paths on
the studio's machine are never accepted from a caller: a path in ``argv`` that is not a
placeholder is refused."""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, UploadFile
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from annotator.cli import channel
from annotator.people.identity import User, require
from golden_store.core.errors import ValidationError
from golden_store.db.store import Store
from http_api.auth import caller
from http_api.store import store
from http_api.uploads import saved

router = APIRouter(tags=["commands"])


class CommandOutcome(BaseModel):
    exit_code: int = Field(description="The command's exit status: 0 ok, 1 a check or gate failed, 2 could not run")
    stdout: str
    stderr: str
    outputs: dict[str, str] = Field(default_factory=dict,
                                    description="Files the command wrote, by placeholder (@output:N), base64")


def _argv(raw: str) -> list[str]:
    try:
        argv = json.loads(raw)
    except ValueError:
        raise ValidationError("argv: not JSON; send the command's words as a JSON list of strings, "
                              "e.g. [\"runs\", \"list\"].") from None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValidationError("argv: send the command's words as a non-empty JSON list of strings.")
    return argv


@router.post("/commands", response_model=CommandOutcome, summary="Run a golden command that uses the store")
async def run_command(s: Annotated[Store, Depends(store)], user: Annotated[User, Depends(caller)],
                      argv: Annotated[str, Form(min_length=2, description="JSON list of the command's words")],
                      stdin: Annotated[str, Form()] = "",
                      files: Annotated[list[UploadFile] | None, File()] = None) -> CommandOutcome:
    words = _argv(argv)

    def run() -> CommandOutcome:
        with tempfile.TemporaryDirectory(prefix="golden-command-") as work, contextlib.ExitStack() as stack:
            mapping = {f"@upload:{i}": str(stack.enter_context(saved(f, f"upload-{i}"))[0])
                       for i, f in enumerate(files or [])}
            outputs = {w: _output_path(Path(work), w) for w in _placeholders(words, "@output:")}
            mapping.update(outputs)

            def authorize(args: argparse.Namespace) -> None:
                require(user, channel.permission_for(channel.command_name(args)))
                inputs, written = channel.file_arguments(args)
                for path in inputs + written:
                    if path not in mapping.values():
                        raise ValidationError(f"{path}: the studio does not read or write paths of its own machine "
                                              f"for a caller; send the file as an upload (@upload:N in argv) or "
                                              f"name an output @output:N.")

            out = channel.run_here(channel.substitute_paths(words, mapping), store=s, stdin=stdin, acting_as=user,
                                   authorize=authorize)
            written_files = {k: base64.b64encode(Path(p).read_bytes()).decode("ascii")
                             for k, p in outputs.items() if Path(p).is_file()}
        # the studio's temporary paths mean nothing to the caller: its messages name the placeholders,
        # which the caller's golden turns back into the caller's own paths
        return CommandOutcome(exit_code=out.exit_code, stdout=_unmapped(out.stdout, mapping),
                              stderr=_unmapped(out.stderr, mapping), outputs=written_files)

    return await run_in_threadpool(run)


def _placeholders(words: list[str], prefix: str) -> list[str]:
    """The placeholders in ``words``, alone or as an option's value (``--out=@output:0:f.csv``)."""
    found = []
    for w in words:
        value = w.partition("=")[2] if w.startswith("--") and "=" in w else w
        if value.startswith(prefix):
            found.append(value)
    return found


def _output_path(work: Path, placeholder: str) -> str:
    """Where the command writes the output named ``@output:N:NAME``: a folder of its own under
    ``work``, under the caller's file name (a writer may tell the format by its suffix)."""
    _, n, name = (placeholder.split(":", 2) + [""])[:3]
    safe = Path(name.replace("\\", "/")).name or "output"
    folder = work / (n if n.isdigit() else "0")
    folder.mkdir(exist_ok=True)
    return str(folder / safe)


def _unmapped(text: str, mapping: dict[str, str]) -> str:
    for placeholder, path in sorted(mapping.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(path, placeholder)
    return text
