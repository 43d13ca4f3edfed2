"""golden_store.client.Studio against a real API on loopback (issue 28): a CI job's round trip
(push a run, freeze, download and load the version, score it) gives the numbers the local
version gives; refusals carry the server's sentence and status; a file that does not match
its manifest is never kept."""

from __future__ import annotations

import pytest

from annotator.versions.versioning import versions_dir
from golden_store.client import Studio, StudioError, api_base
from golden_store.scoring import evaluate, read_run
from golden_store.versions import load_version
from tests.http_api.conftest import api, run_file, tokens  # noqa: F401  (fixtures)


def test_push_freeze_download_load_and_score_as_the_local_version(demo_store, api, tokens, tmp_path):  # noqa: F811
    run = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 11)], name="nightly.trec")
    with Studio(api.removesuffix("/api/v1"), tokens["engineer"]) as studio:
        assert studio.health()["status"] == "ok"
        assert studio.me()["roles"] == ["engineer"]
        rep = studio.import_run(run, system="nightly")
        assert rep["n_results"] == 30 and rep["system"] == "nightly"
        frozen = studio.freeze("golden.v3", note="nightly")
        assert frozen["name"] == "golden.v3"
        assert [v["name"] for v in studio.versions()] == ["golden.v3"]
        folder = studio.download_version("golden.v3", tmp_path / "dl")
        assert studio.download_version("golden.v3", tmp_path / "dl") == folder  # already there: kept
        remote = studio.load_version("golden.v3", tmp_path / "cache")
        assert studio.verify("golden.v3")["ok"] is True
    local = load_version("golden.v3", versions_dir(demo_store))
    assert remote.manifest["data_digest"] == local.manifest["data_digest"]
    measures = ["nDCG@10", "AP", "R@100"]
    a, b = evaluate(remote, read_run(run), measures), evaluate(local, read_run(run), measures)
    assert a.n_queries == b.n_queries > 0
    assert a.mean == b.mean
    assert a.per_query.equals(b.per_query)


def test_record_list_and_compare_evaluations(demo_store, api, tokens, tmp_path):  # noqa: F811
    run = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 11)])
    with Studio(api, tokens["engineer"]) as studio:
        studio.freeze("v1")
        for e in ("base", "cand"):
            rec = studio.record_evaluation(e, "v1", run, ["nDCG@10"], system="bm25", git_sha="abc123")
            assert rec["rows"] > 0 and rec["evaluation_id"] == e
        assert {r["evaluation"] for r in studio.evaluations()} == {"base", "cand"}
        c = studio.compare("base", "cand")
        assert c["gate"] == "PASS" and "nDCG@10" in c["metrics"]  # the same run twice
        assert c["metrics"]["nDCG@10"]["verdict"] == "PASS"
        # a typo in a measure, or one neither recorded, is a refusal, never a PASS (issue 36, item 1)
        for typo in ("bogus", "nDCG@100"):
            with pytest.raises(StudioError) as e:
                studio.compare("base", "cand", measures=[typo])
            assert e.value.status == 422 and f"Cannot compare {typo}: not recorded by both evaluations" in str(e.value)
        with pytest.raises(StudioError) as e:
            studio.compare("base", "cand", min_n=200)
        assert e.value.status == 422 and "fewer than the 200 a verdict needs" in str(e.value)
        with pytest.raises(StudioError) as e:
            studio.record_evaluation("base", "v1", run, ["nDCG@10"])  # recorded already
        assert e.value.status in (409, 422, 400) and "base" in str(e.value)


def test_refusals_carry_the_servers_sentence_and_status(demo_store, api, tokens, tmp_path):  # noqa: F811
    with pytest.raises(StudioError) as e:
        Studio(api, tokens["annotator"]).freeze("v1")
    assert e.value.status == 403 and "may not freeze a version" in str(e.value)
    with pytest.raises(StudioError) as e:
        Studio(api, "gst_wrong").versions()
    assert e.value.status == 401 and e.value.problem["type"].endswith("token-refused")
    with pytest.raises(StudioError) as e:
        Studio(api, tokens["engineer"]).manifest("nope")
    assert e.value.status == 404 and "nope" in e.value.detail
    with pytest.raises(StudioError) as e:
        Studio("http://127.0.0.1:9", tokens["engineer"]).health()
    assert e.value.status is None and "Cannot reach the studio" in str(e.value)
    assert api_base("http://h:1/") == api_base("http://h:1/api/v1") == "http://h:1/api/v1"


def test_a_file_that_does_not_match_its_manifest_is_not_kept(demo_store, api, tokens, tmp_path):  # noqa: F811
    studio = Studio(api, tokens["engineer"])
    studio.freeze("v1")
    target = versions_dir(demo_store) / "v1" / "queries.parquet"
    target.write_bytes(target.read_bytes() + b"tampered")
    with pytest.raises(StudioError) as e:
        studio.download_version("v1", tmp_path / "dl")
    assert "queries.parquet" in str(e.value) and "sha256" in str(e.value)
    assert not (tmp_path / "dl" / "v1").exists()
    assert not list((tmp_path / "dl").iterdir())  # no partial folder left behind


def test_the_url_and_token_come_from_the_environment(demo_store, api, tokens, monkeypatch):  # noqa: F811
    monkeypatch.setenv("GOLDEN_SERVER", api)
    monkeypatch.setenv("GOLDEN_TOKEN", tokens["lead"])
    assert Studio().me()["token"] == "t-lead"


def test_the_api_scores_only_against_the_studios_own_versions(demo_store, api, tokens, tmp_path):  # noqa: F811
    """Probe E1 (issue 37, item 7): POST /evaluations took any URL as ``version``
    (file:///.../versions/demo.v0 was loaded and recorded, s3://... opened with the server's
    credentials). Only a name of the studio's versions is taken: 422, nothing recorded."""
    run = run_file(tmp_path, [f"q{i:03d}" for i in range(1, 11)])
    with Studio(api, tokens["engineer"]) as studio:
        studio.freeze("v1")
        folder = versions_dir(demo_store) / "v1"
        for bad in (folder.as_uri(), str(folder), "s3://team/versions/v1", "memory://x/v1", "v1/../v1"):
            with pytest.raises(StudioError) as e:
                studio.record_evaluation("ev-url", bad, run, ["nDCG@10"])
            assert e.value.status == 422 and "give the name of one of this studio's frozen versions" in str(e.value)
        assert "ev-url" not in {r["evaluation"] for r in studio.evaluations()}
        assert studio.record_evaluation("ev-name", "v1", run, ["nDCG@10"])["evaluation_id"] == "ev-name"
