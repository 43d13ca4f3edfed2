"""The deterministic checks of systems' answers (METHODOLOGY §10.7) on a real store (DuckDB, and
PostgreSQL on that pass) through the service and through `golden answers checks` in-process:
a system with an answer of zero-width characters only, one over the cap, a leaked <context>
tag and a made-up citation fails the gate with one sentence per failed check; the demo's
systems pass; a baseline flags a candidate whose answers doubled in length on six questions
(KS p = 2/924) and not one that grew by 10%; refusal and abstention rates per stratum come from
the outcome marks with unmarked answers apart; a bad regex is one sentence naming it, exit 2,
and the store is exactly as it was."""

from __future__ import annotations

import json

import pytest

from annotator.cli import main
from annotator.evaluation import answer_checks
from annotator.evidence import nuggets
from annotator.people.identity import LOCAL_USER
from golden_store.core.errors import NotFoundError, ValidationError
from tests.conftest import table_snapshot

SIX = ["q001", "q002", "q003", "q004", "q006", "q007"]  # answerable questions of six strata in the demo


def golden(golden_db, capsys, *argv):
    code = main(["--db", golden_db, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _import(store, tmp_path, system, rows):
    path = tmp_path / f"{system}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    nuggets.import_answers(store, LOCAL_USER, str(path), system)


def _words(n):
    return " ".join(["word"] * n)


CLEAN = [{"query_id": "q001", "answer": "Your device certificate has expired; renew it in Company Portal."},
         {"query_id": "q002", "answer": "Tell your line manager on the first morning."},
         {"query_id": "q004", "answer": "EUR 58 for a full day in Berlin."},
         {"query_id": "q005", "answer": "The documents do not say.", "outcome": "abstained"},
         {"query_id": "q006", "answer": "From 1 March."},
         {"query_id": "q007", "answer": "EUR 40 per night of standby."}]


@pytest.fixture
def clean(demo_store, tmp_path):
    """System ``clean``: six plain answers (the demo store: its corpus and 40 questions)."""
    _import(demo_store, tmp_path, "clean", CLEAN)
    return demo_store


@pytest.fixture
def broken(clean, tmp_path):
    """System ``broken``: q001 zero-width only, q002 over a 50-character cap, q003 a leaked
    <context> tag, q004 a made-up citation, q005 (negative) and q006 fine; outcomes marked on
    some."""
    _import(clean, tmp_path, "broken", [
        {"query_id": "q001", "answer": "\u200b\u200b", "outcome": "answered"},
        {"query_id": "q002", "answer": "x" * 51, "outcome": "refused"},
        {"query_id": "q003", "answer": "Per <context>, both documents apply."},
        {"query_id": "q004", "answer": "EUR 58.", "citations": [{"doc_id": "no-such-doc", "start": 0, "end": 5}]},
        {"query_id": "q005", "answer": "The documents do not say.", "outcome": "abstained"},
        {"query_id": "q006", "answer": "From 1 March."},
    ])
    nuggets.mark_outcome(clean, LOCAL_USER, "broken", "q006", "refused")
    return clean


def test_a_broken_system_fails_with_one_sentence_per_check(broken):
    rep = answer_checks.checks(broken, LOCAL_USER, "broken", max_chars=50)
    r = rep.per_system["broken"]
    assert rep.gate == "FAIL" and list(rep.per_system) == ["broken"]
    assert (r.answers, r.structure.empty, r.structure.over_cap) == (6, ["q001"], ["q002"])
    assert r.questions_without_answer == 40 - 6
    assert rep.failures == [
        "broken: 1 of 1 citation(s) do not resolve to a real span of the corpus (first: q004 citation 1, no "
        "document 'no-such-doc' in the corpus).",
        "broken: 1 empty answer(s) (q001).",
        "broken: 1 answer(s) over the 50-character cap (q002).",
        "broken: forbidden pattern(s) found - 'context tag' in 1 answer(s) (q003).",
    ]
    # words: q001 0, q002 1, q003 5, q004 2, q005 5, q006 3 -> sorted 0 1 2 3 5 5: median 2.5, p90 at 4.5 -> 5
    assert (r.lengths.words_median, r.lengths.words_p90) == (2.5, 5.0)
    strata = {s.stratum: s for s in r.strata}
    # q001 lexical answered; q002 paraphrase refused (imported); q006 temporal refused (marked); q005 negative
    # abstained; q003 multi_hop and q004 tabular unmarked
    assert (strata["paraphrase"].refusal_rate, strata["temporal"].refusal_rate) == (1.0, 1.0)
    assert (strata["lexical"].refusal_rate, strata["negative"].abstention_rate) == (0.0, 1.0)
    assert (strata["tabular"].marked, strata["tabular"].unmarked, strata["tabular"].refusal_rate) == (0, 1, None)
    d = rep.as_dict()
    assert d["per_system"]["broken"]["over_cap"] == {"count": 1, "max_chars": 50, "query_ids": ["q002"]}
    assert d["per_system"]["broken"]["citations"]["invalid"] == 1 and d["gate"] == "FAIL"
    # at the default cap of 4,000 characters q002 is fine
    assert "over the" not in " ".join(answer_checks.checks(broken, LOCAL_USER, "broken").failures)


def test_a_clean_system_passes_and_a_lead_pattern_fails_it(clean):
    rep = answer_checks.checks(clean, LOCAL_USER)
    assert rep.gate == "PASS" and list(rep.per_system) == ["clean"] and rep.failures == []
    rep = answer_checks.checks(clean, LOCAL_USER, forbid=["eur \\d+"])
    assert rep.failures == ["clean: forbidden pattern(s) found - 'eur \\\\d+' in 2 answer(s) (q004, q007)."]


def test_a_baseline_flags_a_doubled_length_and_not_a_small_growth(demo_store, tmp_path):
    _import(demo_store, tmp_path, "base", [{"query_id": q, "answer": _words(10)} for q in SIX])
    _import(demo_store, tmp_path, "verbose", [{"query_id": q, "answer": _words(20)} for q in SIX])
    _import(demo_store, tmp_path, "bit-longer", [{"query_id": q, "answer": _words(11)} for q in SIX])
    _import(demo_store, tmp_path, "two", [{"query_id": q, "answer": _words(40)} for q in SIX[:2]])
    rep = answer_checks.checks(demo_store, LOCAL_USER, baseline="base")
    shifts = {s.candidate: s for s in rep.shifts}
    assert set(shifts) == {"bit-longer", "two", "verbose"}
    v = shifts["verbose"]
    assert v.flagged and v.questions == 6 and abs(v.p_value - 2 / 924) < 1e-15 and v.median_change == 1.0
    assert not shifts["bit-longer"].flagged and shifts["bit-longer"].p_value < 0.01
    # two questions both answered, each 4x as long: D = 1 but p = 2 / C(4, 2) = 1/3: not enough to say anything
    assert not shifts["two"].flagged and shifts["two"].questions == 2 and abs(shifts["two"].p_value - 1 / 3) < 1e-12
    assert rep.failures == ["verbose: answer length shifted against base (KS D = 1.000, p = 0.00216 (< 0.01); "
                            "median 10 -> 20 words (+100%, >= 25%) over 6 question(s))."]
    one = answer_checks.checks(demo_store, LOCAL_USER, "bit-longer", baseline="base")
    assert list(one.per_system) == ["bit-longer"] and one.gate == "PASS"


def test_unknown_systems_and_a_self_baseline_are_refused(broken):
    with pytest.raises(NotFoundError, match=r"No answers of system 'nope' \(--system\); systems with answers: "
                                            r"broken, clean"):
        answer_checks.checks(broken, LOCAL_USER, "nope")
    with pytest.raises(NotFoundError, match=r"\(--baseline\)"):
        answer_checks.checks(broken, LOCAL_USER, baseline="nope")
    with pytest.raises(ValidationError, match="The baseline is the system itself"):
        answer_checks.checks(broken, LOCAL_USER, "clean", baseline="clean")


def test_no_answers_is_an_empty_pass(store):
    rep = answer_checks.checks(store, LOCAL_USER)
    assert rep.per_system == {} and rep.gate == "PASS"


# ---- the CLI --------------------------------------------------------------------------------------


def test_cli_exit_codes_text_and_json(broken, golden_db, capsys):
    code, out, _ = golden(golden_db, capsys, "answers", "checks", "--system", "clean")
    assert code == 0 and "clean: PASS - 6 answer(s)" in out and "Gate: PASS" in out
    code, out, _ = golden(golden_db, capsys, "answers", "checks", "--system", "broken", "--max-chars", "50")
    assert code == 1 and "Gate: FAIL" in out
    assert "  - broken: 1 empty answer(s) (q001)." in out and "  empty: q001" in out
    assert "stratum paraphrase: 1 answer(s), 1 marked (0 unmarked, counted apart): refusal 1/1 = 1.00" in out
    code, out, _ = golden(golden_db, capsys, "--json", "answers", "checks", "--baseline", "clean",
                          "--forbid", "as an ai", "--forbid", "per diem", "--max-chars", "50")
    got = json.loads(out)
    assert code == 1 and got == json.loads(json.dumps(answer_checks.checks(
        broken, LOCAL_USER, baseline="clean", forbid=["as an ai", "per diem"], max_chars=50).as_dict()))
    assert [p["name"] for p in got["forbidden_patterns"]][-2:] == ["as an ai", "per diem"]
    assert [s["candidate"] for s in got["length_shift"]] == ["broken"] and list(got["per_system"]) == ["broken", "clean"]


def test_cli_bad_regex_or_system_is_one_sentence_exit_2_and_changes_nothing(broken, golden_db, capsys):
    before = table_snapshot(broken)
    code, out, err = golden(golden_db, capsys, "answers", "checks", "--forbid", "fine", "(unclosed")
    assert code == 2 and out == ""
    assert err.startswith("golden: The forbidden pattern '(unclosed' is not a valid regular expression")
    code, _, err = golden(golden_db, capsys, "answers", "checks", "--system", "nope")
    assert code == 2 and "No answers of system 'nope'" in err
    code, _, err = golden(golden_db, capsys, "answers", "checks", "--max-chars", "0")
    assert code == 2 and "at least 1 character" in err
    assert table_snapshot(broken) == before


def test_through_a_running_studio_it_needs_view_results():
    """`golden --server URL answers checks` and a CLI run through the studio ask for the same
    permission as GET /answers/checks (an admin's would be the default for a command not listed)."""
    from annotator.cli import channel
    from annotator.people.roles import Permission

    assert channel.permission_for("answers checks") == Permission.VIEW_RESULTS
