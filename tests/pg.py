"""A throwaway PostgreSQL cluster for the tests: Debian's binaries, a temp dir, loopback.

Why a real server: the PostgreSQL store's point is transactions across processes and SQL
that PostgreSQL accepts; no mock checks either. The cluster is made once per test session
(initdb, pg_ctl start on 127.0.0.1 at a free port, durability off for speed); each test gets
its own database, created from a template (an empty one, or one already migrated to the
current schema, so most tests skip the migrations). initdb and the server refuse to run as
root, so as root they run as the ``postgres`` user (``runuser``) in a directory it owns.

When the binaries are missing (``apt-get install postgresql``) or psycopg is, every test
that asks for PostgreSQL is skipped with a message saying so; the DuckDB half runs.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HOW = ("PostgreSQL tests skipped: {why}. To run them: apt-get install postgresql "
       "(Debian's package; the tests start their own throwaway cluster) and pip install 'psycopg[binary]'.")
MIGRATED_TEMPLATE = "golden_migrated"
DEMO_TEMPLATE = "golden_demo"  # the migrated template with the demo loaded (tests taking demo_store)


def pg_bindir() -> Path | None:
    """The directory with initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/<ver>/bin."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(os.path.realpath(found)).parent
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                       key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0, reverse=True):
        return Path(cand).parent
    return None


def unavailable() -> str | None:
    """Why the PostgreSQL tests cannot run here, or None when they can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed"
    if pg_bindir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """One running throwaway cluster; :meth:`new_database` gives each test its own database."""

    root: Path
    port: int
    bindir: Path
    user: str = "golden"
    _n: itertools.count = field(default_factory=lambda: itertools.count(1))

    def url(self, dbname: str) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self, template: str = "template0") -> str:
        name = f"test_{os.getpid()}_{next(self._n)}"
        self.admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def start_cluster() -> Cluster:
    """initdb + pg_ctl start in a new temp dir; raises with the server's log if it fails."""
    bindir = pg_bindir()
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="golden-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(root, pw.pw_uid, pw.pw_gid)
    os.chmod(root, 0o700)
    run = dict(check=True, capture_output=True, text=True, cwd="/")
    subprocess.run(_as_server_user([str(bindir / "initdb"), "-D", str(data), "-U", "golden", "--auth=trust",
                                    "-E", "UTF8", "--locale=C", "--no-sync"]), **run)
    cluster = Cluster(root=root, port=_free_port(), bindir=bindir)
    start_server(cluster)
    return cluster


def start_server(cluster: Cluster) -> None:
    """``pg_ctl start`` on the cluster's port (waiting until it takes connections): at
    :func:`start_cluster`, and again after :func:`stop_server`."""
    root = cluster.root
    opts = (f"-c listen_addresses=127.0.0.1 -p {cluster.port} -k {root} -c fsync=off -c synchronous_commit=off "
            f"-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB")
    try:
        subprocess.run(_as_server_user([str(cluster.bindir / "pg_ctl"), "-D", str(root / "data"), "-l",
                                        str(root / "log"), "-o", opts, "-w", "-t", "60", "start"]),
                       check=True, capture_output=True, text=True, cwd="/")
    except subprocess.CalledProcessError as exc:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {exc.stderr}\n{log}") from None


def stop_server(cluster: Cluster) -> None:
    """``pg_ctl stop -m fast`` (what an operator's restart does: every session is ended with
    AdminShutdown), keeping the cluster's files for :func:`start_server`. For a test's own
    cluster (``pg_own_cluster``): stopping the session's would fail the other tests."""
    subprocess.run(_as_server_user([str(cluster.bindir / "pg_ctl"), "-D", str(cluster.root / "data"),
                                    "-m", "fast", "-w", "-t", "60", "stop"]),
                   check=True, capture_output=True, text=True, cwd="/")


def stop_cluster(cluster: Cluster) -> None:
    subprocess.run(_as_server_user([str(cluster.bindir / "pg_ctl"), "-D", str(cluster.root / "data"),
                                    "-m", "immediate", "-w", "stop"]), capture_output=True, cwd="/")
    shutil.rmtree(cluster.root, ignore_errors=True)


def make_migrated_template(cluster: Cluster) -> None:
    """A database at the current schema that new test databases copy (CREATE DATABASE …
    TEMPLATE), so a test's store opens without running the migrations."""
    from golden_store.db.store import Store

    cluster.admin(f'CREATE DATABASE "{MIGRATED_TEMPLATE}" TEMPLATE template0')
    Store.open(cluster.url(MIGRATED_TEMPLATE)).close()


def make_demo_template(cluster: Cluster) -> None:
    """A copy of the migrated template with the demo loaded (``load_demo`` as the CLI user),
    for the tests taking ``demo_store``; made after :func:`make_migrated_template`."""
    from annotator.demo import load_demo
    from annotator.people.identity import cli_user
    from golden_store.db.store import Store

    cluster.admin(f'CREATE DATABASE "{DEMO_TEMPLATE}" TEMPLATE "{MIGRATED_TEMPLATE}"')
    with Store.open(cluster.url(DEMO_TEMPLATE)) as s:
        load_demo(s, cli_user())


if __name__ == "__main__":
    # `python -m tests.pg`: why the PostgreSQL pass cannot run here (empty when it can); the
    # Makefile's `test` target asks before its second pass.
    print(unavailable() or "")
