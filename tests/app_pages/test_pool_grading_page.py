"""The Judge the pool page in the real app (AppTest) against the local Messages API server: the
estimate is shown and nothing is sent before the lead confirms; a judge under the κ gate
needs a reason; the job runs and its counts show. (Who may open the page: test_app_roles;
the service's own role checks: tests/annotator/test_pool_grading.py.)"""

from __future__ import annotations


from annotator.people import identity
from annotator.process import context, jobs
from annotator.demo import load_demo
from tests.annotator.test_pool_grading import MODEL, _calibration, judge_server  # noqa: F401 (fixture)
from tests.app_pages.test_app_roles import app_as
from tests.conftest import plain
from tests.waiting import wait_until

PASSWORD = "0123456789"


def _accounts(*, pool_job: bool = False):
    """Accounts and the full demo; without its finished pool-grading job unless asked (these
    tests start the first job on the pool)."""
    store = context.get_store()
    admin = identity.create_user(store, None, "admin", ["admin"], password=PASSWORD)
    identity.create_user(store, admin, "lead", ["lead"], password=PASSWORD)
    identity.create_user(store, admin, "ann", ["annotator"], password=PASSWORD)
    load_demo(store, admin, workflows=True, pool_job=pool_job)
    return store


def test_the_demo_shows_the_cascade_at_work():
    """Issue 38 item 6: a newcomer opening this page on the demo sees a finished job, what it
    sent to people and the standing sample's κ (figures checked in tests/annotator/test_demo_cascade.py)."""
    store = _accounts(pool_job=True)
    at = app_as("lead")
    at.switch_page("app_pages/pool_grading.py").run()
    assert not at.exception
    (jobs_df,) = [df.value for df in at.dataframe if "job_id" in df.value]
    (job,) = jobs_df.to_dict("records")
    assert (job["job_id"], job["status"], job["judge_model"]) == ("j1", "done", "demo-judge-1")
    assert job["escalated"] > 0 and job["sampled"] > 0
    shown = {m.label: m.value for m in at.metric}
    assert shown["Sampled items graded by people"] == str(job["sampled"]) and shown["κ judge vs people"] != "–"
    assert store.read_one("SELECT count(*) FROM judge_label_events")[0] == job["answered"]


def _wait(at) -> None:
    th = jobs.get(at.session_state["pg_thread"])
    wait_until(lambda: th.status != "running", "the pool-grading job to end")
    assert th.status == "done", th.error


def test_estimate_confirm_run_and_the_sample(judge_server):  # noqa: F811
    store = _accounts()
    low = _calibration(store, kappa=0.5)
    good = _calibration(store)
    at = app_as("lead")
    at.switch_page("app_pages/pool_grading.py").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Pool items"] == "245"
    # below the gate: the confirm button stays disabled until a reason is given
    at.selectbox(key="pg_cal").select(low).run()
    at.number_input(key="pg_limit").set_value(8).run()
    at.button(key="pg_estimate").click().run()
    assert any("BELOW the gate" in c.value for c in at.code)
    assert at.button(key="pg_confirm").disabled
    assert not judge_server.requests
    at.selectbox(key="pg_cal").select(good).run()
    at.button(key="pg_estimate").click().run()
    shown = "\n".join(c.value for c in at.code)
    assert "Pool grading: 8 call(s) to " + MODEL in shown and "Caching applies" in shown and "cascade $" in shown
    assert not at.button(key="pg_confirm").disabled and "Confirm: spend ≈ $" in at.button(key="pg_confirm").label
    assert not judge_server.requests  # an estimate sends nothing
    at.button(key="pg_confirm").click().run()
    assert not at.exception
    _wait(at)
    at.run()
    assert any("Job j1: done. Sent 8" in plain(s.value) for s in at.success)
    failed = store.read_one("SELECT count(*) FROM judge_item_state WHERE outcome = 'error'")[0]
    assert {m.label: m.value for m in at.metric}["Not yet judged"] == str(204 - 8 + failed)  # a failure is retried
    assert len([r for r in judge_server.requests if r["path"].endswith("/v1/messages")]) == 8
    assert any(df.value["job_id"].tolist() == ["j1"] for df in at.dataframe if "job_id" in df.value)

