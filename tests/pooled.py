"""The arrange step the pooled-judging tests share: every demo question pooled over the same
first documents, and a team of accounts. Builders, not fixtures: each test module keeps its
own fixture (its depth, its team) and may build it once and copy it."""

from __future__ import annotations

from pathlib import Path

from annotator.people.identity import User, create_user
from golden_store.db.store import Store
from golden_store.live import runs
from golden_store.live.pool import build_pool


def pool_first_documents(s: Store, folder: Path, depth: int) -> None:
    """One run, ``sys`` (written to ``folder``), ranks the first ``depth`` documents by id for
    every question, and the pool is built at ``depth``: questions x ``depth`` items."""
    docs = [r[0] for r in s.read(f"SELECT doc_id FROM documents ORDER BY doc_id LIMIT {int(depth)}")]
    qids = [r[0] for r in s.read("SELECT query_id FROM queries ORDER BY query_id")]
    run = folder / "sys.run"
    run.write_text("".join(f"{q} Q0 {d} {i + 1} {5 - i} x\n" for q in qids for i, d in enumerate(docs)))
    runs.store_run(s, runs.parse_run(s, run, "sys", "trec"), actor="eng")
    build_pool(s, depth, actor="eng")


def team_accounts(s: Store, password: str, annotators: tuple[str, ...], **others: str) -> dict[str, User]:
    """Accounts made by an admin, in this order: ``admin``, ``lead``, ``others`` (name=role),
    then the annotators; all with ``password``."""
    admin = create_user(s, None, "admin", ["admin"], password=password)
    users = {"admin": admin, "lead": create_user(s, admin, "lead", ["lead"], password=password)}
    for name, role in others.items():
        users[name] = create_user(s, admin, name, [role], password=password)
    for name in annotators:
        users[name] = create_user(s, admin, name, ["annotator"], password=password)
    return users
