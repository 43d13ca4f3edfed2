"""The rubric banner tells real changes only (issue 29, L2): a brand-new account is not told
"The rubric changed: v1 is in force"; changes written after it joined are news to it until
it says "Got it", whoever wrote them but itself."""

from __future__ import annotations

from annotator.labeling import judging
from annotator.people import identity

PASSWORD = "0123456789"


def test_a_new_account_gets_only_changes_made_after_it_joined(store):
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    lead = identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    first = judging.rubric(store, lead)
    text = first["text"] if first else "Grade 0-3."
    v2 = judging.edit_rubric(store, lead, text + "\nRule two.", "rule two")
    ann = identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD)
    assert judging.rubric_news(store, ann) == []  # v1 and v2 were in force when ann joined
    v3 = judging.edit_rubric(store, lead, text + "\nRule two.\nRule three.", "rule three")
    assert [n["version"] for n in judging.rubric_news(store, ann)] == [v3] and v3 == v2 + 1
    judging.acknowledge_rubric(store, ann, v3)
    assert judging.rubric_news(store, ann) == []
    v4 = judging.edit_rubric(store, lead, text + "\nRule four.", "rule four")
    assert [n["changelog"] for n in judging.rubric_news(store, ann)] == ["rule four"] and v4 == v3 + 1
    assert judging.rubric_news(store, lead) == []  # its author


def test_without_accounts_every_change_after_the_first_rubric_is_news(store):
    """Single-user local mode has no account row to date a joining by: the local admin is told
    of every version after the first (never "v1 is in force"), until "Got it"."""
    local = identity.LOCAL_USER
    first = judging.rubric(store, local)
    text = first["text"] if first else "Grade 0-3."
    if first is None:
        judging.edit_rubric(store, local, text, "first")
    assert judging.rubric_news(store, local) == []
    from golden_store.live import rubric as rubric_store

    v2 = rubric_store.add_rubric_version(store, text + "\nRule two.", "rule two", actor="demo-lena")
    assert [n["version"] for n in judging.rubric_news(store, local)] == [v2]
    judging.acknowledge_rubric(store, local, v2)
    assert judging.rubric_news(store, local) == []
