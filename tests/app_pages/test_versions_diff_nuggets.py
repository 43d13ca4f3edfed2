"""Issue 29, M12: Versions -> Diff shows the approved nuggets added, removed and changed between
two frozen versions (the text diff, and a table with whole texts and quotes)."""

from __future__ import annotations

from annotator import demo
from annotator.process import context
from annotator.people.identity import cli_user
from golden_store.freezing import freeze
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain
from tests.golden_store.test_nugget_diff import Q3_TWO, _change_nuggets, _first_nuggets


def test_the_diff_tab_lists_nugget_changes():
    store = context.get_store()
    demo.load_demo(store, cli_user())
    _first_nuggets(store)
    freeze(store, "a", actor="eng")
    _change_nuggets(store)
    freeze(store, "b", actor="eng")

    at = app_as(None).switch_page("app_pages/versions.py").run()
    assert not at.exception
    at.selectbox(key="v_diff_a").set_value("a")
    at.selectbox(key="v_diff_b").set_value("b")
    at.button(key="v_diff_btn").click().run()
    assert not at.exception
    text = next(c.value for c in at.code if "nuggets (approved)" in c.value)
    lines = text.splitlines()
    assert "nuggets (approved): +1 -1 ~1" in lines
    assert "  + q003 n4 [okay] 'It starts after probation' (quote: 'After probation')" in lines
    assert "  - q003 n3 [okay] 'Notice applies after probation'" in lines
    assert "  ~ q003 n2 importance: 'okay' -> 'vital'" in lines
    assert "Nuggets (approved): 3 change(s) from a to b." in [plain(c.value) for c in at.caption]
    table = next(d.value for d in at.dataframe if "change" in d.value.columns)
    assert [tuple(r) for r in table[["change", "query_id", "nugget_id", "importance"]].itertuples(index=False)] == [
        ("changed", "q003", "n2", "vital"), ("removed", "q003", "n3", "okay"), ("added", "q003", "n4", "okay")]
    assert table.loc[0, "quote"] == Q3_TWO and table.loc[0, "was"] == "importance: 'okay'"
