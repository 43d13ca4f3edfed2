"""The Claim review page in the real app (AppTest): a reviewer sees "n of N", reviews claims
through the labeling surface blind to the judge (nothing the surface is given holds the judge's
verdict, quote or justification, and the claim's HTML stays text), sees the judge's verdict
only once theirs is saved, undoes one (the claim comes back), and after the sample reads the
agreement with the judge; an annotator cannot open the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotator.people import identity
from annotator.process import context
from tests.annotator.test_claim_review import make_checks
from tests.app_pages.surface import cards, label_for, send, surface_data
from tests.app_pages.test_app_roles import APP, app_as, signed_in

pytestmark = pytest.mark.slow

PASSWORD = "0123456789"


def _judge_rows(at) -> list[dict]:
    frames = [d.value for d in at.dataframe if "judge" in list(d.value.columns)]
    return frames[0].to_dict("records") if frames else []


def test_blind_review_undo_and_the_agreement(demo_store, tmp_path):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "reviewer", ["reviewer"], password=PASSWORD)
    make_checks(store, tmp_path)

    rev = app_as("reviewer")
    rev.switch_page("app_pages/claims.py").run()
    assert not rev.exception and not rev.error
    rev.number_input(key="cr_n").set_value(4).run()
    assert rev.get("progress")[0].proto.text == "0 of 4 claims reviewed in this sample"
    shown = cards(rev, "claim_surface")
    assert len(shown) == 4
    sent = json.dumps(surface_data(rev, "claim_surface"))
    # blind: no verdict, quote or justification of the judge; the keys name the three verdicts
    assert "QUOTE-SENTINEL" not in sent and "why-sentinel" not in sent
    assert [k["key"] for k in surface_data(rev, "claim_surface")["keys"]] == ["1", "2", "3"]
    assert all("judge" not in json.dumps(c["item"]) for c in shown)
    # the claim's markup is handed over as text (the surface sets it with textContent)
    assert "<script>x</script>" in shown[0]["title"]
    assert _judge_rows(rev) == []  # nothing of the judge before a review

    first = label_for(shown[0], "reviewer", "contradicted")
    acks = send(rev, "claim_surface", [first])
    assert acks[first["id"]]["status"] == "saved"
    assert rev.get("progress")[0].proto.text == "1 of 4 claims reviewed in this sample"
    assert shown[0]["uid"] not in [c["uid"] for c in cards(rev, "claim_surface")]
    rows = _judge_rows(rev)
    assert len(rows) == 1 and rows[0]["you"] == "contradicted" and rows[0]["judge"] in (
        "supported", "contradicted", "insufficient")  # the judge's verdict, now that the review is in

    undo = label_for(shown[0], "reviewer", "undo", target=first["id"])
    assert send(rev, "claim_surface", [undo])[undo["id"]]["status"] == "saved"
    assert rev.get("progress")[0].proto.text == "0 of 4 claims reviewed in this sample"
    assert shown[0]["uid"] in [c["uid"] for c in cards(rev, "claim_surface")] and _judge_rows(rev) == []

    labels = [label_for(c, "reviewer", "supported") for c in cards(rev, "claim_surface")]
    acks = send(rev, "claim_surface", labels)
    assert {a["status"] for a in acks.values()} == {"saved"}
    assert cards(rev, "claim_surface") == []
    assert rev.get("progress")[0].proto.text == "4 of 4 claims reviewed in this sample"
    assert "Agreement with the judge" in [h.value for h in rev.subheader]
    metrics = {m.label: m.value for m in rev.metric}
    assert set(metrics) == {"Cohen's κ", "Raw agreement", "FAIL recall"}
    assert not rev.exception and not rev.error


def test_an_annotator_cannot_open_it(demo_store):
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD)
    at = AppTest.from_file(str(Path(APP).parent / "app_pages/claims.py"), default_timeout=60)
    signed_in(at, "ann").run()
    assert any("do not have access" in e.value for e in at.error)
    assert not at.get("bidi_component") and not at.dataframe
