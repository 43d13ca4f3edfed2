"""Issue 36 item 7c: the Agreement tab opened on every label pooled (κ 0.489 "moderate") while the
newest round's pair stood at -0.235. It opens on the newest round now and names it in the
headline ("Round r2 (newest): ..."); "All rounds pooled" stays a choice.

References: scikit-learn's ``cohen_kappa_score`` on the grades the test itself gives in the new
round; for the pooled figure, each pair's κ from the ``grade_events`` table (each annotator's
latest act per passage), weighted by the pair's shared items (Light's κ, weighted: the
pooling the manifest and the page define)."""

from __future__ import annotations

import itertools
import math
import warnings

import pandas as pd
from sklearn.metrics import cohen_kappa_score

from annotator import demo
from annotator.labeling import agreement, judging, rounds
from annotator.people import identity
from annotator.process import context
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain

PASSWORD = "0123456789"
ANN = [3, 2, 3, 0, 1, 3, 2, 0]
BOB = [0, 3, 1, 2, 3, 0, 0, 2]  # a pair that disagrees more than chance


def _grade(store, username: str, grade_of) -> list[tuple]:
    user = identity.get_user(store, username)
    done = []
    for _ in range(len(ANN)):
        item = judging.next_item(store, user)  # the round's items come first
        key = (item.query_id, item.doc_id, item.start, item.end)
        judging.judge(store, user, item, "grade", grade_of(key, len(done)))
        done.append(key)
    return done


def _pooled_unweighted_kappa(store) -> float:
    ev = pd.DataFrame(store.read(
        "SELECT event_id, actor, query_id, doc_id, start, \"end\", op, grade FROM grade_events "
        "WHERE op IN ('grade', 'retract', 'skip', 'unsure')"),
        columns=["event_id", "actor", "query_id", "doc_id", "start", "end", "op", "grade"])
    last = ev.sort_values("event_id").groupby(["actor", "query_id", "doc_id", "start", "end"]).tail(1)
    last = last[last["op"] == "grade"]
    item = ["query_id", "doc_id", "start", "end"]
    total = weight = 0.0
    for a, b in itertools.combinations(sorted(last["actor"].unique()), 2):
        both = last[last["actor"] == a].merge(last[last["actor"] == b], on=item)
        if not len(both):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a pair in perfect agreement on one grade: undefined, skipped
            k = cohen_kappa_score(both["grade_x"].astype(int), both["grade_y"].astype(int), labels=[0, 1, 2, 3])
        if not math.isnan(k):
            total, weight = total + k * len(both), weight + len(both)
    return total / weight


def _headline(at) -> str:
    return next(plain(x.value) for x in [*at.success, *at.warning] if "annotators." in plain(x.value))


def test_the_agreement_tab_opens_on_the_newest_round_and_names_it(golden_db):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lena", ["lead"], password=PASSWORD)
    for name in ("ann", "bob"):
        identity.create_user(store, admin, name, ["annotator"], password=PASSWORD)
    demo.load_demo(store, admin, workflows=True, pool_job=False)  # round r1: two demo annotators on 17 passages
    lena = identity.get_user(store, "lena")
    assert rounds.start_calibration(store, lena, ["ann", "bob"], n=len(ANN), seed=1) == "r2"
    ann_items = _grade(store, "ann", lambda key, i: ANN[i])
    bob_of = dict(zip(ann_items, BOB))
    _grade(store, "bob", lambda key, i: bob_of[key])
    newest = cohen_kappa_score(ANN, BOB, labels=[0, 1, 2, 3])
    pooled = _pooled_unweighted_kappa(store)
    assert newest < 0 < pooled and f"{newest:.3f}" != f"{pooled:.3f}"  # the case the issue saw

    at = app_as("lena")
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception
    scope = at.selectbox(key="agree_scope")
    assert scope.value == "r2"  # the newest round, not everything pooled
    assert scope.options == ["Round r2 (newest)", "Round r1", "All rounds pooled"]
    headline = _headline(at)
    assert headline.startswith("Round r2 (newest): binary κ ")
    assert f"graded κ unweighted {newest:.3f}: poor" in headline and f"{len(ANN)} items graded" in headline
    assert "below the bar" in headline

    scope.set_value(agreement.POOLED).run()
    assert not at.exception
    headline = _headline(at)
    assert headline.startswith("All rounds pooled: binary κ ")
    assert f"graded κ unweighted {pooled:.3f}:" in headline and f"{len(ANN) + 17} items graded" in headline
