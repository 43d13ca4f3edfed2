"""Webhooks (engineers, admins): the endpoints a pipeline registered, the delivery log, a test
event, and "retry now" for a failed delivery. Delivery itself runs in the serving process
(annotator.integration.background) or in `golden webhooks deliver`; this page only reads and queues."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator.events import webhooks
from annotator.people.roles import Permission
from app_pages._shared import clear_form, flash, form_key, md_escape, require_page, show_flash, store, succeeded

user = require_page(Permission.MANAGE_WEBHOOKS)
s = store()
st.title("Webhooks")
show_flash()
st.caption("Signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature); delivered at least "
           "once, retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, then marked failed.")

secret = st.session_state.pop("_webhook_secret", None)
if secret:
    st.success("Endpoint added. Its signing secret is shown this once: give it to the receiver now.")
    st.code(secret, language=None)

endpoints = webhooks.list_endpoints(s, user)
st.subheader("Endpoints", anchor=False)
if not endpoints:
    st.info("No endpoints yet: add one below, or from a shell with golden webhooks add URL.")
else:
    st.dataframe(pd.DataFrame([{"id": e.endpoint_id, "url": e.url, "events": ", ".join(e.event_types),
                                "description": e.description, "enabled": e.enabled, "added by": e.created_by,
                                "added": e.created_at} for e in endpoints]), hide_index=True, width="stretch")

with st.form(form_key("webhook_add")):
    st.subheader("Add an endpoint", anchor=False)
    url = st.text_input("URL (http:// or https://)",
                        help="A public address: loopback and private ones are refused unless the server's operator "
                             "sets GOLDEN_WEBHOOK_ALLOW_PRIVATE=1. A password or query values in the URL are sent, "
                             "and shown masked (***).")
    kinds = st.multiselect("Events (none: every event)", list(webhooks.EVENT_TYPES))
    description = st.text_input("Description")
    if st.form_submit_button("Add endpoint", type="primary"):
        made: list[str] = []
        if succeeded(lambda: made.append(webhooks.add_endpoint(s, user, url, kinds or None, description)[1])):
            st.session_state["_webhook_secret"] = made[0]
            clear_form("webhook_add")
            st.rerun()

live = [e for e in endpoints if e.enabled]
if live:
    c1, c2, c3 = st.columns([2, 1, 1])
    pick = str(c1.selectbox("Endpoint", [e.endpoint_id for e in live], key="wh_pick",
                            format_func=lambda i: f"{i} · {next(e.url for e in live if e.endpoint_id == i)}"))
    if c2.button("Send test event", key="wh_test"):
        queued: list[str] = []
        if succeeded(lambda: queued.append(webhooks.send_test(s, user, pick))):
            flash(f"Test event {queued[0]} queued for {pick}.")
            st.rerun()
    if c3.button("Disable", key="wh_disable") and succeeded(lambda: webhooks.disable_endpoint(s, user, pick)):
        flash(f"Endpoint {pick} disabled: nothing more is sent to it.")
        st.rerun()

st.subheader("Delivery log", anchor=False)
status = st.selectbox("Status", ["all", "pending", "delivered", "failed"], key="wh_status")
log = webhooks.deliveries(s, user, status=None if status == "all" else status, limit=200)
if not log:
    st.info("No deliveries yet." if status == "all" else f"No {status} deliveries.")
else:
    st.dataframe(pd.DataFrame([{"event": r["event_id"], "type": r["event_type"], "endpoint": r["endpoint_id"],
                                "status": r["status"], "attempts": r["attempts"],
                                "last code": r["last_status_code"], "last error": r["last_error"],
                                "last attempt": r["last_attempt_at"], "next attempt": r["next_attempt_at"]}
                               for r in log]), hide_index=True, width="stretch")
    failed = [r for r in log if r["status"] == "failed"]
    if failed:
        keys = [f"{r['event_id']} → {r['endpoint_id']}" for r in failed]
        c1, c2 = st.columns([3, 1])
        chosen = str(c1.selectbox("Failed delivery", keys, key="wh_failed"))
        if c2.button("Retry now", key="wh_retry"):
            event_id, endpoint_id = chosen.split(" → ")
            if succeeded(lambda: webhooks.retry(s, user, event_id, endpoint_id)):
                flash(f"Delivery of {event_id} to {endpoint_id} is due again.")
                st.rerun()

tries = webhooks.attempts(s, user, limit=50)
if tries:
    st.subheader("Latest attempts", anchor=False)
    st.dataframe(pd.DataFrame([{"when": a["created_at"], "event": a["event_id"], "endpoint": a["endpoint_id"],
                                "attempt": a["attempt"], "status code": a["status_code"], "error": a["error"],
                                "ms": round(a["duration_ms"] or 0)} for a in tries]), hide_index=True,
                 width="stretch")
st.caption(md_escape("Deliveries go out from the running server; on PostgreSQL without one, run "
                     "golden webhooks deliver --loop (or --once from cron)."))
