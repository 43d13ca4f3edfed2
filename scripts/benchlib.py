"""Helpers shared by the benchmark scripts: progress lines, peak memory of the measuring
process, children that run an op in a fresh process (with this checkout's code or a
baseline's), synthetic words, process trees and a throwaway PostgreSQL cluster."""

from __future__ import annotations

import resource
import sys

_quiet = False


def set_quiet(quiet: bool) -> None:
    """Silence :func:`log` (``--json``: only the report's JSON line is printed)."""
    global _quiet
    _quiet = quiet


def log(msg: str) -> None:
    """A progress line on stderr (stdout holds the report), unless :func:`set_quiet`."""
    if not _quiet:
        print(msg, file=sys.stderr, flush=True)


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _maxrss_kib() -> int:
    """Peak RSS of this process's own address space, KiB.

    ``VmHWM`` rather than ``getrusage().ru_maxrss``: on Linux ``ru_maxrss`` survives
    ``exec``, so a child started by a 250 MiB parent reports at least 250 MiB (and so does
    the parent's ``RUSAGE_CHILDREN``). ``VmHWM`` belongs to the child's fresh address space.
    """
    hwm = _status_kib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _mark_before() -> tuple[int, int]:
    """(peak so far, current RSS), then reset the peak so the next reading is the call's own."""
    peak, cur = _maxrss_kib(), _status_kib("VmRSS") or 0
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass
    return peak, cur


def print_profile(path: str, title: str, n: int = 16) -> None:
    """The top ``n`` entries of a cProfile dump, by cumulative and by own time."""
    import io
    import pstats

    for key in ("cumulative", "tottime"):
        buf = io.StringIO()
        pstats.Stats(path, stream=buf).strip_dirs().sort_stats(key).print_stats(n)
        text = buf.getvalue()
        start = text.find("   ncalls")
        print(f"\n--- profile: {title}, top {n} by {key} ---")
        print(text[start:].rstrip())


def child_flags(kw: dict[str, object], dashes: bool = True) -> list[str]:
    """A child's options from keyword arguments: ``--name value``; True is a bare ``--name``,
    None and False are left out; with ``dashes``, ``_`` in a name becomes ``-``."""
    flags: list[str] = []
    for k, v in kw.items():
        name = "--" + (k.replace("_", "-") if dashes else k)
        if v is True:
            flags.append(name)
        elif v not in (None, False):
            flags += [name, str(v)]
    return flags


def run_child_process(script: str, op: str, flags: list[str], *, code_root=None, cwd=None,
                      env: dict[str, str] | None = None, timeout: float | None = None) -> dict:
    """Run ``script --_child op FLAGS`` in a fresh process (its own peak memory, nothing
    cached from the parent) and return the JSON object it prints last; a failed child stops
    the benchmark with its stderr. With ``code_root`` the child imports the studio from there
    (this checkout or a baseline's worktree) with this scripts/ folder beside it, and
    ``GOLDEN_DB`` is left out of its environment (a child opens the store it is given)."""
    import json
    import os
    import subprocess
    from pathlib import Path

    cmd = [sys.executable, str(Path(script).resolve()), "--_child", op, *flags]
    if code_root is not None:
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = os.pathsep.join([str(code_root), str(Path(__file__).resolve().parent)])
        env.pop("GOLDEN_DB", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          cwd=None if cwd is None else str(cwd), timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"child {op} failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_runner(script: str):
    """``run_child(op, **kw)`` for a benchmark script: runs ``script --_child op`` in a fresh
    process (True flags become bare options, None/False are left out) and returns the JSON
    object it prints last."""

    from pathlib import Path

    path = str(Path(script).resolve())

    def run_child(op: str, **kw: object) -> dict:
        return run_child_process(path, op, child_flags(kw))

    return run_child


def free_port() -> int:
    """A TCP port free on loopback now (for a server the benchmark starts)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_SYLLABLES = ["ka", "ro", "mi", "ten", "sul", "vor", "pa", "lin", "dre", "quo", "zen", "bar", "tik", "fel",
              "mon", "gra", "sha", "ple", "nor", "vix", "ad", "el", "ost", "um"]


def syllable_vocab(rng, n: int) -> list[str]:
    """``n`` made-up words of one to four syllables, sorted (the same words for the same
    ``rng`` state: a benchmark's data is reproducible from its seed)."""
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def percentile(xs: list[float], p: float) -> float:
    """The ``p``-th percentile by nearest rank (a p95 of fewer than 20 samples is their max)."""
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))]


