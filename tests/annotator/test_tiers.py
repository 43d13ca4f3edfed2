"""CI tiers (METHODOLOGY §14.1; issue 25, item 9): a question may be tagged smoke, regression
or release. Migration 20 adds the tier on both engines; the queries import takes an optional
``tier`` column (a bad value is refused naming file, line and field, and nothing changes); the
frozen version's queries.parquet carries it; ``golden score --tier`` and ``golden compare
--tier`` restrict to that tier and say so."""

from __future__ import annotations

import json
import os
from datetime import datetime

import pandas as pd
import pytest

from annotator import cli
from golden_store.live import queries
from golden_store.db import schema
from golden_store.core.errors import ValidationError
from golden_store.freezing import freeze
from golden_store.live.results import record_evaluation
from golden_store.db.store import Store
from golden_store.versions import diff_versions, load_version
from tests.conftest import table_snapshot
from tests.old_schema import old_url, schema_at  # noqa: F401  (old_url: a fixture)

AT = datetime(2026, 6, 1, 9, 0, 0)
BEFORE_20 = tuple(m for m in schema.MIGRATIONS if m.version < 20)


def golden(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(["--db", os.environ["GOLDEN_DB"], *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_migration_20_adds_the_tier_and_keeps_every_question_untagged(old_url, monkeypatch):
    schema_at(monkeypatch, BEFORE_20[-1].version)
    with Store.open(old_url) as old:
        assert old.schema_version() == BEFORE_20[-1].version
        old.write(lambda cur: cur.execute(
            "INSERT INTO query_revisions (query_id, text, stratum, answerable, source, created_date, held_out, notes,"
            " actor, created_at) VALUES ('q1', 'How many days?', 'temporal', TRUE, 'expert', DATE '2026-01-02',"
            " FALSE, '', 'eng', ?)", [AT]))
    monkeypatch.undo()
    with Store.open(old_url) as s:
        assert s.schema_version() == schema.SCHEMA_VERSION >= 20
        assert s.read("SELECT query_id, text, tier FROM queries") == [("q1", "How many days?", None)]
        assert queries.get_query(s, "q1").tier is None
        recs = queries.parse_query_file("t.csv", b"id,text,stratum,tier\nq1,How many days?,temporal,smoke\n",
                                  queries.known_strata(s))
        assert queries.import_queries(s, recs, actor="lead", update=True) == {"added": 0, "updated": 1, "unchanged": 0}
        assert s.read("SELECT query_id, tier FROM queries") == [("q1", "smoke")]


CSV = ("id,text,stratum,tier\n"
       "t1,How many days carry over?,temporal,smoke\n"
       "t2,What is error VPN-0417?,lexical,regression\n"
       "t3,Who approves leave?,paraphrase,\n"
       "t4,Where is the pension form?,lexical,release\n")


def test_import_takes_an_optional_tier_and_refuses_a_bad_one_naming_file_line_field(store, tmp_path, capsys):
    (tmp_path / "t.csv").write_text(CSV)
    rc, _, err = golden(capsys, "queries", "import", str(tmp_path / "t.csv"))
    assert rc == 0, err
    assert dict(store.read("SELECT query_id, tier FROM queries")) == {"t1": "smoke", "t2": "regression", "t3": None,
                                                                      "t4": "release"}
    before = table_snapshot(store)
    (tmp_path / "bad.csv").write_text("id,text,stratum,tier\nt5,New?,lexical,smoke\nt6,Other?,lexical,nightly\n")
    rc, _, err = golden(capsys, "queries", "import", str(tmp_path / "bad.csv"))
    assert rc == 2 and "bad.csv line 3: field 'tier' must be one of smoke, regression, release (or empty), got 'nightly'" in err
    (tmp_path / "bad.jsonl").write_text('{"id": "t5", "text": "New?", "stratum": "lexical", "tier": "Smoke"}\n'
                                        '{"id": "t6", "text": "Other?", "stratum": "lexical", "tier": 1}\n')
    rc, _, err = golden(capsys, "queries", "import", str(tmp_path / "bad.jsonl"))
    assert rc == 2 and "bad.jsonl line 1: field 'tier' must be one of" in err and "bad.jsonl line 2: field 'tier'" in err
    assert table_snapshot(store) == before  # refused: the store is unchanged
    # re-importing without the column keeps the stored tiers; with it, a change is a new revision
    (tmp_path / "again.csv").write_text("id,text,stratum\nt1,How many days carry over?,temporal\n")
    rc, out, err = golden(capsys, "queries", "import", str(tmp_path / "again.csv"))
    assert rc == 0, err
    assert queries.get_query(store, "t1").tier == "smoke"
    (tmp_path / "move.jsonl").write_text('{"id": "t1", "text": "How many days carry over?", "stratum": "temporal", '
                                         '"tier": "regression"}\n')
    assert golden(capsys, "queries", "import", str(tmp_path / "move.jsonl"))[0] == 2  # exists: needs --update
    assert golden(capsys, "queries", "import", str(tmp_path / "move.jsonl"), "--update")[0] == 0
    assert [r.tier for r in [queries.get_query(store, "t1")]] == ["regression"]
    assert store.read("SELECT tier FROM query_revisions WHERE query_id = 't1' ORDER BY event_id") == [
        ("smoke",), ("regression",)]
    # an edit that does not say a tier (e.g. the Queries page) keeps it; a bad one is refused
    rec = queries.get_query(store, "t2")
    queries.save_query(store, queries.QueryRecord(rec.query_id, "What does error VPN-0417 mean?", rec.stratum, True, "expert",
                                      rec.created_date), actor="lead")
    assert queries.get_query(store, "t2").tier == "regression"
    with pytest.raises(ValidationError) as exc:
        queries.save_query(store, queries.QueryRecord("t9", "x?", "lexical", True, "expert", rec.created_date, tier="gold"),
                     actor="lead")
    assert "field 'tier' must be one of smoke, regression, release" in str(exc.value.problems)


def _tag_demo(store, tmp_path, capsys) -> dict[str, str]:
    """Tier the demo's first 12 questions: 4 smoke, 4 regression, 4 release."""
    rows = store.read("SELECT query_id, text, stratum FROM queries ORDER BY query_id LIMIT 12")
    tiers = {qid: ("smoke", "regression", "release")[i // 4] for i, (qid, _, _) in enumerate(rows)}
    lines = [json.dumps({"id": qid, "text": text, "stratum": stratum, "tier": tiers[qid]}) for qid, text, stratum in rows]
    (tmp_path / "tiers.jsonl").write_text("\n".join(lines) + "\n")
    rc, _, err = golden(capsys, "queries", "import", str(tmp_path / "tiers.jsonl"), "--update")
    assert rc == 0, err
    return tiers


def test_freeze_carries_the_tier_and_score_and_compare_restrict_to_it(demo_store, tmp_path, capsys):
    freeze(demo_store, "v0", actor="eng")
    tiers = _tag_demo(demo_store, tmp_path, capsys)
    freeze(demo_store, "v1", actor="eng")
    v = load_version("v1")
    frozen = v.queries.set_index("query_id")["tier"]
    assert {k: frozen[k] for k in tiers} == tiers and frozen.drop(list(tiers)).isna().all()
    changed = {c["query_id"]: c["fields"] for c in diff_versions("v0", "v1")["queries"]["changed"]}
    assert changed["q001"] == {"tier": {"from": None, "to": "smoke"}} and len(changed) == 12
    # golden score --tier: only that tier's labeled questions
    qrels = v.qrels()
    (tmp_path / "run.txt").write_text("".join(f"{qid} Q0 {d} 1 9.0 good\n" for qid, docs in qrels.items() for d in docs))
    smoke = sorted(k for k, t in tiers.items() if t == "smoke" and k in qrels)
    negatives = set(v.queries.loc[~v.queries["answerable"], "query_id"])
    rc, out, err = golden(capsys, "score", "--version", "v1", "--run", str(tmp_path / "run.txt"), "-m", "R@10",
                          "--tier", "smoke", "--per-query")
    assert rc == 0, err
    scored = sorted({line.split("\t")[1] for line in out.splitlines() if "\tall\t" not in line})
    assert scored == sorted(set(smoke) - negatives) and len(scored) >= 3
    assert "# tier smoke only: 4 of the version's 40 questions are tier smoke; the others are not scored" in err
    rc, out, err = golden(capsys, "score", "--version", "v1", "--run", str(tmp_path / "run.txt"), "-m", "R@10",
                          "--tier", "release", "--json")
    rep = json.loads(out)
    assert rc == 0 and rep["n_queries"] == len(set(k for k, t in tiers.items() if t == "release") & set(qrels) - negatives)
    assert rep["definitions"]["_scope"].startswith("tier release only: 4 of")
    rc, _, err = golden(capsys, "score", "--version", "v0", "--run", str(tmp_path / "run.txt"), "-m", "R@10",
                        "--tier", "smoke")
    assert rc == 2 and "No question of tier smoke in version 'v0'" in err
    rc, _, err = golden(capsys, "score", "--qrels", str(tmp_path / "run.txt"), "--run", str(tmp_path / "run.txt"),
                        "-m", "R@10", "--tier", "smoke")
    assert rc == 2 and "--tier needs --version" in err
    with pytest.raises(SystemExit) as exc:
        golden(capsys, "score", "--version", "v1", "--run", str(tmp_path / "run.txt"), "-m", "R@10", "--tier", "nightly")
    assert exc.value.code == 2 and "invalid choice: 'nightly'" in capsys.readouterr().err
    # golden compare --tier: the candidate regresses on the release tier only
    strata = v.strata
    base = {qid: 1.0 for qid in v.query_ids}
    cand = {qid: (0.0 if tiers.get(qid) == "release" else 1.0) for qid in v.query_ids}
    for name, vals in (("base", base), ("cand", cand)):
        record_evaluation(demo_store, name, pd.DataFrame({"R@10": vals}).rename_axis("query_id"),
                          dataset_version="v1", strata=strata)
    # 4 questions a tier: too few for a verdict (exit 2, could not compare) unless the minimum is lowered
    rc, _, err = golden(capsys, "compare", "base", "cand", "--tier", "smoke")
    assert rc == 2 and "share only 4 question(s) for R@10" in err
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--tier", "smoke", "--min-n", "1", "--json")
    c = json.loads(out)
    assert rc == 0 and c["metrics"]["R@10"]["n"] == 4 and c["metrics"]["R@10"]["verdict"] == "PASS"
    assert c["scope"] == ["tier smoke only: 4 of 40 questions are tier smoke in v1; the other 36 are left out"]
    # 4 of 4 release questions lose: the exact sign-flip p is 2 / 2^4 = 0.125, not the bootstrap's 0: no FAIL
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--tier", "release", "--min-n", "1", "--json")
    e = json.loads(out)["metrics"]["R@10"]
    assert rc == 0 and e["losses"] == 4 and e["p"] == 2 / 2 ** 4 and e["verdict"] == "PASS"
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--tier", "release", "--min-n", "1")
    assert "scope: tier release only: 4 of 40" in out and "R@10: PASS" in out and "sign-flip (exact)" in out
    rc, out, _ = golden(capsys, "compare", "base", "cand", "--tier", "release", "--held-out-only")
    assert rc == 2  # no release question is held out in the demo: nothing to pair
