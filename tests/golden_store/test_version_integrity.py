"""Issue 18 items 5, 8 and 9 on frozen versions: a damaged manifest is named and never hides
the other versions; load_version checks cheaply what verify checks (folder name, file
paths, counts, data digest) and a signature when a verify key is configured; interrupted
freezes' temp folders are swept."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from annotator import cli
from golden_store.versions import signing
from golden_store import versions
from golden_store.versions import format as version_format
from golden_store.core.errors import GoldenError, ValidationError, VerificationError
from golden_store.freezing import freeze
from golden_store.versions import list_versions, load_version, verify
from tests.conftest import prepared_store


def golden(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(list(args))
    return rc, out.getvalue(), err.getvalue()


def _two_freezes(store, _folder) -> None:
    freeze(store, "v1", actor="eng")
    freeze(store, "v2", actor="eng")


@pytest.fixture
def two_versions(request, golden_db):
    """The demo frozen as v1 and v2 (once, copied)."""
    demo_store = prepared_store(request, "demo-v1-v2", _two_freezes, demo=True)[0]
    return demo_store.path.parent / "versions"


def _rewrite_manifest(folder, fn):
    m = json.loads((folder / "manifest.json").read_text())
    m = fn(m)
    (folder / "manifest.json").write_text(json.dumps(m))


def _reseal(folder, m):
    """What a careful forger does: recompute every digest after editing."""
    m["files"] = {f: {**meta, "sha256": version_format._sha256_file(folder / f), "rows": pq.ParquetFile(folder / f).metadata.num_rows}
                  for f, meta in m["files"].items()}
    import hashlib

    m["data_digest"] = "sha256:" + hashlib.sha256("".join(
        f"{f}\t{meta['sha256']}\n" for f, meta in sorted(m["files"].items())).encode()).hexdigest()
    m["content_digest"] = versions.manifest_digest(m)
    return m


# ---- item 5: a damaged manifest -----------------------------------------------------------------


@pytest.mark.parametrize("damage", [
    lambda m: [],
    lambda m: {**m, "files": {**m["files"], "spans.parquet": "deadbeef"}},
    lambda m: {**m, "files": ["queries.parquet"]},
    lambda m: "just a string",
])
def test_a_damaged_manifest_is_named_and_hides_no_other_version(two_versions, damage):
    _rewrite_manifest(two_versions / "v1", damage)
    rows = {r["name"]: r for r in list_versions(two_versions)}
    assert set(rows) == {"v1", "v2"}
    assert rows["v1"]["error"] and "manifest.json" in rows["v1"]["error"]
    assert rows["v2"]["error"] is None and rows["v2"]["n_queries"] == 40
    with pytest.raises(VerificationError, match="damaged"):
        load_version("v1", two_versions)
    with pytest.raises(VerificationError, match="damaged"):
        verify("v1", two_versions)
    assert load_version("v2", two_versions).manifest["dataset_version"] == "v2"
    rc, out, err = golden("versions")
    assert rc == 0 and "v1" in out and "ERROR" in out and "v2" in out and "Traceback" not in err
    rc, _, err = golden("verify", "v1")
    assert rc == 1 and err.startswith("golden: ") and "manifest.json" in err


# ---- item 8: load_version checks what verify checks cheaply ---------------------------------------


def test_a_copy_under_a_new_folder_name_does_not_load(two_versions):
    shutil.copytree(two_versions / "v1", two_versions / "v1-copy")
    with pytest.raises(VerificationError, match="copied or renamed"):
        load_version("v1-copy", two_versions)
    assert not verify("v1-copy", two_versions).ok


def test_a_file_entry_pointing_outside_the_folder_does_not_load(two_versions, tmp_path):
    v1 = two_versions / "v1"
    outside = tmp_path / "elsewhere.parquet"
    shutil.copy(v1 / "spans.parquet", outside)

    m = json.loads((v1 / "manifest.json").read_text())
    m["files"]["../../elsewhere.parquet"] = {**m["files"]["spans.parquet"],
                                             "sha256": version_format._sha256_file(outside)}
    m["content_digest"] = versions.manifest_digest(m)
    (v1 / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(VerificationError, match="not a data file inside the version folder"):
        load_version("v1", two_versions)
    # a link inside the folder that leads out is refused the same way
    m = json.loads((v1 / "manifest.json").read_text())
    del m["files"]["../../elsewhere.parquet"]
    os.symlink(outside, v1 / "linked.parquet")
    m["files"]["linked.parquet"] = {"sha256": version_format._sha256_file(outside), "rows": 1, "bytes": 1}
    m["content_digest"] = versions.manifest_digest(m)
    (v1 / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(VerificationError, match="linked.parquet"):
        load_version("v1", two_versions)


def test_rewritten_spans_with_recomputed_hashes_but_stale_counts_do_not_load(two_versions):
    v1 = two_versions / "v1"
    sp = pq.read_table(v1 / "spans.parquet").to_pandas()
    pq.write_table(pa.Table.from_pandas(sp.iloc[:-1], preserve_index=False), v1 / "spans.parquet")
    m = json.loads((v1 / "manifest.json").read_text())
    m["files"]["spans.parquet"]["sha256"] = version_format._sha256_file(v1 / "spans.parquet")
    m["content_digest"] = versions.manifest_digest(m)
    (v1 / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(VerificationError) as exc:
        load_version("v1", two_versions)
    text = str(exc.value)
    assert "spans.parquet: holds" in text and "data_digest" in text


# ---- item 8: signed versions ----------------------------------------------------------------------


@pytest.fixture
def keypair(tmp_path):
    priv, pub, text = signing.keygen(tmp_path / "team.key")
    assert oct(priv.stat().st_mode & 0o777) == "0o600" and text.startswith("ed25519:")
    return priv, pub


def test_signed_freeze_and_a_configured_key(demo_store, keypair, monkeypatch, tmp_path):
    priv, pub = keypair
    vdir = demo_store.path.parent / "versions"
    freeze(demo_store, "signed", actor="eng", signing_key=signing.load_private_key(priv))
    freeze(demo_store, "unsigned", actor="eng")
    assert (vdir / "signed" / signing.SIGNATURE_FILE).exists()
    monkeypatch.setenv("GOLDEN_VERIFY_KEY", str(pub))
    assert load_version("signed", vdir).name == "signed"
    rep = verify("signed", vdir)
    assert rep.ok and rep.checked["signature"] == 1
    with pytest.raises(VerificationError, match="signature.json: missing"):
        load_version("unsigned", vdir)
    # a forger moves a span and reseals every digest: the signature no longer holds
    v = vdir / "signed"
    sp = pq.read_table(v / "spans.parquet").to_pandas()
    sp.loc[0, "end"] = sp.loc[0, "end"] + 1
    pq.write_table(pa.Table.from_pandas(sp, preserve_index=False), v / "spans.parquet")
    _rewrite_manifest(v, lambda m: _reseal(v, m))
    with pytest.raises(VerificationError, match="signature does not match"):
        load_version("signed", vdir)
    # someone else's key: signed, but not by the team
    other_priv, other_pub, _ = signing.keygen(tmp_path / "other.key")
    freeze(demo_store, "theirs", actor="x", signing_key=signing.load_private_key(other_priv))
    with pytest.raises(VerificationError, match="not by the configured verify key"):
        load_version("theirs", vdir)
    monkeypatch.delenv("GOLDEN_VERIFY_KEY")
    assert load_version("theirs", vdir).name == "theirs"  # no key configured: unsigned and foreign ones load
    assert load_version("unsigned", vdir).name == "unsigned"
    assert load_version("theirs", vdir, verify_key=other_pub).name == "theirs"


def test_keygen_freeze_sign_and_verify_key_on_the_cli(demo_store, tmp_path):
    demo_store.close()
    key = tmp_path / "k"
    rc, out, err = golden("keygen", str(key))
    assert rc == 0 and "ed25519:" in out, err
    assert golden("keygen", str(key))[0] == 2  # never overwrites
    rc, out, err = golden("freeze", "s1", "--sign", str(key))
    assert rc == 0 and "signed" in out, err
    rc, out, err = golden("freeze", "s2", "--sign", str(tmp_path / "missing.key"))
    assert rc == 2 and "no such key file" in err and not (tmp_path / "versions" / "s2").exists()
    rc, out, err = golden("verify", "s1", "--key", f"{key}.pub")
    assert rc == 0 and "signature by the verify key checked" in out and "no signature checked" not in out, err
    rc, out, err = golden("freeze", "plain")
    # probe V4: an unsigned OK says what hashes cannot check (the manifest's own figures)
    rc, out, err = golden("verify", "plain")
    assert rc == 0 and out.startswith("plain: OK (all file hashes match") and (
        "no signature checked, so the manifest's own figures (agreement, pool coverage, label counts) are not "
        "verified: sign versions with golden freeze --sign and verify with --key") in out, err
    rc, out, err = golden("verify", "plain", "--key", f"{key}.pub")
    assert rc == 1 and "signature.json: missing" in err
    rc, out, _ = golden("versions")
    assert "signed" in out.splitlines()[[n.split()[0] for n in out.splitlines()].index("s1")]


def test_a_bad_key_file_is_a_clear_error(tmp_path):
    (tmp_path / "junk.key").write_text("not a key")
    with pytest.raises(ValidationError, match="not an unencrypted PEM private key"):
        signing.load_private_key(tmp_path / "junk.key")
    with pytest.raises(GoldenError):
        signing.resolve_verify_key(str(tmp_path / "nope.pub"))


# ---- item 9: interrupted freezes are swept ------------------------------------------------------


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _tmp(vdir, name, owner=None, age_s=0.0):
    d = vdir / f".tmp-{name}-{os.urandom(4).hex()}"
    d.mkdir(parents=True)
    (d / "queries.parquet").write_bytes(b"half written")
    if owner is not None:
        (d / ".freeze-owner.json").write_text(json.dumps(owner))
    if age_s:
        t = time.time() - age_s
        for p in (*d.iterdir(), d):
            os.utime(p, (t, t))
    return d


def test_interrupted_freezes_are_swept_by_versions_and_freeze(two_versions, demo_store):
    host = socket.gethostname()
    dead = _tmp(two_versions, "a", {"pid": _dead_pid(), "host": host})
    old = _tmp(two_versions, "b", age_s=3 * 3600)
    running = _tmp(two_versions, "c", {"pid": os.getpid(), "host": host}, age_s=3 * 3600)
    fresh = _tmp(two_versions, "d")
    elsewhere = _tmp(two_versions, "e", {"pid": 1, "host": "another-machine"})
    assert {r["name"] for r in list_versions(two_versions)} == {"v1", "v2"}
    assert not dead.exists() and not old.exists()
    assert running.exists() and fresh.exists() and elsewhere.exists()
    later = _tmp(two_versions, "f", {"pid": _dead_pid(), "host": host})
    freeze(demo_store, "v3", actor="eng")
    assert not later.exists() and running.exists()
    assert not [p for p in (two_versions / "v3").iterdir() if p.name == ".freeze-owner.json"]