def mib(kib: float) -> float:
    return round(kib / 1024, 1)


def git_head(root) -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def work_dir(ap, keep: str | None, prefix: str):
    """Where a benchmark builds its data: ``--keep DIR`` (must be empty; kept afterwards)
    or a temporary folder. Returns (path, TemporaryDirectory or None to clean up)."""
    import tempfile
    from pathlib import Path

    if keep:
        work = Path(keep)
        work.mkdir(parents=True, exist_ok=True)
        if any(work.iterdir()):
            ap.error(f"--keep {work}: folder is not empty")
        return work, None
    tmp = tempfile.TemporaryDirectory(prefix=prefix)
    return Path(tmp.name), tmp


def refill_grade_state(cur) -> None:
    """After grade events were bulk-inserted (or rewritten) with plain SQL: refill the current
    grading state the views read (migration 13, ``golden_store.live.grade_state``) from the log, in
    the same transaction. Code from before that migration (a baseline worktree) has no such
    state, and this does nothing there."""
    try:
        from golden_store.live import grade_state
    except ImportError:
        return
    grade_state.rebuild_tx(cur)


# ---- baseline children: today's module names over an older golden_store ---------------------------
#
# Issue 26 put golden_store's flat modules into subpackages (core/, versions/, corpus/, db/, live/).
# A benchmark child that runs an older commit (a baseline worktree first on PYTHONPATH) finds them
# flat in golden_store/, while the child's own code (this scripts/ folder) uses today's names.
# old_layout_aliases() makes those names import the old modules there.

# (not versions/: there golden_store.versions is the old module itself, and no child uses the format)
_SUBPACKAGES = ("golden_store.core", "golden_store.corpus", "golden_store.db", "golden_store.live")
_OLD_NAME = {  # today's name -> the flat module that held it (the rest: the same last part)
    "golden_store.db.postgres": "golden_store.pg_store",
    "golden_store.corpus.index": "golden_store.corpus_index",
    "golden_store.corpus.sources": "golden_store.corpus",  # corpus.py held both halves
    "golden_store.live.documents": "golden_store.corpus",
    "golden_store.live.pool": "golden_store.runs",  # runs.py held the pool until issue 39
}

# Issue 39 put annotator's flat modules into rooms. Today's room of each old module: a child
# running an older commit imports today's names through _Aliases, and an old page's source is
# renamed to today's names by today_annotator_names.
ANNOTATOR_ROOM_OF: dict[str, str] = {
    **dict.fromkeys(("context", "cache", "jobs"), "process"),
    **dict.fromkeys(("roles", "identity", "sessions", "api_tokens"), "people"),
    **dict.fromkeys(("webhooks", "webhook_urls", "webhook_delivery"), "events"),
    **dict.fromkeys(("llm", "llm_cost", "llm_standin", "relevance_judge", "calibration", "pool_grading", "held_out"),
                    "judge"),
    **dict.fromkeys(("labeling", "label_queue", "label_channel", "judging", "assignment", "rounds", "agreement",
                     "adjudication", "evidence_rounds"), "labeling"),
    **dict.fromkeys(("evidence_authoring", "query_editing", "question_drafts", "nuggets"), "evidence"),
    **dict.fromkeys(("versioning", "signing", "freeze_conflicts"), "versions"),
    **dict.fromkeys(("runs_import", "evaluations", "evaluation_record", "provenance", "compare_scope",
                     "comparability", "power", "transcripts", "transcript_sampling", "overview"), "evaluation"),
    **dict.fromkeys(("corpus_import", "dataset_import", "beir_import", "judgments_import", "background"),
                    "integration"),
}


