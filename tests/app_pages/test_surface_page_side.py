"""The labeling surface's page side (AppTest, the Judge page): the page answers a batch with
that batch's acknowledgements only (a long session's answer stays small; a label whose answer
was lost comes again and is answered as a duplicate), and it gives the surface a label pass
for the direct channel exactly when this process serves one (issue 29 item 1)."""

from __future__ import annotations

import base64

import pytest

from annotator.labeling import judging, label_channel
from annotator.people import identity, sessions
from tests.app_pages.surface import cards, label_for, send, surface_data
from tests.app_pages.test_app_roles import app_as
from tests.app_pages.test_double_annotation_pages import team  # noqa: F401  (fixture)


def test_a_batch_is_answered_with_its_own_acknowledgements_only(team):
    at = app_as("ann")
    at.switch_page("app_pages/judge.py").run()
    sent = []
    for grade in (1, 2, 3):
        label = label_for(cards(at, "judge_surface")[0], "ann", "grade", grade)
        acks = send(at, "judge_surface", [label])
        assert list(acks) == [label["id"]] and acks[label["id"]]["status"] == "saved"
        sent.append(label)
    again = send(at, "judge_surface", [sent[0]])  # its answer was lost: the browser sends it again
    assert {k: v["status"] for k, v in again.items()} == {sent[0]["id"]: "duplicate"}
    assert judging.progress(team, identity.get_user(team, "ann"))[0] == 3


@pytest.fixture
def advertised():
    label_channel.advertise(8713)
    yield 8713
    label_channel.advertise(None)


def test_the_page_gives_a_pass_only_when_the_process_serves_the_channel(team, advertised):
    at = app_as("ann")
    at.switch_page("app_pages/judge.py").run()
    direct = surface_data(at, "judge_surface")["direct"]
    assert direct["port"] == advertised and direct["scope"] == "random" and direct["base"] is None
    claims = label_channel.open_pass(direct["pass"])
    assert (claims.user, claims.mode, claims.surface, claims.scope) == ("ann", "accounts", judging.SURFACE, "random")
    token = at.session_state["session_token"]
    assert claims.session == sessions.digest(token)  # the sign-in it stands for, by digest
    assert token not in direct["pass"] and token not in base64.urlsafe_b64decode(direct["pass"].split(".")[0] + "==").decode()
    label_channel.advertise(None)
    at.run()
    assert surface_data(at, "judge_surface")["direct"] is None  # no channel here: the page path
