"""Provenance of a recorded evaluation (METHODOLOGY §3.8, §14.3): which code (git sha), which
pipeline config (config sha) and, for a metric a model judged, which judge (model id and
rubric sha) produced the numbers ``golden score --record`` writes. Each helper returns the
value and, where it guessed or found nothing, one sentence for stderr."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from golden_store.core.errors import ValidationError


def git_head(cwd: Path | str = ".") -> tuple[str | None, str | None]:
    """``git rev-parse HEAD`` of the checkout ``cwd`` is in: (sha, note). ``sha`` is None when
    ``cwd`` is not in a git checkout (or git is missing, or the repository has no commit); the
    note then says so. A checkout with uncommitted changes to tracked files gives its HEAD and a
    note that the sha does not pin those changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--verify", "HEAD"], cwd=cwd, capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"no git sha recorded: git could not run here ({e}); give one with --git-sha"
    if head.returncode != 0:
        why = head.stderr.strip().splitlines()[-1] if head.stderr.strip() else "no commit"
        return None, f"no git sha recorded: {Path(cwd).resolve()} is not a git checkout with a commit ({why}); " \
                     f"give one with --git-sha"
    sha = head.stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                           text=True, timeout=30)
    if dirty.returncode == 0 and dirty.stdout.strip():
        return sha, (f"git sha {sha[:12]} recorded, but the working tree has uncommitted changes the sha does not "
                     f"pin")
    return sha, None


def file_sha256(path: Path | str) -> str:
    """sha256 (hex, as ``sha256sum`` prints it) of a file's bytes."""
    p = Path(path)
    if not p.is_file():
        raise ValidationError(f"--config {p}: no such file.")
    h = hashlib.sha256()
    with p.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def judge_of(manifest: dict, judge_model: str | None, rubric_sha: str | None) -> tuple[str | None, str | None,
                                                                                        str | None]:
    """The judge of a version's model-judged metrics: (judge_model, rubric_sha, note). What is
    given wins; what is missing comes from the manifest's ``judge_calibrations`` (the latest
    calibration of each judge at the freeze) when exactly one entry fits, with a note saying
    so. Missing values that no single entry fills stay None (the caller refuses)."""
    entries = [e for e in (manifest.get("judge_calibrations") or []) if e.get("judge_model")]
    if judge_model and rubric_sha:
        return judge_model, rubric_sha, None
    fits = [e for e in entries if (not judge_model or e["judge_model"] == judge_model)
            and (not rubric_sha or e.get("rubric_sha") == rubric_sha)]
    if len(fits) != 1:
        return judge_model, rubric_sha, None
    e = fits[0]
    return (judge_model or e["judge_model"], rubric_sha or e.get("rubric_sha"),
            f"judge {e['judge_model']} rubric {str(e.get('rubric_sha'))[:12]} taken from the version's judge "
            f"calibration {e.get('calibration_id')}")