def today_annotator_names(source: str) -> str:
    """Python source written before issue 39 (an old page a benchmark measures in today's app)
    with its annotator imports renamed to today's rooms: ``annotator.judging`` becomes
    ``annotator.labeling.judging`` and ``from annotator import judging`` imports it from its room."""
    import re

    names = "|".join(sorted(ANNOTATOR_ROOM_OF, key=len, reverse=True))
    source = re.sub(rf"\bannotator\.({names})\b", lambda m: f"annotator.{ANNOTATOR_ROOM_OF[m.group(1)]}.{m.group(1)}",
                    source)

    def split(m: re.Match) -> str:  # one `from annotator import a, b` line: one import per room
        indent, parts = m.group(1), [p.strip() for p in m.group(2).split(",")]
        rooms: dict[str, list[str]] = {}
        for part in parts:
            rooms.setdefault(ANNOTATOR_ROOM_OF.get(part.split(" as ")[0], ""), []).append(part)
        return "\n".join(f"{indent}from annotator{'.' + room if room else ''} import {', '.join(ps)}"
                         for room, ps in rooms.items())

    return re.sub(r"^([ \t]*)from annotator import ([\w, ]+)$", split, source, flags=re.MULTILINE)


class _OldLayout:
    """A meta path finder: ``golden_store.<room>`` is an empty package and
    ``golden_store.<room>.<name>`` is the old ``golden_store.<name>`` (itself, not a copy)."""

    def find_spec(self, fullname, path=None, target=None):
        import importlib.util

        if fullname in _SUBPACKAGES:
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        if fullname.rpartition(".")[0] in _SUBPACKAGES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        import importlib
        import importlib.machinery
        import importlib.util
        import sys

        name = module.__spec__.name
        if name in _SUBPACKAGES:
            module.__path__ = []
            # golden_store.corpus was a module itself (corpus.py): that module, made a package
            flat = importlib.machinery.PathFinder.find_spec(name, sys.modules["golden_store"].__path__)
            if flat is not None and flat.submodule_search_locations is None:
                old = importlib.util.module_from_spec(flat)
                old.__path__ = []
                sys.modules[name] = old
                flat.loader.exec_module(old)
            return
        old = _OLD_NAME.get(name, "golden_store." + name.rpartition(".")[2])
        sys.modules[name] = importlib.import_module(old)  # the import system hands this one out


class _Aliases:
    """A meta path finder for today's names over an older tree laid out after issue 26:
    ``annotator.<room>`` is an empty package and ``annotator.<room>.<name>`` the old flat
    ``annotator.<name>`` (issue 39); ``golden_store.live.pool`` the old ``live.runs``."""

    def __init__(self, rooms: bool, pool: bool) -> None:
        self.rooms, self.pool = rooms, pool

    def _target(self, fullname: str) -> str | None:
        parts = fullname.split(".")
        if self.pool and fullname == "golden_store.live.pool":
            return "golden_store.live.runs"
        if self.rooms and len(parts) == 3 and parts[0] == "annotator" and ANNOTATOR_ROOM_OF.get(parts[2]) == parts[1]:
            return f"annotator.{parts[2]}"
        return None

    def find_spec(self, fullname, path=None, target=None):
        import importlib.util

        if self.rooms and fullname.startswith("annotator.") and fullname.count(".") == 1 \
                and fullname.split(".")[1] in set(ANNOTATOR_ROOM_OF.values()):
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        if self._target(fullname):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        import importlib
        import importlib.machinery
        import sys

        name = module.__spec__.name
        target = self._target(name)
        if target is None:  # a room: an empty package, unless an old module had its name
            module.__path__ = []
            flat = importlib.machinery.PathFinder.find_spec(name, sys.modules["annotator"].__path__)
            if flat is not None and flat.loader is not None:  # annotator/labeling.py: that module, as the room
                flat.loader.exec_module(module)
                module.__path__ = []
            return
        sys.modules[name] = importlib.import_module(target)  # the import system hands this one out


