"""The Agreement page's figures from SQL counts (issue 19) equal the per-label computation
they replaced (``agreement_report`` over ``grade_rows``), on generated stores with several
annotators, rounds, weeks, retractions, re-grades and adjudications."""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from annotator.labeling import agreement
from annotator.process import cache
from annotator.people.identity import cli_user
from annotator.demo import load_demo
from golden_store.live import agreement_data, grade_state
from golden_store.scoring import agreement_report as report
from golden_store.scoring.agreement import GRADES, kappa_bootstrap_ci, per_class


def _fill(store, seed: int, n_items: int = 150, n_actors: int = 6) -> None:
    """Grade events as judging.insert_tx writes them, in bulk: random items of the demo pool
    graded by 1-4 annotators, some in rounds, over several weeks, with re-grades, retractions
    and adjudications."""
    rng = random.Random(seed)
    docs = store.read("SELECT doc_id, length(raw_text), canonical_sha256 FROM documents ORDER BY 1")
    qids = [r[0] for r in store.read("SELECT query_id FROM queries ORDER BY 1")]
    actors = [f"ann{i:02d}" for i in range(n_actors)]
    t0 = datetime(2026, 1, 5, 9)
    rows = []
    for _ in range(n_items):
        d, length, sha = rng.choice(docs)
        s = rng.randrange(0, max(1, length - 50))
        item = (rng.choice(qids), d, s, s + rng.randint(10, 50))
        rnd = rng.choice([None, None, "r1", "r2"])
        for who in rng.sample(actors, min(n_actors, rng.choice([1, 2, 2, 3, 4]))):
            at = t0 + timedelta(hours=rng.randrange(24 * 7 * 6))
            rows.append((*item, sha, "grade", rng.choice(GRADES), who, at, 1, rnd, None))
            if rng.random() < 0.1:
                rows.append((*item, sha, "grade", rng.choice(GRADES), who, at + timedelta(hours=1), 1, rnd, None))
            if rng.random() < 0.05:
                rows.append((*item, sha, "retract", None, who, at + timedelta(hours=2), 1, rnd, None))
        if rng.random() < 0.2:
            rows.append((*item, sha, "adjudicate", rng.choice(GRADES), "lead", t0 + timedelta(days=50), 1, None,
                         "why"))
    rows.sort(key=lambda r: r[8])

    def tx(cur) -> None:
        cur.executemany(
            "INSERT INTO grade_events (query_id, doc_id, start, \"end\", doc_sha256, op, grade, actor, created_at, "
            "rubric_version, round_id, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        grade_state.rebuild_tx(cur)  # a bulk insert: the current grading state refilled from the log

    store.write(tx)


def _same(x, y) -> bool:
    if isinstance(x, float) or isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12, abs=1e-12)
    return x == y


def _frames_equal(new: pd.DataFrame, old: pd.DataFrame) -> None:
    assert list(new.columns) == list(old.columns)
    assert len(new) == len(old)
    for c in new.columns:
        for x, y in zip(new[c], old[c]):
            if isinstance(x, pd.Timestamp) or isinstance(y, pd.Timestamp):
                assert pd.Timestamp(x) == pd.Timestamp(y), c
            else:
                assert _same(x, y), (c, x, y)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("round_id", [None, "r1"])
def test_counts_equal_the_per_label_report(store, seed, round_id):
    user = cli_user()
    load_demo(store, user)
    _fill(store, seed)
    rep = agreement.compute(store, user, round_id)
    rows = agreement_data.grade_rows(store)
    if round_id:
        rows = rows[rows["round_id"] == round_id]
    old = report.group(rows)
    g = rep.group
    assert g.n_units == old.n_units and g.annotators == old.annotators
    assert [p.as_row() for p in g.pairs] == [p.as_row() for p in old.pairs]
    for f in ("kappa_binary", "kappa_linear", "kappa_quadratic", "raw", "alpha_ordinal", "alpha_nominal_binary"):
        assert _same(getattr(g, f), getattr(old, f)), f
    _frames_equal(rep.per_stratum, report.by(rows, "stratum"))
    _frames_equal(rep.per_round, report.by(rows, "round_id"))
    _frames_equal(rep.over_time, report.over_time(rows))
    _frames_equal(rep.drift, report.drift(rows, agreement_data.gold_rows(store)))
    dist = report.distributions(rows)
    assert np.allclose(rep.distributions.to_numpy(), dist.to_numpy(), rtol=0, atol=1e-15)
    assert list(rep.distributions.index) == list(dist.index)
    # the selected pair's matrix and per-class figures, from the labels themselves
    p = g.pairs[0]
    wide = rows.pivot_table(index="unit", columns="actor", values="grade", aggfunc="first")[[p.a, p.b]].dropna()
    ga, gb = list(wide[p.a].astype(int)), list(wide[p.b].astype(int))
    cm = rep.pair_confusion(p.a, p.b).to_numpy()
    assert cm.sum() == len(ga) and all(cm[x, y] >= 1 for x, y in zip(ga, gb))
    assert pd.DataFrame(rep.pair_per_class(p.a, p.b)).equals(pd.DataFrame(per_class(ga, gb, labels=list(GRADES))))
    assert (rep.pair_confusion(p.b, p.a).to_numpy() == cm.T).all()


