"""The double-annotation flow in the real app (AppTest): a lead starts a calibration round on
the Agreement page, two annotators grade blind on the Judge page, the lead sees κ, decides
both disagreements on the Adjudication page (one with a rubric clarification) and κ, the
queue and the rubric follow."""

from __future__ import annotations

import re

import pytest
from sklearn.metrics import cohen_kappa_score

from annotator import demo
from annotator.evaluation import runs_import
from annotator.people import identity
from annotator.process import context
from tests.app_pages.surface import cards, label_for, send, surface_data
from tests.app_pages.test_app_roles import _everything_rendered, app_as

PASSWORD = "0123456789"


@pytest.fixture
def team(tmp_path):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    for name in ("ann", "bob"):
        identity.create_user(store, admin, name, ["annotator"], password=PASSWORD)
    demo.load_demo(store, admin)
    run = tmp_path / "run.txt"
    docs = ["vpn-troubleshooting", "pension", "sick-leave", "expenses-per-diem", "parental-leave"]
    run.write_text("".join(f"q00{q} Q0 {d} {i + 1} {5 - i} x\n" for q in (1, 2) for i, d in enumerate(docs)))
    runs_import.import_run(store, admin, run, "sys-hidden")
    runs_import.build_pool(store, admin, 5)
    return store


def _grade_all(username: str, grade_for) -> list[tuple]:
    """Grade the user's whole queue on the Judge page, one label a send as keys would;
    returns what was shown (each card's meta line), in order."""
    at = app_as(username)
    at.switch_page("app_pages/judge.py").run()
    shown = []
    while items := cards(at, "judge_surface"):
        cap = items[0]["meta"]
        shown.append(cap)
        label = label_for(items[0], username, "grade", grade_for(cap, len(shown)), note=f"{username.upper()}-NOTE")
        assert send(at, "judge_surface", [label])[label["id"]]["status"] == "saved"
    return shown


def test_calibration_round_blind_grading_agreement_and_adjudication(team):
    lead = app_as("lead")
    lead.switch_page("app_pages/agreement.py").run()
    assert not lead.exception
    assert any("No item has been graded by two annotators" in i.value for i in lead.info)
    lead.multiselect(key="cal_people").set_value(["ann", "bob"])
    lead.number_input(key="cal_n").set_value(5)
    next(b for b in lead.button if b.label == "Start calibration round").click().run()
    assert not lead.exception
    assert team.read_one("SELECT count(*), count(DISTINCT annotator) FROM round_assignments") == (10, 2)

    ann_seen = _grade_all("ann", lambda cap, k: 3)
    assert len(ann_seen) == 10  # the 5 round items first, then the 5 pool items no round assigned
    # bob is blind to ann: nothing of hers on any page he can open
    bob = app_as("bob")
    for page in ("home", "corpus", "queries", "evidence", "judge"):
        bob.switch_page(f"app_pages/{page}.py").run()
        assert not bob.exception
        rendered = _everything_rendered(bob)
        assert "ANN-NOTE" not in rendered and "sys-hidden" not in rendered, page
    bob_items = set(team.read("SELECT query_id, doc_id, start, \"end\" FROM round_assignments WHERE annotator = 'bob'"))
    # bob: disagree (grade 0) on the first two round items he sees, agree on the rest
    disagree = []

    def bob_grade(cap, k):
        m = re.match(r"^(q\d+) · passage from (\S+) \[(\d+):(\d+)\]", cap)
        item = (m.group(1), m.group(2).replace("\\", ""), int(m.group(3)), int(m.group(4)))
        if item in bob_items and len(disagree) < 2:
            disagree.append(item)
            return 0
        return 3

    _grade_all("bob", bob_grade)
    assert len(disagree) == 2

    home = app_as("lead")
    assert any("2 disagreement(s) waiting for a lead" in c.value for c in home.caption)
    lead.run()
    assert not lead.exception
    kappas = {m.label: m.value for m in lead.metric}
    expected = cohen_kappa_score([1] * 5, [0, 0, 1, 1, 1])  # binary: ann all >= 2, bob two zeros
    assert float(kappas["κ binary (grade ≥ 2)"]) == pytest.approx(expected, abs=1e-3)
    assert "ANN-NOTE" not in _everything_rendered(lead)  # notes are for the adjudication page

    adj = app_as("lead")
    adj.switch_page("app_pages/adjudication.py").run()
    assert not adj.exception
    items = cards(adj, "adjudication_surface")
    assert len(items) == 2
    labels_text = "\n".join(seg[0] for c in items for b in c["blocks"] for seg in b["segments"])
    assert "ann: " in labels_text and "bob: " in labels_text and "ANN-NOTE" in labels_text  # the lead sees notes
    # no rationale: refused, nothing written
    first = items[0]
    ack = next(iter(send(adj, "adjudication_surface", [label_for(first, "lead", "adjudicate", 2)]).values()))
    assert ack["status"] == "refused" and "rationale" in ack["message"]
    assert team.read_one("SELECT count(*) FROM grade_events WHERE op = 'adjudicate'")[0] == 0
    decide = label_for(first, "lead", "adjudicate", 2, note="Names the form but not the deadline: partial.")
    decide["fields"] = {"clarification": "Naming the right form without the deadline is a 2."}
    assert send(adj, "adjudication_surface", [decide])[decide["id"]]["status"] == "saved"
    assert any("Rubric v2" in m.value for m in adj.markdown)
    rest = cards(adj, "adjudication_surface")
    assert [c["item"] for c in rest] == [items[1]["item"]]
    last = label_for(rest[0], "lead", "adjudicate", 0, note="Unrelated policy.")
    assert send(adj, "adjudication_surface", [last])[last["id"]]["status"] == "saved"
    assert cards(adj, "adjudication_surface") == []
    assert surface_data(adj, "adjudication_surface")["empty"] == "No disagreement waiting."
    rub = team.read_one("SELECT version, text FROM rubric_versions ORDER BY version DESC LIMIT 1")
    assert rub[0] == 2 and "Naming the right form without the deadline is a 2." in rub[1]
    assert team.read("SELECT grade, note FROM grade_events WHERE op = 'adjudicate' ORDER BY event_id") == [
        (2, "Names the form but not the deadline: partial."), (0, "Unrelated policy.")]
    # κ stays a property of the annotators' labels; the drift table now has adjudicated gold
    lead.run()
    drift = next(d.value for d in lead.dataframe if "n_adjudicated" in d.value.columns).set_index("annotator")
    assert drift.loc["bob", "n_adjudicated"] == 2