def old_layout_aliases() -> bool:
    """In a child running an older commit: let today's module names import the old modules -
    golden_store flat (before issue 26: ``golden_store.db.store``, ``golden_store.live.queries``,
    ...), annotator flat (before issue 39: ``annotator.labeling.judging``, ...), the pool in
    ``live.runs``. True if the code is older than today's layout in any of these ways; a no-op
    on today's layout. Installed ahead of every other finder (an editable install's finder
    would otherwise hand out today's modules over the old ones)."""
    import sys
    from pathlib import Path

    import annotator
    import golden_store

    gs, an = Path(golden_store.__file__).parent, Path(annotator.__file__).parent
    flat_store = not (gs / "db" / "__init__.py").exists()
    rooms = not (an / "people" / "__init__.py").exists()
    pool = not flat_store and not (gs / "live" / "pool.py").exists()
    if flat_store and not any(isinstance(f, _OldLayout) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldLayout())
    if (rooms or pool) and not any(isinstance(f, _Aliases) for f in sys.meta_path):
        sys.meta_path.insert(0, _Aliases(rooms, pool))
    return flat_store or rooms or pool


# ---- other processes: CPU and memory of a server's process tree -----------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (which may hold spaces): fields 3.. of proc(5)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (from each process's parent id in /proc)."""
    import os

    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            f = _stat_fields(int(name))
            if f is not None:
                parents.setdefault(int(f[1]), []).append(int(name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(parents.get(p, []))
    return out


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its live descendants, plus the
    children they have reaped (``cutime``/``cstime``: PostgreSQL's finished backends count
    through the postmaster). Differences of two readings give a window's CPU."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in process_tree(pid):
        f = _stat_fields(p)
        if f is not None:
            total += sum(int(x) for x in f[11:15])  # utime, stime, cutime, cstime
    return total / tick


def proc_hwm_mib(pid: int) -> float | None:
    """Peak RSS (``VmHWM``) of another process, MiB; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return mib(int(line.split()[1]))
    except OSError:
        pass
    return None


def tree_hwm_mib(pid: int) -> float:
    """Sum of the peak RSS of ``pid`` and its live descendants, MiB (an upper bound of the
    tree's peak: the peaks need not coincide)."""
    return round(sum(proc_hwm_mib(p) or 0.0 for p in process_tree(pid)), 1)


# ---- a throwaway PostgreSQL cluster for a benchmark ------------------------------------------------


class PgCluster:
    """initdb + pg_ctl start in a new temporary folder (its own: the server's user must reach
    it, and a benchmark's work folder is private to the caller) on loopback, Debian's binaries (off PATH:
    /usr/lib/postgresql/<ver>/bin). Unlike the tests' cluster (tests/pg.py) it keeps
    PostgreSQL's durability settings (fsync, synchronous commit): a benchmark of a team's
    store measures the commits a team's server makes. As root, the server runs as the
    ``postgres`` user in a directory it owns."""

    def __init__(self) -> None:
        import glob
        import os
        import pwd
        import shutil
        import socket
        import subprocess
        import tempfile
        from pathlib import Path

        found = shutil.which("pg_ctl")
        cands = [str(Path(os.path.realpath(found)).parent)] if found and shutil.which("initdb") else []
        cands += [str(Path(p).parent) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reverse=True)]
        if not cands:
            raise SystemExit("PostgreSQL server binaries not found (apt-get install postgresql)")
        self.bindir = Path(cands[0])
        self.root = Path(tempfile.mkdtemp(prefix="bench-pg-"))
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o700)
        self.data = self.root / "data"
        run = dict(check=True, capture_output=True, text=True, cwd="/")
        try:
            subprocess.run([*self._as, str(self.bindir / "initdb"), "-D", str(self.data), "-U", "golden",
                            "--auth=trust", "-E", "UTF8", "--locale=C"], **run)
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(self.root, ignore_errors=True)
            raise SystemExit(f"initdb failed: {exc.stderr}") from None
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c max_connections=300"
        try:
            subprocess.run([*self._as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l",
                            str(self.root / "log"), "-o", opts, "-w", "-t", "60", "start"], **run)
        except subprocess.CalledProcessError as exc:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise SystemExit(f"pg_ctl start failed: {exc.stderr}\n{log[-2000:]}") from None

    def url(self, dbname: str) -> str:
        return f"postgresql://golden@127.0.0.1:{self.port}/{dbname}"

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql)

    def postmaster_pid(self) -> int:
        """The server's first process (its backends are its children)."""
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        import shutil
        import subprocess

        subprocess.run([*self._as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"],
                       capture_output=True, cwd="/")
        shutil.rmtree(self.root, ignore_errors=True)


def code_tree(root, rev: str, work, name: str):
    """The code at git revision ``rev`` as a folder: ``root`` itself for ``"."`` (the working
    tree), else a detached worktree ``work/name`` (the caller removes it). Benchmarks measure a
    baseline and this code side by side in one run this way."""
    import subprocess
    from pathlib import Path

    if rev == ".":
        return Path(root)
    tree = Path(work) / name
    subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", str(tree), rev], check=True,
                   capture_output=True)
    return tree



