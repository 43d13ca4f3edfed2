"""An evidence round in the real app (AppTest): the lead starts it on the Agreement page, two
annotators quote on the Evidence page blind to each other (one says "no answer"), and the
lead settles the disagreement on the Adjudication page."""

from __future__ import annotations

from datetime import date

from annotator import demo
from annotator.people import identity
from annotator.process import context
from golden_store.live import queries
from tests.conftest import plain
from tests.app_pages.test_app_roles import _everything_rendered, app_as

PASSWORD = "0123456789"
VPN = "VPN-ERR-0417 means the device certificate on your laptop has expired"


def _quote(at, text):
    at.text_area(key="ev_quote").input(text)
    at.button(key="ev_resolve").click().run()
    at.button(key="ev_save").click().run()
    assert not at.exception


def test_evidence_round_in_the_app():
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    for name in ("ann", "bob"):
        identity.create_user(store, admin, name, ["annotator"], password=PASSWORD)
    demo.load_demo(store, admin)
    queries.save_query(store, queries.QueryRecord("e1", "What does VPN error 0417 mean?", "paraphrase", True,
                                                  "expert", date(2026, 3, 1)), actor="t", must_exist=False)
    lead = app_as("lead")
    lead.switch_page("app_pages/agreement.py").run()
    lead.multiselect(key="ev_people").set_value(["ann", "bob"])
    lead.number_input(key="ev_n").set_value(1)
    form_buttons = [b for b in lead.button if b.label == "Start evidence round"]
    form_buttons[0].click().run()
    assert any("Evidence round r1 started" in plain(m.value) for m in lead.success)

    ann = app_as("ann")
    ann.switch_page("app_pages/evidence.py").run()
    assert ann.selectbox(key="ev_query").value == "e1"  # the round's question comes first
    assert any("Evidence round" in i.value for i in ann.info)
    _quote(ann, VPN)
    assert any("Saved quote" in plain(m.value) for m in ann.success)

    bob = app_as("bob")
    bob.switch_page("app_pages/evidence.py").run()
    assert bob.selectbox(key="ev_query").value == "e1"
    assert VPN not in _everything_rendered(bob)  # ann's quote is not shown to bob
    bob.button(key="ev_no_answer").click().run()
    bob.button(key="ev_no_answer_confirm").click().run()
    assert any("your \"no answer\" is recorded" in plain(m.value) for m in bob.success)

    adj = app_as("lead")
    adj.switch_page("app_pages/adjudication.py").run()
    assert any("DISAGREE" in e.label and "e1" in plain(e.label) for e in adj.expander)
    adj.radio(key="ev_dec_e1").set_value("keep:ann")
    adj.text_input(key="ev_why_e1").input("the error code is explained in the VPN guide")
    adj.button(key="ev_settle_e1").click().run()
    assert any("Settled e1 (keep:ann)" in plain(m.value) for m in adj.success)
    bob.run()
    bob.selectbox(key="ev_query").set_value("e1").run()
    assert VPN in _everything_rendered(bob)  # settled: the kept quote is everyone's now