def test_intervals_from_counts_match_item_resampling(store):
    """Multinomial draws over the cells are item resampling in distribution: on the same
    pair the two intervals agree closely (2,000 draws each)."""
    user = cli_user()
    load_demo(store, user)
    _fill(store, 4, n_items=400, n_actors=2)
    rep = agreement.compute(store, user)
    p = rep.group.pairs[0]
    wide = rep.rows.pivot_table(index="unit", columns="actor", values="grade", aggfunc="first")[[p.a, p.b]].dropna()
    ref = kappa_bootstrap_ci(list(wide[p.a].astype(int)), list(wide[p.b].astype(int)), "linear",
                             labels=list(GRADES), n_boot=2000)
    got = rep.pair_intervals(p.a, p.b, n_boot=2000)["kappa_linear"]
    assert got[0] == pytest.approx(ref[0], abs=0.03) and got[1] == pytest.approx(ref[1], abs=0.03)


def test_a_rerun_with_no_new_label_reads_the_cache_and_a_new_label_refreshes_it(store):
    user = cli_user()
    load_demo(store, user)
    _fill(store, 5)
    first = agreement.compute(store, user)
    assert agreement.compute(store, user) is first  # nothing written: the same object
    q, d, s, e = store.read_one("SELECT query_id, doc_id, start, \"end\" FROM current_grades LIMIT 1")
    from golden_store.live import judging
    judging.record(store, "ann99", q, d, s, e, op="grade", grade=3)
    again = agreement.compute(store, user)
    assert again is not first and "ann99" in again.distributions.index
    cache.clear()


@pytest.mark.parametrize("seed", [4, 5])
def test_a_freezes_agreement_figures_equal_the_per_label_report(store, seed):
    """The freeze reads κ/α from the SQL counts too (issue 19: the per-label frame was 840 MB
    of a freeze at 5.7 M events); its manifest's figures, whole and per round, are the
    per-label report's."""
    from golden_store.freezing import freeze

    load_demo(store, cli_user())
    _fill(store, seed)
    # the rounds _fill's labels name, so the manifest lists them with their figures
    store.write(lambda cur: cur.executemany(
        "INSERT INTO rounds (round_id, kind, annotators, overlap, seed, n_items, created_by, created_at) "
        "VALUES (?, 'calibration', ?, 1.0, 0, 10, 'lead', ?)",
        [(r, [f"ann{i:02d}" for i in range(6)], datetime(2026, 1, 5 + i)) for i, r in enumerate(("r1", "r2"))]))
    # _fill grades at random whatever the question; a freeze refuses an unanswerable question
    # graded 2+ (issue 29, M11), and answerability does not enter agreement
    store.write(lambda cur: cur.execute("UPDATE query_revisions SET answerable = true"))
    m = freeze(store, f"agr{seed}", actor="eng").manifest
    rows = agreement_data.grade_rows(store)
    whole = report.group(rows).summary()
    assert whole["n_units"] > 0 and m["n_items_double_annotated"] == whole["n_units"]
    for f in ("kappa_binary", "kappa_linear", "alpha_ordinal"):
        assert m[f] == whole[f], f
    per_round = {r["round_id"]: r for r in report.by(rows, "round_id").to_dict("records")}
    frozen = {r["round_id"]: r for r in m["rounds"]}
    assert {"r1", "r2"} <= set(frozen) and {"r1", "r2"} <= set(per_round)
    for rid in ("r1", "r2"):
        fig = per_round[rid]
        assert frozen[rid]["n_units_double"] == fig["n_units"] > 0
        for f in ("kappa_binary", "kappa_linear", "alpha_ordinal"):
            assert frozen[rid][f] == (None if fig[f] is None or math.isnan(fig[f]) else fig[f]), (rid, f)