def code_trees(root, work, code: str, baseline: str | None, made: list):
    """This code's tree (git revision ``code``) and the baseline's (None without one), as
    :func:`code_tree` makes them: a benchmark measuring both in one run. Each is appended to
    ``made`` as soon as it exists, so ``remove_code_trees(root, made)`` in a ``finally``
    removes what was made even when the second one fails."""
    new = code_tree(root, code, work, "code")
    made.append(new)
    base = None
    if baseline:
        base = code_tree(root, baseline, work, "baseline")
        made.append(base)
    return new, base


def remove_code_trees(root, trees) -> None:
    """Remove the worktrees :func:`code_tree` made (``root`` itself and None are left alone),
    in a benchmark's ``finally``: a failed run leaves no worktree behind."""
    import subprocess
    from pathlib import Path

    for tree in trees:
        if tree is not None and Path(tree) != Path(root):
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(tree)], capture_output=True)


def numbered_corpus_and_questions(store, work, n_docs: int, n_queries: int) -> None:
    """The smallest store an import benchmark's run or qrels can name: documents
    ``D0000000``... (one short sentence each) and questions ``Q000000``... in the stratum
    ``lexical``, imported through the product's own readers (their files written in ``work``)."""
    import json

    from golden_store.live import queries
    from golden_store.live.documents import import_paths

    corpus = work / "corpus.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for i in range(n_docs):
            text = f"document {i} on topic {i % 97} and {i % 13}."
            fh.write(json.dumps({"doc_id": f"D{i:07d}", "text": text}) + "\n")
    import_paths(store, [corpus], actor="bench")
    qfile = work / "queries.jsonl"
    qfile.write_text("".join(json.dumps({"id": f"Q{q:06d}", "text": f"question {q}?", "stratum": "lexical"}) + "\n"
                             for q in range(n_queries)), encoding="utf-8")
    if "lexical" not in queries.known_strata(store):
        queries.add_stratum(store, "lexical", "words in common", actor="bench")
    queries.import_queries(store, queries.parse_query_file("q.jsonl", qfile.read_bytes(), queries.known_strata(store)),
                           actor="bench")
