"""`golden webhooks` commands (issue 28): endpoints, the delivery log, and the dispatcher in
the foreground (``deliver``: for PostgreSQL teams without a serving process, or cron)."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from annotator.cli.common import _OnFirstUse, _print_json, _store, identity

webhooks = _OnFirstUse("annotator.events.webhooks")
delivery = _OnFirstUse("annotator.events.webhook_delivery")


def cmd_add(args: argparse.Namespace) -> int:
    ep, secret = webhooks.add_endpoint(_store(args), identity.cli_user(), args.url, args.event or None,
                                       args.description)
    if args.json:  # a pipeline that adds its own endpoint keeps the secret from stdout
        _print_json({**ep.__dict__, "enabled": ep.enabled, "secret": secret})
        return 0
    print(f"Webhook endpoint {ep.endpoint_id} added: {ep.url} ({', '.join(ep.event_types)}).")
    print(f"Signing secret (shown once; the receiver verifies webhook-signature with it): {secret}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    eps = webhooks.list_endpoints(_store(args), identity.cli_user())
    if args.json:
        _print_json([{**ep.__dict__, "enabled": ep.enabled} for ep in eps])
        return 0
    if not eps:
        print("No webhook endpoints; add one with golden webhooks add URL.")
    for ep in eps:
        state = "enabled" if ep.enabled else f"disabled {ep.disabled_at:%Y-%m-%d}"
        print(f"{ep.endpoint_id:<16} {state:<20} {','.join(ep.event_types):<40} {ep.url}")
    return 0


def cmd_disable(args: argparse.Namespace) -> int:
    ep = webhooks.disable_endpoint(_store(args), identity.cli_user(), args.endpoint_id)
    print(f"Webhook endpoint {ep.endpoint_id} disabled: nothing more is sent to {ep.url}.")
    return 0


def cmd_deliveries(args: argparse.Namespace) -> int:
    rows = webhooks.deliveries(_store(args), identity.cli_user(), endpoint_id=args.endpoint, status=args.status,
                               limit=args.limit)
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("No deliveries.")
    for r in rows:
        last = r["last_status_code"] if r["last_status_code"] is not None else (r["last_error"] or "-")
        nxt = f" next {r['next_attempt_at']:%Y-%m-%d %H:%M:%S}" if r["status"] == "pending" and r["next_attempt_at"] else ""
        print(f"{r['event_id']}  {r['event_type']:<22} {r['endpoint_id']:<16} {r['status']:<9} "
              f"attempts {r['attempts']}  last {last}{nxt}")
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    event_id = webhooks.send_test(_store(args), identity.cli_user(), args.endpoint_id)
    print(f"Test event {event_id} queued for {args.endpoint_id}; the running server delivers it, or "
          f"golden webhooks deliver --once.")
    return 0


def cmd_deliver(args: argparse.Namespace) -> int:
    store = _store(args)
    identity.require(identity.cli_user(), identity.Permission.MANAGE_WEBHOOKS)
    kwargs: dict[str, Any] = {"lease": args.lease, "timeout": args.timeout}
    if args.schedule is not None:
        try:
            kwargs["schedule"] = delivery.parse_schedule(args.schedule)
        except ValueError as exc:
            from golden_store.core.errors import ValidationError

            raise ValidationError(str(exc)) from None
    try:
        delivery.Dispatcher(store, **kwargs).close()  # a lease too short for the deadline: one sentence
    except ValueError as exc:
        from golden_store.core.errors import ValidationError

        raise ValidationError(f"--lease / --timeout: {exc}") from None
    if not args.loop:
        d = delivery.Dispatcher(store, **kwargs)
        try:
            out = d.run_once()
        finally:
            d.close()
        ok = sum(o.delivered for o in out)
        print(f"{len(out)} delivery attempt(s): {ok} delivered, {len(out) - ok} to retry or failed.")
        return 0
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    worker = delivery.Worker(store, poll=args.poll, **kwargs).start()
    print(f"Delivering webhooks from {store.location()} (Ctrl-C to stop).", flush=True)
    stop.wait()
    worker.stop()
    return 0


# ---- parsers ---------------------------------------------------------------------------------


def register(sub: Any, add: Any) -> None:
    """This group's parsers, beside its handlers (``add``: a command with the global options)."""
    from golden_store.core.standard_webhooks import EVENT_TYPES

    w = sub.add_parser("webhooks", help="webhook endpoints and their delivery log").add_subparsers(
        dest="webhooks_cmd", required=True, metavar="CMD")
    wa = add("add", cmd_add, "register an http(s) endpoint (public addresses only, unless "
                             "GOLDEN_WEBHOOK_ALLOW_PRIVATE=1); prints its signing secret once", w)
    wa.add_argument("url")
    wa.add_argument("--event", action="append", choices=EVENT_TYPES, help="an event to send (repeat; default: all)")
    wa.add_argument("--description")
    add("list", cmd_list, "list endpoints", w)
    wd = add("disable", cmd_disable, "stop sending to an endpoint", w)
    wd.add_argument("endpoint_id")
    wl = add("deliveries", cmd_deliveries, "the delivery log, newest first", w)
    wl.add_argument("--endpoint")
    wl.add_argument("--status", choices=["pending", "delivered", "failed"])
    wl.add_argument("--limit", type=int, default=50)
    wt = add("test", cmd_test, "queue a webhook.test event to one endpoint", w)
    wt.add_argument("endpoint_id")
    wv = add("deliver", cmd_deliver, "send due deliveries in the foreground (PostgreSQL without a server, cron)", w)
    mode = wv.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="one batch of what is due, then exit (the default)")
    mode.add_argument("--loop", action="store_true", help="keep delivering until stopped (SIGTERM / Ctrl-C)")
    wv.add_argument("--poll", type=float, default=1.0, help="seconds between polls (--loop)")
    wv.add_argument("--lease", type=float, default=60.0,
                    help="seconds a claimed delivery is left alone (more than twice --timeout); after a crash "
                         "it is retried after this")
    wv.add_argument("--timeout", type=float, default=15.0,
                    help="seconds one send may take in all (connect, request, the receiver's status and headers)")
    wv.add_argument("--schedule", help="retry delays in seconds, comma-separated (default: 5,300,1800,7200,"
                                       "18000,36000,36000)")
