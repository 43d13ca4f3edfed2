"""Where a webhook may be sent, and how its URL is shown (issue 37, probes W5 and W7).

**Addresses (W5).** An engineer who registers a webhook makes the server POST to it and reads
the answer's status code back in the delivery log; aimed at the server's own loopback
(``http://127.0.0.1:8621/api/v1/...``), its private network or a cloud metadata service
(``169.254.169.254``), that is a blind SSRF. So a webhook goes only to a public address unless
the server's operator sets ``GOLDEN_WEBHOOK_ALLOW_PRIVATE=1`` (read where deliveries run and
endpoints are added, at each check: no restart needed, and unsetting it stops private sends
at once). The classes come from the stdlib's ``ipaddress`` (:func:`address_class`): loopback,
private, link-local, site-local, unspecified (``0.0.0.0``, ``::``), multicast, reserved and
anything else not global (``100.64.0.0/10``); an IPv4 address inside IPv6 (``::ffff:127.0.0.1``, NAT64
``64:ff9b::/96``, 6to4) is judged by the IPv4 address it reaches.

It is checked twice:

- when the endpoint is added (:func:`check_destination`): an address in the URL, or every
  address its name resolves to now (``localhost``, ``2130706433``, a public name pointing at
  ``10.0.0.5``); a name that does not resolve yet is taken (the receiver may not be up), and
  left to the second check;
- at every send (``annotator.events.webhook_delivery``): the name is resolved once
  (:func:`resolve`), every address it gives is checked (:func:`refuse_blocked`), and the
  connection is made to a checked address, never by name again. So a name that later
  resolves to loopback (DNS rebinding: public when added, private when sent) is refused, and
  there is no window between the check and the connect for it to change in. The refusal is
  recorded as the delivery's failure, with no retry (it would be refused again).

Deliveries therefore connect straight to the receiver: ``HTTP_PROXY`` / ``HTTPS_PROXY`` are
not used (through a proxy the address checked would be the proxy's, not the receiver's).

**Credentials in a URL (W7): masked, not refused.** A receiver that takes only HTTP Basic auth
(``https://ci:pass@host/``) or a token in the query (``?token=``, as CI trigger URLs do) has no
other way to be reached: the studio sends no custom headers, and many receivers cannot check a
Standard Webhooks signature. Refusing such URLs would lock those receivers out, while the
risk the probe found is showing them. The store already keeps each endpoint's signing secret
in the clear (it signs with it), so a credential in a URL is held as safely as that secret;
what changes is that the URL leaves the service layer only masked (:func:`mask_url`): the
userinfo's password (or a lone userinfo, a token used as the user name), every query
value and the fragment become ``***``; the scheme, host, port, path, user name and query
keys stay, so a person can still tell endpoints apart. ``annotator.events.webhooks`` masks every URL
it returns (the CLI's list and ``--json``, the Webhooks page, the delivery log), refusal
messages mask the URL they quote, and a delivery's error text is scrubbed of those secrets
(:func:`scrub`). A secret in the *path* (``/hooks/T0/B0/XXXX``) is shown: put it in the
userinfo or the query to have it masked, or rely on the signing secret."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from urllib.parse import urlsplit, urlunsplit

from golden_store.core.errors import ValidationError

ALLOW_ENV = "GOLDEN_WEBHOOK_ALLOW_PRIVATE"
MASK = "***"
RESOLVE_AT_ADD_S = 5.0  # how long adding an endpoint waits for its name to resolve

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def allow_private() -> bool:
    """``GOLDEN_WEBHOOK_ALLOW_PRIVATE`` is ``1`` (or true / yes / on): webhooks may go to
    loopback, private and link-local addresses (a receiver on the same machine or network)."""
    return os.environ.get(ALLOW_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def address_class(ip: IPAddress) -> str | None:
    """None for a public address, else what it is ("loopback", "private", ...)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return address_class(ip.ipv4_mapped)
        if ip in _NAT64:  # a NAT64 gateway reaches the IPv4 address in its last 32 bits
            return address_class(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if ip.sixtofour is not None and (inner := address_class(ip.sixtofour)) is not None:
            return inner
    for test, name in (("is_unspecified", "unspecified"), ("is_loopback", "loopback"),
                       ("is_link_local", "link-local"), ("is_site_local", "site-local"), ("is_multicast", "multicast"),
                       ("is_reserved", "reserved"), ("is_private", "private")):
        if getattr(ip, test, False):  # is_site_local: IPv6's deprecated fec0::/10, which is_global lets through
            return name
    return None if ip.is_global else "non-public"


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _getaddrinfo(host: str, port: int) -> list:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)  # tests replace this (a resolver they steer)


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` stands for, in the resolver's order (one lookup; an address
    literal is itself). Raises ``OSError`` (``socket.gaierror``) when the name does not resolve."""
    ip = _literal(host)
    if ip is not None:
        return [ip]
    out: list[IPAddress] = []
    for *_, sockaddr in _getaddrinfo(host, port):
        addr = ipaddress.ip_address(sockaddr[0])
        if addr not in out:
            out.append(addr)
    return out


class AddressRefused(Exception):
    """A webhook's host is (or resolves to) an address webhooks may not go to."""


def refuse_blocked(host: str, addresses: list[IPAddress]) -> None:
    """Raise :class:`AddressRefused` when any of ``addresses`` is not public and private
    addresses are not allowed (all of them are checked: a name that gives a public and a
    loopback address is refused, whichever the connection would have used)."""
    if allow_private():
        return
    for ip in addresses:
        kind = address_class(ip)
        if kind is not None:
            what = f"{host.strip('[]')} is" if _literal(host) is not None else f"{host} resolves to"
            article = "an" if kind[0] in "aeiou" else "a"
            raise AddressRefused(f"{what} {article} {kind} address, and webhooks go only to public addresses unless "
                                 f"the server's operator sets {ALLOW_ENV}=1")


def _resolve_within(host: str, port: int, seconds: float) -> list[IPAddress] | None:
    """``resolve`` with a time limit; None when the name does not resolve (or not in time)."""
    got: list[list[IPAddress] | None] = [None]

    def run() -> None:
        try:
            got[0] = resolve(host, port)
        except (OSError, UnicodeError, ValueError):
            pass

    t = threading.Thread(target=run, name="webhook-resolve", daemon=True)
    t.start()
    t.join(seconds)
    return got[0]


def check_destination(url: str) -> None:
    """Refuse, when the endpoint is added, a URL whose host is (or now resolves to) an address
    webhooks may not go to (``ValidationError``, one sentence naming the address class and
    the setting that allows it). A name that does not resolve is taken: every send checks
    again (see the module's docstring)."""
    if allow_private():
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValidationError(f"Webhook URL {mask_url(url)!r}: its port is not a number from 0 to 65535.") from None
    addresses = _resolve_within(host, port, RESOLVE_AT_ADD_S)
    try:
        refuse_blocked(host, addresses or [])
    except AddressRefused as exc:
        raise ValidationError(f"Webhook URL {mask_url(url)!r}: {exc} (for a receiver on the studio's own machine "
                              f"or network).") from None


# ---- masking (W7) ------------------------------------------------------------------------------


def _secrets(url: str) -> list[str]:
    """The parts of ``url`` that are masked when it is shown, longest first."""
    parts = urlsplit(url)
    found: list[str] = []
    if "@" in parts.netloc:
        user, _, password = parts.netloc.rpartition("@")[0].partition(":")
        found.append(password if password else user)
    for item in parts.query.split("&") if parts.query else []:
        key, eq, value = item.partition("=")
        found.append(value if eq else key)
    if parts.fragment:
        found.append(parts.fragment)
    # a value of a few characters ("1", "prod") is no secret, and replacing it would garble the text
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def mask_url(url: str | None) -> str:
    """``url`` as shown to people and written to logs: the userinfo's password (a lone user
    name too: a token), every query value and the fragment become ``***``.
    ``http://ciuser:s3cr3tPASS@host/ok?token=abc123`` -> ``http://ciuser:***@host/ok?token=***``."""
    if not url:
        return url or ""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL we can take apart: show none of it
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{hostport}" if colon else f"{MASK}@{hostport}"
    query = "&".join(f"{k}={MASK}" if eq else MASK
                     for k, eq, _ in (item.partition("=") for item in parts.query.split("&"))) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))


def scrub(text: str | None, url: str) -> str | None:
    """``text`` (an error message) with ``url`` shown masked and its secrets replaced by ``***``."""
    if not text:
        return text
    text = text.replace(url, mask_url(url))
    for secret in _secrets(url):
        text = text.replace(secret, MASK)
    return text
