"""Failure transcript review (METHODOLOGY §12.5, §15.4): the pure sampler, import
validation, reviews as events, grader failures in the lead's queue, the flywheel into the
evidence queue, the per-stratum summary and the CLI."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date

import pytest

from annotator.evaluation import transcripts
from annotator.evidence import evidence_authoring
from annotator.people.identity import LOCAL_USER, Role, User
from annotator.people.roles import PermissionDenied
from annotator.evaluation.transcript_sampling import Candidate, sample_failures
from golden_store.core.errors import NotFoundError, ValidationError
from tests.conftest import table_snapshot

REVIEWER = User("rita", "Rita", frozenset({Role.REVIEWER}))
LEAD = User("leo", "Leo", frozenset({Role.LEAD}))
ENGINEER = User("eng", "Eng", frozenset({Role.ENGINEER}))


# ---- the pure sampler ----------------------------------------------------------------------------


def _cands():
    out = []
    for s, n in (("lexical", 30), ("paraphrase", 12), ("tabular", 4), ("negative", 2)):
        for i in range(n):
            out.append(Candidate(f"{s}-{i}", s, "retrieval" if i % 3 else "generation"))
    return out


def test_sample_is_stratified_balanced_and_reproducible():
    c = _cands()
    a = sample_failures(c, 10, seed=5)
    assert a == sample_failures(list(reversed(c)), 10, seed=5)  # input order irrelevant
    assert a != sample_failures(c, 10, seed=6)
    per = Counter(x.split("-")[0] for x in a)
    assert set(per) == {"lexical", "paraphrase", "tabular", "negative"}  # every stratum met
    assert max(per.values()) - min(per.values()) <= 1 or per["negative"] == 2
    lex = [x for x in a if x.startswith("lexical")]
    kinds = Counter("generation" if int(x.split("-")[1]) % 3 == 0 else "retrieval" for x in lex)
    assert len(kinds) == 2  # both failure types of the stratum
    assert len(set(a)) == 10


def test_reviewed_never_drawn_and_no_repeats_until_exhausted():
    c = _cands()
    first = sample_failures(c, 10, seed=1)
    second = sample_failures(c, 10, seed=1, drawn_before=first)
    assert not set(first) & set(second)
    reviewed = set(first[:4])
    seen = set(first) | set(second)
    third = sample_failures(c, 100, seed=2, reviewed=reviewed, drawn_before=seen)
    assert not reviewed & set(third)
    fresh = [x for x in third if x not in seen]
    assert third[:len(fresh)] == fresh  # fresh ones first, then earlier draws
    assert len(third) == len(c) - len(reviewed)


# ---- import, review, flywheel ------------------------------------------------------------------


def _record(qid, trial=0, passed=False, source="eval_run", **extra):
    return {"evaluation_id": "run-7", "query_id": qid, "trial": trial, "passed": passed, "source": source,
            "metrics": {"recall@10": 0.0 if not passed else 1.0},
            "transcript": {"question": extra.pop("question", f"question {qid}"),
                           "retrieved": [{"doc_id": "vpn-troubleshooting",
                                          "text": "VPN-ERR-0417 means the device certificate on your laptop has "
                                                  "expired; open Company Portal <script>alert(1)</script>"}],
                           "answer": "<img src=x onerror=alert(1)> Restart your router.",
                           "judge": {"verdict": "pass", "justification": "Looks fine **bold**"}},
            **extra}


def _write(tmp_path, records, name="t.jsonl"):
    f = tmp_path / name
    f.write_text("".join(json.dumps(r) + "\n" for r in records))
    return f


def test_import_validation_is_all_or_nothing(demo_store, tmp_path):
    before = table_snapshot(demo_store)
    bad = _write(tmp_path, [_record("q001"), _record("nope"), {**_record("q002"), "passed": "no"},
                            _record("q001")])
    with pytest.raises(ValidationError) as e:
        transcripts.import_file(demo_store, LOCAL_USER, bad)
    problems = "\n".join(e.value.problems)
    assert "t.jsonl line 2: unknown query_id 'nope' (only production_log items may bring new questions)" in problems
    assert "t.jsonl line 3: field 'passed' must be true or false" in problems
    assert "t.jsonl line 4: evaluation run-7 query q001 trial 0 appears twice" in problems
    assert table_snapshot(demo_store) == before
    with pytest.raises(PermissionDenied):
        transcripts.import_file(demo_store, REVIEWER, bad)
    ok = _write(tmp_path, [_record("q001"), _record("q002", passed=True),
                           _record("new-1", source="production_log", stratum="paraphrase",
                                   question="how do I expense a taxi?")])
    assert transcripts.import_file(demo_store, ENGINEER, ok) == 3
    with pytest.raises(ValidationError, match="already imported"):
        transcripts.import_file(demo_store, ENGINEER, ok)


def test_review_flow_grader_failure_to_adjudication_and_flywheel(demo_store, tmp_path):
    records = [_record(q) for q in ("q001", "q002", "q003", "q004")]
    records += [_record("pl-1", source="production_log", stratum="paraphrase", question="taxi receipts?",
                        trace_id="tr-99")]
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, records))
    did, items = transcripts.draw(demo_store, REVIEWER, 3, seed=4)
    assert did == "d1" and len(items) == 3
    sample = transcripts.latest_draw(demo_store, REVIEWER)
    assert [t["item_id"] for t in sample] == items
    # the question's evidence is marked inside the retrieved passage
    q1 = transcripts.transcript(demo_store, REVIEWER, "run-7|q001|0")
    assert q1["retrieved"][0]["has_evidence"]
    # grader failure -> the lead's queue; resolved -> gone
    transcripts.review(demo_store, REVIEWER, "run-7|q001|0", "grader_failure", note="the answer was right")
    with pytest.raises(PermissionDenied):
        transcripts.questioned(demo_store, REVIEWER)
    q = transcripts.questioned(demo_store, LEAD)
    assert [x["item_id"] for x in q] == ["run-7|q001|0"] and q[0]["review_note"] == "the answer was right"
    with pytest.raises(ValidationError, match="rationale"):
        transcripts.resolve(demo_store, LEAD, "run-7|q001|0", "judge_fixed", "")
    transcripts.resolve(demo_store, LEAD, "run-7|q001|0", "judge_fixed", "rubric line added")
    assert transcripts.questioned(demo_store, LEAD) == []
    # a system failure needs its class
    with pytest.raises(ValidationError, match="needs its class"):
        transcripts.review(demo_store, REVIEWER, "run-7|q002|0", "system_failure")
    transcripts.review(demo_store, REVIEWER, "run-7|q002|0", "system_failure", "retrieval_miss")
    events = demo_store.read(
        "SELECT 'review', evaluation_id, query_id, trial, verdict, failure_class, actor, event_id "
        "FROM transcript_review_events UNION ALL "
        "SELECT 'resolution', evaluation_id, query_id, trial, resolution, NULL, actor, event_id "
        "FROM transcript_resolution_events ORDER BY event_id")
    assert [e[:-1] for e in events] == [("review", "run-7", "q001", 0, "grader_failure", None, "rita"),
                                        ("resolution", "run-7", "q001", 0, "judge_fixed", None, "leo"),
                                        ("review", "run-7", "q002", 0, "system_failure", "retrieval_miss", "rita")]
    # the next draw skips reviewed items and earlier draws while fresh ones remain
    _, again = transcripts.draw(demo_store, REVIEWER, 10, seed=4)
    assert not {"run-7|q001|0", "run-7|q002|0"} & set(again)
    reviewed = {"run-7|q001|0", "run-7|q002|0"}
    fresh = {f"run-7|{x}|0" for x in ("q001", "q002", "q003", "q004", "pl-1")} - set(items) - reviewed
    assert set(again[:len(fresh)]) == fresh  # never-drawn first, then earlier draws not yet reviewed
    assert set(again) == {f"run-7|{x}|0" for x in ("q001", "q002", "q003", "q004", "pl-1")} - reviewed
    # flywheel: a production-log system failure becomes a golden question in the evidence queue
    with pytest.raises(ValidationError, match="only a transcript reviewed as a system failure"):
        transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|pl-1|0", answerable=True)
    transcripts.review(demo_store, REVIEWER, "run-7|pl-1|0", "system_failure", "incomplete")
    qid = transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|pl-1|0", answerable=True,
                                        today=date(2026, 3, 1))  # the day the reviewer's clock says
    assert qid == "pl-1"
    row = demo_store.read_one("SELECT text, stratum, source, created_date, answerable, notes FROM queries "
                              "WHERE query_id = 'pl-1'")
    assert row[:3] == ("taxi receipts?", "paraphrase", "production_log") and row[4] is True
    assert row[3] == date(2026, 3, 1)
    assert "run-7|pl-1|0" in row[5] and "tr-99" in row[5]
    queue = evidence_authoring.queue(demo_store, LOCAL_USER)
    assert "pl-1" in set(queue[queue["quotes"] == 0]["query_id"])
    with pytest.raises(ValidationError, match="already in the golden set"):
        transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|pl-1|0", answerable=True)
    # summary per stratum
    summ = {r["stratum"]: r for r in transcripts.summary(demo_store, REVIEWER)}
    lex = summ[demo_store.read_one("SELECT stratum FROM queries WHERE query_id = 'q001'")[0]]
    assert lex["grader_failures"] >= 1 and lex["grader_failure_rate"] > 0
    assert all(0 <= r["headroom"] <= 1 for r in summ.values())


def test_saturated_stratum_is_flagged(demo_store, tmp_path):
    recs = [_record("q001", trial=i, passed=True) for i in range(60)]
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, recs))
    summ = transcripts.summary(demo_store, REVIEWER)
    assert len(summ) == 1 and summ[0]["saturated"] and summ[0]["headroom"] == 0.0


def test_a_few_passing_transcripts_do_not_make_a_stratum_saturated(demo_store, tmp_path):
    """The demo's strata read "saturated" with two or three passing transcripts: too few to say
    the headroom is gone. Flagged from SATURATION_MIN transcripts on."""
    from golden_store.live.transcripts import SATURATION_MIN

    recs = [_record("q001", trial=i, passed=True) for i in range(SATURATION_MIN - 1)]
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, recs))
    (row,) = transcripts.summary(demo_store, REVIEWER)
    assert row["headroom"] == 0.0 and not row["saturated"]
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, [_record("q001", trial=SATURATION_MIN, passed=True)],
                                                          "more.jsonl"))
    (row,) = transcripts.summary(demo_store, REVIEWER)
    assert row["transcripts"] == SATURATION_MIN and row["saturated"]


def test_cli_import_and_sample(tmp_path):
    from tests.annotator.test_cli import run

    assert run(tmp_path, "demo", "--small").returncode == 0
    recs = [_record(q, trial=t) for q in ("q001", "q002", "q005", "q010", "q020") for t in range(2)]
    _write(tmp_path, recs, "tr.jsonl")
    r = run(tmp_path, "transcripts", "import", "tr.jsonl")
    assert r.returncode == 0, r.stderr
    a = json.loads(run(tmp_path, "transcripts", "sample", "--n", "4", "--seed", "3", "--json").stdout)
    b = json.loads(run(tmp_path, "transcripts", "sample", "--n", "4", "--seed", "3", "--json").stdout)
    assert len(a["items"]) == 4 and a["draw_id"] == "d1" and b["draw_id"] == "d2"
    assert not {i["item_id"] for i in a["items"]} & {i["item_id"] for i in b["items"]}  # no repeats
    assert len({i["stratum"] for i in a["items"]}) >= 2
    summary = run(tmp_path, "transcripts", "summary")
    assert "failures" in summary.stdout and summary.returncode == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"evaluation_id": "r"}\n')
    r = run(tmp_path, "transcripts", "import", "bad.jsonl")
    assert r.returncode == 2 and "bad.jsonl line 1" in r.stderr


def test_evidence_marking_whole_and_cut():
    from annotator.evaluation.transcripts import _mark

    ev = "VPN-ERR-0417 means the device certificate on your laptop has expired; renew it."
    whole = _mark("Intro. " + ev + " Outro.", [ev])
    assert [t for t, hit in whole if hit] == [ev]
    cut = _mark("Intro. VPN-ERR-0417 means the device certificate on your laptop", [ev])
    assert [t for t, hit in cut if hit] == ["VPN-ERR-0417 means the device certificate on your laptop"]
    assert [t for t, hit in _mark("nothing in common here at all", [ev]) if hit] == []
    assert "".join(t for t, _ in cut) == "Intro. VPN-ERR-0417 means the device certificate on your laptop"


def test_ids_holding_the_separator_round_trip_through_review(demo_store, tmp_path):
    """Issue 16: a transcript is keyed by real (evaluation_id, query_id, trial) columns, so a '|' in
    a run or query id (or a backslash, the key string's escape) is accepted and every step
    (draw, read, keyed review and its undo, the lead's queue, resolution, the flywheel) lands
    on that transcript and no other."""
    from golden_store.live import transcripts as store_t

    odd = [("a|b", "pl|1", 0), ("a", "b|pl|1", 0), ("a|b|pl", "1", 0), ("x\\|y", "pl-2\\", 3)]
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, [
        {**_record(q, source="production_log", stratum="paraphrase", question=f"question of {r} {q}"),
         "evaluation_id": r, "trial": t} for r, q, t in odd]))
    keys = {store_t.item_key(*k): k for k in odd}
    assert len(keys) == 4 and all(store_t.parse_item_key(i) == k for i, k in keys.items())
    _, items = transcripts.draw(demo_store, REVIEWER, 10, seed=1)
    assert set(keys) <= set(items)
    for item, (r, q, t) in keys.items():
        got = transcripts.transcript(demo_store, REVIEWER, item)
        assert (got["evaluation_id"], got["query_id"], got["trial"], got["question"]) == (r, q, t, f"question of {r} {q}")
    # the keyed surface: a verdict names its transcript by the key string and lands on it alone
    cards = {c["item"]["item_id"]: c for c in transcripts.review_cards(demo_store, REVIEWER, 50)}
    first = store_t.item_key(*odd[0])
    acks = transcripts.submit(demo_store, REVIEWER, [{"id": "lbl-odd-0001", "by": "rita", "item": cards[first]["item"],
                                                      "digest": cards[first]["digest"], "action": "grader_failure"}])
    assert [a.status for a in acks] == ["saved"]
    assert demo_store.read("SELECT evaluation_id, query_id, trial, verdict FROM transcript_review_events") == [
        ("a|b", "pl|1", 0, "grader_failure")]
    assert [x["item_id"] for x in transcripts.questioned(demo_store, LEAD)] == [first]
    transcripts.resolve(demo_store, LEAD, first, "label_fixed", "the label was wrong")
    assert demo_store.read("SELECT evaluation_id, query_id, trial, resolution FROM transcript_resolution_events") == [
        ("a|b", "pl|1", 0, "label_fixed")]
    acks = transcripts.submit(demo_store, REVIEWER, [{"id": "lbl-odd-0002", "by": "rita", "item": cards[first]["item"],
                                                      "action": "undo", "target": "lbl-odd-0001"}])
    assert [a.status for a in acks] == ["saved"]
    assert transcripts.transcript(demo_store, REVIEWER, first)["verdict"] is None
    last = store_t.item_key(*odd[3])
    transcripts.review(demo_store, REVIEWER, last, "system_failure", "retrieval_miss")
    reviewed = {x["item_id"]: x["verdict"] for x in transcripts.my_reviewed(demo_store, REVIEWER)}
    assert reviewed == {last: "system_failure"}
    qid = transcripts.add_to_golden_set(demo_store, REVIEWER, last, "paraphrase", answerable=True)
    assert qid.startswith("fw-")  # 'pl-2\\' is not a valid query id
    # a string that is not a key names nothing
    with pytest.raises(NotFoundError):
        transcripts.transcript(demo_store, REVIEWER, "a|b|pl|1|0")


def test_retired_ids_never_come_back(demo_store, tmp_path):
    from golden_store.live import queries

    queries.save_query(demo_store, queries.QueryRecord("old-1", "retired question", "paraphrase", True, "expert",
                                                       date(2026, 1, 1)), actor="t", must_exist=False)
    queries.retire_query(demo_store, "old-1", actor="t")
    transcripts.import_file(demo_store, ENGINEER, _write(tmp_path, [
        _record("old-1", source="production_log", stratum="paraphrase", question="a new question")]))
    transcripts.review(demo_store, REVIEWER, "run-7|old-1|0", "system_failure", "retrieval_miss")
    qid = transcripts.add_to_golden_set(demo_store, REVIEWER, "run-7|old-1|0", answerable=True)
    assert qid.startswith("fw-") and queries.get_query(demo_store, qid).text == "a new question"


def test_a_file_naming_the_evaluation_run_id_as_before_schema_15_imports_the_same(demo_store, tmp_path):
    """Files written for the former field name keep working: ``run_id`` is read as ``evaluation_id``."""
    old = {**_record("q001"), "run_id": "nightly-3"}
    del old["evaluation_id"]
    f = tmp_path / "old.jsonl"
    f.write_text(json.dumps(old) + "\n")
    assert transcripts.import_file(demo_store, LOCAL_USER, f) == 1
    assert demo_store.read("SELECT evaluation_id, query_id, trial FROM transcripts WHERE evaluation_id = 'nightly-3'") \
        == [("nightly-3", "q001", 0)]


# ---- issue 27: a share of the judge's passes, and the judge check (METHODOLOGY §11.1, Case 3) ----


def _mixed():
    """Failures in four strata, passes in three (different amounts), ids telling kind and stratum."""
    fails = _cands()
    passes = [Candidate(f"P{s}-{i}", s) for s, n in (("lexical", 20), ("paraphrase", 6), ("tabular", 3))
              for i in range(n)]
    return fails, passes


def test_pass_share_zero_is_the_failures_only_draw():
    from annotator.evaluation.transcript_sampling import sample_draw

    fails, passes = _mixed()
    for seed in range(5):
        for n in (1, 4, 10, 100):
            assert sample_draw(fails, passes, n, seed) == sample_failures(fails, n, seed)
            assert sample_draw(fails, passes, n, seed, pass_share=0.0, drawn_before=["lexical-1"],
                               reviewed=["paraphrase-2"]) == sample_failures(
                fails, n, seed, drawn_before=["lexical-1"], reviewed=["paraphrase-2"])


def test_pass_share_draws_passes_in_number_balanced_seeded_and_never_reviewed():
    from annotator.evaluation.transcript_sampling import pass_quota, sample_draw

    fails, passes = _mixed()
    a = sample_draw(fails, passes, 10, seed=3, pass_share=0.3)
    assert a == sample_draw(list(reversed(fails)), list(reversed(passes)), 10, seed=3, pass_share=0.3)  # repeatable
    assert a != sample_draw(fails, passes, 10, seed=4, pass_share=0.3)
    got = [x for x in a if x.startswith("P")]
    assert len(got) == 3 and len(a) == len(set(a)) == 10
    assert sorted(x.split("-")[0] for x in got) == ["Plexical", "Pparaphrase", "Ptabular"]  # strata take turns
    # the failures drawn are the failures-only draw's first seven, in that order
    assert [x for x in a if not x.startswith("P")] == sample_failures(fails, 7, seed=3)
    assert [pass_quota(10, s) for s in (0, 0.04, 0.05, 0.2, 0.25, 1)] == [0, 0, 1, 2, 3, 10]
    assert pass_quota(1, 0.2) == 0
    with pytest.raises(ValueError, match="from 0 to 1"):
        pass_quota(10, 1.5)
    # positions are seeded, not "passes last": over seeds the passes sit all over the draw
    spots = {i for seed in range(30) for i, x in enumerate(sample_draw(fails, passes, 10, seed, pass_share=0.2))
             if x.startswith("P")}
    assert len(spots) >= 8
    # reviewed passes are never drawn; earlier-drawn ones only after the fresh ones
    reviewed = {"Plexical-0", "Plexical-1", "Ptabular-0"}
    fresh = {p.item_id for p in passes} - reviewed - set(got)
    b = sample_draw(fails, passes, 40, seed=3, pass_share=0.5, reviewed=reviewed, drawn_before=got)
    bp = [x for x in b if x.startswith("P")]
    assert len(bp) == 20 and set(bp) <= fresh
    everything = sample_draw(fails, passes, 100, seed=3, pass_share=0.5, reviewed=reviewed, drawn_before=got)
    ep = [x for x in everything if x.startswith("P")]
    assert not reviewed & set(everything) and len(ep) == len(fresh) + len(set(got) - reviewed)
    assert set(ep[:len(fresh)]) == fresh  # the fresh passes first, then the earlier-drawn ones
    # one kind short: the other fills the draw
    assert len(sample_draw(fails[:2], passes, 10, seed=1, pass_share=0.2)) == 10
    assert len([x for x in sample_draw(fails[:2], passes, 10, seed=1, pass_share=0.2) if x.startswith("P")]) == 8
    assert sample_draw(fails, [], 10, seed=1, pass_share=0.5) == sample_failures(fails, 10, seed=1)


def test_wilson_interval_against_a_reference():
    from annotator.evaluation.transcripts import wilson_interval

    cases = [(3, 10), (0, 10), (10, 10), (1, 40), (7, 23)]
    try:  # statsmodels, when installed; else scipy's binomtest; else values worked by hand
        from statsmodels.stats.proportion import proportion_confint

        ref = {c: proportion_confint(*c, alpha=0.05, method="wilson") for c in cases}
    except ImportError:
        try:
            from scipy.stats import binomtest

            ref = {c: tuple(binomtest(*c).proportion_ci(0.95, method="wilson")) for c in cases}
        except ImportError:
            ref = {(3, 10): (0.107791, 0.603222), (0, 10): (0.0, 0.277533), (10, 10): (0.722467, 1.0)}
    for c, (lo, hi) in ref.items():
        assert wilson_interval(*c) == pytest.approx((lo, hi), abs=1e-6)
    # by hand: 3 of 10, z = 1.96: centre (0.3 + 1.96^2/20) / (1 + 1.96^2/10) = 0.35550 ...
    assert wilson_interval(3, 10) == pytest.approx((0.10779, 0.60322), abs=1e-5)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(4, 3)


def _pl(qid, stratum, passed, evaluation="ev-1"):
    return {**_record(qid, passed=passed, source="production_log", stratum=stratum, question=f"question {qid}"),
            "evaluation_id": evaluation}


def test_draw_with_passes_through_the_store(store, tmp_path):
    """A store with no demo: failures and passes in three strata. The draw takes its share of
    passes, the same items the pure sampler picks, records them, and never draws a reviewed one."""
    from annotator.evaluation.transcript_sampling import sample_draw
    from golden_store.live import transcripts as store_t

    recs = [_pl(f"f-{s}-{i}", s, False) for s in ("lexical", "paraphrase", "tabular") for i in range(6)]
    recs += [_pl(f"p-{s}-{i}", s, True) for s in ("lexical", "paraphrase", "tabular") for i in range(6)]
    transcripts.import_file(store, ENGINEER, _write(tmp_path, recs))
    fails = [Candidate(r["item_id"], r["stratum"], r["failure_type"] or "") for r in store_t.failures(store)]
    passes = [Candidate(r["item_id"], r["stratum"], r["failure_type"] or "") for r in store_t.passes(store)]
    expected = sample_draw(fails, passes, 10, 7, pass_share=0.3)
    did, items = transcripts.draw(store, REVIEWER, 10, seed=7, pass_share=0.3)
    assert items == expected and store_t.draw_items(store, did) == items
    drawn_passes = [i for i in items if "|p-" in i]
    assert len(drawn_passes) == 3
    assert {i.split("|")[1].split("-")[1] for i in drawn_passes} == {"lexical", "paraphrase", "tabular"}
    # the failures-only draw is unchanged
    with pytest.raises(ValidationError, match="from 0 to 1"):
        transcripts.draw(store, REVIEWER, 10, seed=7, pass_share=2)
    # a drawn pass and a drawn failure look alike on their cards (blind review: test_blind_card...)
    cards = [transcripts.card(transcripts.transcript(store, REVIEWER, i)) for i in (drawn_passes[0],
                                                                                    "ev-1|f-lexical-0|0")]
    assert [sorted(c) for c in cards] == [sorted(cards[1])] * 2 and "notice" not in cards[0]
    # reviewed passes are never drawn again, even once every other pass has been drawn
    transcripts.review(store, REVIEWER, drawn_passes[0], "system_failure", "incomplete")
    transcripts.review(store, REVIEWER, drawn_passes[1], "ambiguous")
    later = [transcripts.draw(store, REVIEWER, 10, seed=s, pass_share=0.5)[1] for s in range(6)]
    assert not set(drawn_passes[:2]) & {i for d in later for i in d}
    # an overturned pass on a question the golden set lacks can be added to it
    assert drawn_passes[0] in {m["item_id"] for m in transcripts.to_add(store, REVIEWER)}
    # with pass_share 0 no pass is drawn
    assert not [i for i in transcripts.draw(store, REVIEWER, 18, seed=1, pass_share=0)[1] if "|p-" in i]


def test_judge_check_counts_latest_verdicts_once_and_not_withdrawn(store, tmp_path):
    from golden_store.live import transcripts as store_t

    recs = [_pl(f"p{i}", "lexical", True) for i in range(6)] + [_pl(f"f{i}", "lexical", False) for i in range(4)]
    recs += [_pl("x1", "lexical", True, evaluation="ev-2")]
    transcripts.import_file(store, ENGINEER, _write(tmp_path, recs))
    transcripts.draw(store, REVIEWER, 11, seed=0, pass_share=0.6)
    k = lambda q, e="ev-1": store_t.item_key(e, q, 0)  # noqa: E731
    # p0: overturned, then changed twice, overturned at the end: counted once
    transcripts.review(store, REVIEWER, k("p0"), "system_failure", "incomplete")
    transcripts.review(store, REVIEWER, k("p0"), "ambiguous")
    transcripts.review(store, REVIEWER, k("p0"), "grader_failure")
    # p1: overturned, then the reviewer changed their mind: not a false pass
    transcripts.review(store, REVIEWER, k("p1"), "grader_failure")
    transcripts.review(store, REVIEWER, k("p1"), "ambiguous")
    # p2: overturned on the surface, then withdrawn (undo): not reviewed at all
    cards = {c["item"]["item_id"]: c for c in transcripts.review_cards(store, REVIEWER, 50)}
    acks = transcripts.submit(store, REVIEWER, [
        {"id": "lbl-jc-000001", "by": "rita", "item": cards[k("p2")]["item"], "digest": cards[k("p2")]["digest"],
         "action": "system_failure", "value": "retrieval_miss"}])
    assert [a.status for a in acks] == ["saved"]
    acks = transcripts.submit(store, REVIEWER, [{"id": "lbl-jc-000002", "by": "rita", "item": cards[k("p2")]["item"],
                                                 "action": "undo", "target": "lbl-jc-000001"}])
    assert [a.status for a in acks] == ["saved"]
    # p3: overturned once; p4: confirmed (no failure), after a system failure withdrawn by a later word;
    # p5 unreviewed
    transcripts.review(store, REVIEWER, k("p3"), "system_failure", "retrieval_miss")
    transcripts.review(store, REVIEWER, k("p4"), "system_failure", "retrieval_miss")
    transcripts.review(store, REVIEWER, k("p4"), "no_failure")
    # failures: f0 confirmed, f1 overturned (grader failure), f2 confirmed then overturned, f3 overturned by
    # no failure (the judge failed a right answer), after an ambiguous
    transcripts.review(store, REVIEWER, k("f0"), "system_failure", "ranking")
    transcripts.review(store, REVIEWER, k("f1"), "grader_failure")
    transcripts.review(store, REVIEWER, k("f2"), "system_failure", "ranking")
    transcripts.review(store, REVIEWER, k("f2"), "grader_failure")
    transcripts.review(store, REVIEWER, k("f3"), "ambiguous")
    transcripts.review(store, REVIEWER, k("f3"), "no_failure")
    transcripts.review(store, REVIEWER, k("x1", "ev-2"), "system_failure", "incomplete")
    with pytest.raises(PermissionDenied):
        transcripts.judge_check(store, User("nobody", "N", frozenset()))
    rows = {r["evaluation_id"]: r for r in transcripts.judge_check(store, ENGINEER)}
    ev1 = rows["ev-1"]
    assert {c: ev1[c] for c in ("passes", "passes_reviewed", "passes_confirmed", "passes_overturned",
                                "passes_ambiguous", "passes_decided", "failures", "failures_reviewed",
                                "failures_confirmed", "failures_overturned", "failures_ambiguous",
                                "failures_decided")} == {
        "passes": 6, "passes_reviewed": 4, "passes_confirmed": 1, "passes_overturned": 2, "passes_ambiguous": 1,
        "passes_decided": 3, "failures": 4, "failures_reviewed": 4, "failures_confirmed": 1,
        "failures_overturned": 3, "failures_ambiguous": 0, "failures_decided": 4}
    # the rates are overturned / (confirmed + overturned): the ambiguous p1 is left out
    assert ev1["false_pass_rate"] == pytest.approx(2 / 3)
    assert (ev1["false_pass_low"], ev1["false_pass_high"]) == pytest.approx(transcripts.wilson_interval(2, 3))
    assert ev1["false_fail_rate"] == pytest.approx(3 / 4)
    assert (ev1["false_fail_low"], ev1["false_fail_high"]) == pytest.approx(transcripts.wilson_interval(3, 4))
    ev2 = rows["ev-2"]
    assert (ev2["passes_reviewed"], ev2["passes_overturned"], ev2["false_pass_rate"]) == (1, 1, 1.0)
    assert ev2["failures_reviewed"] == 0 and ev2["false_fail_rate"] is None and ev2["false_fail_low"] is None
    # the per-stratum summary's grader-failure rate: no failure or grader failure among reviewed failures
    (lex,) = [r for r in transcripts.summary(store, REVIEWER) if r["stratum"] == "lexical"]
    assert (lex["reviewed"], lex["grader_failures"]) == (4, 3)
    # the lead's queue: every latest verdict against the judge (p0, p3 false passes; f1, f2, f3 false fails;
    # x1 in ev-2), never one that agrees (p4, f0) or is ambiguous (p1)
    assert {q["item_id"] for q in transcripts.questioned(store, LEAD)} == {
        k("p0"), k("p3"), k("f1"), k("f2"), k("f3"), k("x1", "ev-2")}


def test_cli_draw_with_pass_share_and_judge_check(tmp_path, golden_db):
    from tests.annotator.test_cli import run

    assert run(tmp_path, "demo", "--small").returncode == 0
    recs = [{**_record(q, trial=t, passed=t == 1), "evaluation_id": "cli-ev"}
            for q in ("q001", "q002", "q005", "q010", "q020") for t in range(2)]
    _write(tmp_path, recs, "tr.jsonl")
    assert run(tmp_path, "transcripts", "import", "tr.jsonl").returncode == 0
    a = json.loads(run(tmp_path, "transcripts", "draw", "--n", "5", "--seed", "2", "--pass-share", "0.4",
                       "--json").stdout)
    assert a["pass_share"] == 0.4 and len(a["items"]) == 5
    # blind: the draw does not say which items the judge passed; the store does
    assert not {"passed", "failure_type"} & {k for i in a["items"] for k in i}
    passed = {i["item_id"] for i in a["items"] if i["trial"] == 1}
    assert len(passed) == 2
    text = run(tmp_path, "transcripts", "draw", "--n", "2", "--seed", "2")  # the default share, 0.2
    assert text.returncode == 0 and "PASS" not in text.stdout and "review them blind" in text.stdout
    bad = run(tmp_path, "transcripts", "draw", "--pass-share", "1.5")
    assert bad.returncode == 2 and "a share from 0 to 1" in bad.stderr
    first_pass = sorted(passed)[0]
    from golden_store.db.store import Store

    with Store.open(golden_db) as s:  # between CLI runs, never beside one
        transcripts.review(s, REVIEWER, first_pass, "grader_failure")
    out = run(tmp_path, "transcripts", "judge-check")
    assert out.returncode == 0, out.stderr
    assert "cli-ev" in out.stdout and "overturned    1" in out.stdout and "Wilson 95% interval" in out.stdout
    rows = {r["evaluation_id"]: r for r in json.loads(run(tmp_path, "transcripts", "judge-check", "--json").stdout)}
    assert (rows["cli-ev"]["passes_reviewed"], rows["cli-ev"]["passes_overturned"]) == (1, 1)


def _secret(qid, passed):
    """A transcript whose judge and metrics say things no card may show before the verdict."""
    rec = _pl(qid, "lexical", passed)
    rec["metrics"] = {"secret_metric_xyz": 0.123}
    rec["transcript"] = {**rec["transcript"], "judge": {"verdict": f"JUDGE-SAID-{'PASS' if passed else 'FAIL'}-{qid}",
                                                        "justification": f"justification sentinel {qid}"}}
    return rec


def test_no_failure_blind_cards_and_the_judge_shown_after_the_verdict(store, tmp_path):
    """Issue 27, blind review: the card of an undecided transcript, pass or failure, holds the
    question, the passages and the answer, never the judge's verdict, its justification, the
    metrics or a word that it passed; 'n' (no_failure) is a key of the surface and is saved;
    once given, the reviewer's list shows what the judge said. No failure on a judged pass
    agrees with the judge; on a judged failure it questions the judge (the lead's queue)."""
    from annotator.labeling import labeling
    from golden_store.live import transcripts as store_t

    transcripts.import_file(store, ENGINEER, _write(tmp_path, [_secret("p1", True), _secret("f1", False),
                                                               _secret("p2", True)]))
    transcripts.draw(store, REVIEWER, 3, seed=0, pass_share=0.5)
    cards = {c["item"]["item_id"]: c for c in transcripts.review_cards(store, REVIEWER, 10)}
    k = lambda q: store_t.item_key("ev-1", q, 0)  # noqa: E731
    assert set(cards) == {k("p1"), k("f1"), k("p2")}
    for q, c in ((q, cards[k(q)]) for q in ("p1", "f1", "p2")):
        text = json.dumps(c, ensure_ascii=False)
        assert "JUDGE-SAID" not in text and f"justification sentinel {q}" not in text
        assert "secret_metric_xyz" not in text and "0.123" not in text
        assert "PASS" not in text.upper().replace("PASSAGE", "") and "notice" not in c
        assert "Restart your router" in text and c["title"] == f"question {q}"
        t = store_t.get(store, k(q))  # the digest covers exactly what is shown
        assert c["digest"] == labeling.digest(t["question"], json.dumps(t["retrieved"], sort_keys=True,
                                                                        ensure_ascii=False), t["answer"])
    assert ("n", "no_failure", None, "no failure: the answer is right") in transcripts.KEYS

    def label(q, action, n, value=None):
        return {"id": f"lbl-nf-{n:06d}", "by": "rita", "item": cards[k(q)]["item"], "digest": cards[k(q)]["digest"],
                "action": action, **({"value": value} if value else {})}

    acks = transcripts.submit(store, REVIEWER, [label("p1", "no_failure", 1), label("f1", "no_failure", 2),
                                                label("p2", "system_failure", 3, "incomplete")])
    assert [a.status for a in acks] == ["saved"] * 3
    assert sorted(store.read("SELECT query_id, verdict, failure_class FROM transcript_review_events")) == [
        ("f1", "no_failure", None), ("p1", "no_failure", None), ("p2", "system_failure", "incomplete")]
    # a label digested over the judge's words too (the card before blind review) is not what is on screen
    t = store_t.get(store, k("p1"))
    old = labeling.digest(t["question"], json.dumps(t["retrieved"], sort_keys=True, ensure_ascii=False), t["answer"],
                          t["judge_verdict"], t["judge_justification"])
    (ack,) = transcripts.submit(store, REVIEWER, [{**label("p1", "ambiguous", 4), "digest": old}])
    assert ack.status == "refused" and "not the transcript that was on screen" in ack.message
    # after the verdict: what the judge said, beside it
    mine = {r["item_id"]: r for r in transcripts.my_reviewed(store, REVIEWER)}
    assert {i: (r["verdict"], r["passed"], r["judge_verdict"], r["judge_justification"], r["against_judge"])
            for i, r in mine.items()} == {
        k("p1"): ("no_failure", True, "JUDGE-SAID-PASS-p1", "justification sentinel p1", False),
        k("f1"): ("no_failure", False, "JUDGE-SAID-FAIL-f1", "justification sentinel f1", True),
        k("p2"): ("system_failure", True, "JUDGE-SAID-PASS-p2", "justification sentinel p2", True)}
    # the judge check: p1 confirmed, p2 a false pass, f1 a false fail
    (row,) = transcripts.judge_check(store, ENGINEER)
    assert (row["passes_confirmed"], row["passes_overturned"], row["false_pass_rate"]) == (1, 1, 0.5)
    assert (row["failures_confirmed"], row["failures_overturned"], row["false_fail_rate"]) == (0, 1, 1.0)
    # the lead settles the two verdicts against the judge (the grader-failure path), not the one that agrees
    assert [q["item_id"] for q in transcripts.questioned(store, LEAD)] == [k("f1"), k("p2")]
    assert store_t.counts(store)["grader_failures"] == 2
    transcripts.resolve(store, LEAD, k("f1"), "judge_fixed", "the answer was right")
    assert [q["item_id"] for q in transcripts.questioned(store, LEAD)] == [k("p2")]
    # the service and its store both take the verdict; a class is never kept with it
    transcripts.review(store, REVIEWER, k("p1"), "no_failure", "incomplete")
    assert store.read_one("SELECT verdict, failure_class FROM transcript_review_events ORDER BY event_id DESC "
                          "LIMIT 1") == ("no_failure", None)
    with pytest.raises(ValidationError, match="no_failure"):
        transcripts.review(store, REVIEWER, k("p1"), "fine")
