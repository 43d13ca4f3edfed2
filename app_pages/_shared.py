"""UI helpers shared by the pages: the signed-in user, the store, errors, escaping.

Pages stay thin: they lay out widgets and call into ``annotator``; they never touch SQL.
"""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import streamlit as st

from annotator.people import identity, sessions
from annotator.process import context
from annotator.people.identity import User
from annotator.people.roles import Permission, PermissionDenied
from golden_store.core.errors import GoldenError, OptionRequiredError, ValidationError
from golden_store.db.store import Store

T = TypeVar("T")

# Every ASCII punctuation character: CommonMark lets a backslash escape each of them, and
# escaped they start no syntax at all, neither Markdown (emphasis, links, HTML, entities,
# lists, tables, headings) nor Streamlit's own: directives (:red[...], :small[...]),
# :material/icon: (rewritten before parsing), $math$. Not the autolinker (below).
_MD_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")
# Streamlit also rewrites the *parsed* text, where escapes are already gone: ``:name:``
# shortcodes (emoji, :streamlit:, :material_x: icons) and ``->``, ``--``, ``>=`` ... between
# spaces (arrows, dashes). No backslash reaches that far, so an invisible WORD JOINER
# (U+2060) goes inside each such sequence: it shows nothing and breaks the match.
_SHORTCODE = re.compile(r":(?=[\w+-]+:)")
_TYPOGRAPHIC = re.compile(r"(?:(?<=\s)|^)([<>~-])(?=(?:->|[->=])(?:\s|$))")
# The autolinker works on the parsed text, where no backslash reaches: a bare URL or e-mail
# address in a corpus document became a clickable link in front of annotators (probe I2, issue
# 37), and one running into markup was linked to ``https://x.org">anchor</a`` (issue 29, L6).
# A word joiner after the scheme (``https:``, ``www``) and before an address's ``@`` keeps
# each one text; copying from the app drops the joiners (:func:`clean_copy`), so a copied URL
# is still the URL.
_URL_INTO_MARKUP = re.compile(r"(?i)(https?:(?=//)|ftp:(?=//)|www(?=\.))")
_EMAIL_AT = re.compile(r"(?<=[\w.+-])@(?=[\w-]+\.)")
WORD_JOINER = "\u2060"


def md_escape(text: object) -> str:
    """Escape untrusted text (corpus, quotes, names from files and people) so that Streamlit's
    Markdown shows it literally: no formatting, link, HTML, colour, icon, emoji or math.

    The word joiners (U+2060) it puts in shortcodes, arrows and URLs inside markup are the
    only way to break Streamlit's rewrites of the parsed text (backslashes are gone by then);
    they show nothing, and copying from the app leaves them out (:func:`clean_copy`)."""
    s = _URL_INTO_MARKUP.sub(r"\1" + WORD_JOINER, str(text))
    s = _EMAIL_AT.sub(WORD_JOINER + "@", s)
    s = _SHORTCODE.sub(":" + WORD_JOINER, s)
    s = _TYPOGRAPHIC.sub(r"\1" + WORD_JOINER, s)
    return _MD_PUNCT.sub(r"\\\1", s)


_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^(\s*)(\d{1,9})[.)]\s+(.*)$")
_EMPHASIS = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__|\*(?=[^\s*])(.+?)(?<=[^\s*])\*"
                       r"|(?<![^\W_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![^\W_])")


def _inline(text: str) -> str:
    """One line of a person's Markdown: bold and italic kept, everything else escaped."""
    out, pos = [], 0
    for m in _EMPHASIS.finditer(text):
        out.append(md_escape(text[pos:m.start()]))
        strong = m.group(1) or m.group(2)
        out.append(f"**{md_escape(strong)}**" if strong is not None else f"*{md_escape(m.group(3) or m.group(4))}*")
        pos = m.end()
    out.append(md_escape(text[pos:]))
    return "".join(out)


def safe_markdown(text: str, heading_level: int = 4) -> str:
    """Markdown written by people (the rubric) rendered with its structure, nothing more:
    headings (set to ``heading_level`` and below, to fit a side panel), bullet and numbered
    lists, paragraphs, bold and italic. Every piece of text goes through :func:`md_escape`, so
    HTML, links, images, code, math, Streamlit colours and icons all stay literal text."""
    lines = []
    for raw in str(text).replace("\r\n", "\n").split("\n"):
        if m := _HEADING.match(raw):
            lines.append(f"{'#' * heading_level} {_inline(m.group(1))}")
        elif m := _BULLET.match(raw):
            lines.append(f"{' ' * (len(m.group(1).expandtabs()) // 2 * 2)}- {_inline(m.group(2))}")
        elif m := _NUMBERED.match(raw):
            lines.append(f"{' ' * (len(m.group(1).expandtabs()) // 3 * 3)}{m.group(2)}. {_inline(m.group(3))}")
        else:
            lines.append(_inline(raw.strip()))
    return "\n".join(lines)


def rubric_panel(rub: dict | None) -> None:
    """The rubric in force, rendered (escaped), in a scrolling box."""
    st.write(f"**Rubric v{rub['version']}**" if rub else "**No rubric yet**")
    if rub:
        with st.container(height=420):
            st.markdown(safe_markdown(rub["text"]))


def rubric_banner(user: User) -> None:
    """Once per rubric change: what changed (the changelog of every version this person has
    not seen), until they say "Got it". Shown in the sidebar of every page to people who label."""
    from annotator.labeling import judging

    news = judging.rubric_news(store(), user)
    if not news:
        return
    latest = news[-1]["version"]
    with st.container(border=True, key="rubric_banner"):
        lines = "\n".join(f"- **v{n['version']}** ({md_escape(n['actor'])}, {n['created_at']:%Y-%m-%d}): "
                          f"{md_escape(n['changelog'])}" for n in news)
        st.markdown(f":material/campaign: **The rubric changed: v{latest} is in force.** What changed:\n\n{lines}\n\n"
                    "Read it beside the items on the Judge page.")
        if st.button("Got it", key="rubric_seen", help="Hide this until the rubric changes again"):
            judging.acknowledge_rubric(store(), user, latest)
            st.rerun()


def store() -> Store:
    return context.get_store()


def oidc_configured() -> bool:
    """True when Streamlit's OIDC sign-in (``st.login``) has an ``[auth]`` section in secrets."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def oidc_signed_in() -> bool:
    return bool(st.user.get("is_logged_in", False))


def auth_mode() -> str:
    return identity.auth_mode(store(), oidc_configured=oidc_configured())


def client_address() -> str | None:
    """The peer address of this browser (None on this machine itself, or with no browser)."""
    ip = st.context.ip_address
    return ip if isinstance(ip, str) else None


def client_is_local() -> bool:
    """True when this request comes from the machine the app runs on (not via a proxy)."""
    try:
        headers = dict(st.context.headers)
    except Exception:  # no browser behind this run
        headers = {}
    return identity.is_loopback_client(client_address(), headers)


def current_user() -> User | None:
    """Who is making this request, re-derived on every run (never cached in the session),
    so a disabled account or a changed role takes effect at once, and a page reached
    without going through the app entry still knows who is asking. Single-user mode grants
    admin only to a browser on this machine: from anywhere else nobody is signed in."""
    mode = auth_mode()
    if mode == "local":
        return identity.LOCAL_USER if client_is_local() else None
    if mode == "oidc":
        if not oidc_signed_in():
            return None
        email = st.user.get("email")  # a claim: a string from any sane provider (st.user types every claim alike)
        return identity.user_for_oidc(store(), email if isinstance(email, str) else None,
                                      email_verified=st.user.get("email_verified"))
    token = st.session_state.get("session_token")
    if token is None:  # a refresh or a deep link: the browser's cookie finds the session again
        from app_pages.session_cookie import browser_token

        token = browser_token()
    user = sessions.user_for(store(), token)
    if user is None:  # signed out, expired, revoked, or the account was disabled
        st.session_state.pop("username", None)
        st.session_state.pop("session_token", None)
        return None
    st.session_state["username"] = user.username
    st.session_state["session_token"] = token
    return user


def label_pass(surface: str, scope: str, page: str) -> dict | None:
    """The direct label channel's details for a surface on this page (``port``, ``pass``,
    ``scope``), or None when this process serves no channel or nobody is signed in: the
    surface then sends its labels through Streamlit (annotator/labeling/label_channel.py)."""
    from annotator.labeling import label_channel

    port = label_channel.endpoint_port()
    user = current_user()
    if port is None or user is None or surface not in label_channel.SURFACES:
        return None
    mode = auth_mode()
    token = st.session_state.get("session_token") if mode == "accounts" else None
    if mode == "accounts" and not token:
        return None
    return {"port": port, "base": label_channel.endpoint_base(), "scope": scope,
            "pass": label_channel.issue(user, mode=mode, session=token, surface=surface, scope=scope, page=page)}


def sign_out() -> None:
    """End this browser's session on the server (the cookie is cleared on the next run)."""
    sessions.end(store(), st.session_state.pop("session_token", None))
    st.session_state.pop("username", None)


def require_page(perm: Permission, *alternatives: Permission) -> User:
    """Stop the page unless the signed-in user may ``perm`` (or one of ``alternatives``). The
    annotator layer checks again on every write; this only keeps a page from rendering
    controls it cannot use."""
    user = current_user()
    if user is None:
        st.warning("Sign in to use the studio.")
        st.stop()
    if not any(user.can(p) for p in (perm, *alternatives)):
        needs = " or ".join(p.value for p in (perm, *alternatives))
        st.error(f"You do not have access to this page (it needs permission to {needs}).")
        st.stop()
    return user


def show_error(exc: BaseException, options: dict[str, str] | None = None) -> None:
    """A GoldenError as a message. ``options`` maps a CLI switch an error asks for
    (OptionRequiredError.option, e.g. ``--replace``) to what to tick on this page instead."""
    if isinstance(exc, OptionRequiredError) and options and exc.option in options:
        st.error(md_escape(f"{exc.reason} {options[exc.option]}"))
        if exc.problems:
            st.code("\n".join(exc.problems), language=None, wrap_lines=True)
    elif isinstance(exc, ValidationError):
        st.error(md_escape(exc.summary))
        if exc.problems:
            st.code("\n".join(exc.problems), language=None, wrap_lines=True)
    elif isinstance(exc, PermissionDenied):
        st.error(md_escape(str(exc)))
    else:
        lines = str(exc).split("\n")
        st.error(md_escape(lines[0]))
        if len(lines) > 1:
            st.code("\n".join(lines[1:]), language=None, wrap_lines=True)


def attempt(fn: Callable[[], T], options: dict[str, str] | None = None) -> T | None:
    """Run a user action; show a GoldenError as a clear message instead of a traceback
    (``options``: see :func:`show_error`)."""
    start = _bars_open()
    try:
        return fn()
    except GoldenError as exc:
        _clear_bars_since(start)
        show_error(exc, options)
        return None


def succeeded(fn: Callable[[], object]) -> bool:
    """Run a user action that returns nothing; True if it worked, else the error is shown."""
    start = _bars_open()
    try:
        fn()
        return True
    except GoldenError as exc:
        _clear_bars_since(start)
        show_error(exc)
        return False


def marked(segments, style: str = "orange-background") -> str:
    """Markdown for (text, is_hit) segments: every piece escaped, hits highlighted, line
    breaks folded to spaces (the passage reads as one line)."""
    out = []
    for text, hit in segments:
        piece = md_escape(re.sub(r"\s+", " ", text))
        if hit and piece.strip():
            lead = " " if piece.startswith(" ") else ""
            trail = " " if piece.endswith(" ") else ""
            piece = f"{lead}:{style}[**{piece.strip()}**]{trail}"
        out.append(piece)
    return "".join(out)


def upload_limit(limit_mb: int) -> int:
    """A page's upload limit in MB, lowered by ``GOLDEN_MAX_UPLOAD_MB`` when that is set
    (a deployment with little memory; tests)."""
    import os

    try:
        cap = int(os.environ.get("GOLDEN_MAX_UPLOAD_MB", "0"))
    except ValueError:
        cap = 0
    return min(limit_mb, cap) if cap > 0 else limit_mb


@contextmanager
def as_file(data: bytes) -> Iterator[Path]:
    """An upload's bytes as a temporary file, for the importers that read paths (their
    errors name the upload by the ``name`` they are given, not this path)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "upload"
        path.write_bytes(data)
        yield path


def upload_bytes(up, limit_mb: int, cli: str | None = None) -> bytes | None:
    """The bytes of an uploaded file, or None with a clear error naming it: an empty file,
    or one over ``limit_mb`` (the uploader's own limit; the browser enforces it too, this is
    the check a script-driven upload cannot skip). ``cli``: the command for larger files."""
    limit_mb = upload_limit(limit_mb)
    data = up.getvalue()
    if not data:
        st.error(md_escape(f"{up.name} is empty (0 bytes): nothing was imported. Choose the file that holds the data."))
        return None
    if len(data) > limit_mb * 1024 * 1024:
        st.error(md_escape(f"{up.name} is {len(data) / 1024 / 1024:.1f} MB, over this page's {limit_mb} MB limit: "
                           "nothing was imported." + (f" Import it with the CLI: {cli}" if cli else "")))
        return None
    return data


ANSWERS_UPLOAD_MB = 50


def answers_import(user: User, key: str) -> None:
    """Upload a system's answers for nugget assignment (engineers and admins): JSONL, one
    ``{"query_id", "answer"}`` per line, all or nothing. Graders never see the system name."""

    from annotator.evidence import nuggets

    up = st.file_uploader('System answers: JSONL, one {"query_id", "answer"} per line', type=["jsonl", "json", "txt"],
                          key=f"{key}_file", max_upload_size=upload_limit(ANSWERS_UPLOAD_MB),
                          help='Optional "outcome": answered, abstained or refused (left out: unknown until a '
                               'reviewer marks it on the Nuggets page, Scores).')
    c1, c2 = st.columns(2)
    system = c1.text_input("System name (no spaces; graders never see it)", key=f"{key}_system")
    replace = c2.checkbox("Replace this system's answers", key=f"{key}_replace",
                          help="Support labels on answers that did not change are kept.")
    if st.button("Import answers", type="primary", key=f"{key}_go"):
        if up is None:
            st.error("Choose an answers file first.")
            return
        data = upload_bytes(up, ANSWERS_UPLOAD_MB, "golden answers import FILE --system NAME")
        if data is None:
            return
        with as_file(data) as path:
            n = attempt(lambda: nuggets.import_answers(store(), user, str(path), system.strip(), replace=replace,
                                                       name=up.name),
                        {"--replace": "Tick \u201cReplace this system's answers\u201d to replace them."})
        if n is not None:
            flash(f"Imported {n} answer(s) of {system.strip()}: they are ready to assign (Nuggets page, "
                  "Assign to answers).")
            st.rerun()


def broken_labels_notice(problems: list[str]) -> None:
    """List labels that a corpus change broke (freezing refuses until they are fixed)."""
    if problems:
        st.error(f"{len(problems)} label(s) no longer sit on the corpus; freezing is refused until they are "
                 f"fixed or retracted (Evidence page).")
        st.code("\n".join(problems), language=None, wrap_lines=True)


def form_key(name: str) -> str:
    """The key of the form ``name``: it changes after a successful submit
    (:func:`clear_form`), so the fields start empty for the next entry; after an error it
    stays, and the fields keep what was typed so it can be corrected."""
    return f"{name}__{st.session_state.get('_form_gen_' + name, 0)}"


def clear_form(name: str, keys: tuple[str, ...] = ()) -> None:
    """After a successful submit: the form ``name`` comes back empty on the next run
    (``keys``: its keyed widgets, which keep their values by key, are reset too)."""
    st.session_state["_form_gen_" + name] = st.session_state.get("_form_gen_" + name, 0) + 1
    for k in keys:
        st.session_state.pop(k, None)


def flash(message: str) -> None:
    """Show ``message`` as a success note after the next rerun (so counts on the page are
    recomputed after a change and the confirmation still shows). It is plain text: ids and
    names in it come from files and people, so it is escaped when shown."""
    st.session_state["_flash"] = message


def show_flash() -> None:
    msg = st.session_state.pop("_flash", None)
    if msg:
        st.success(md_escape(msg))


# Progress bars of the action now running, per script-run thread: a refused action clears
# its bars (a half-filled "Placing passages" stayed above the error after a bad file).
_bars = threading.local()


def _clear_bars_since(start: int) -> None:
    slots = getattr(_bars, "slots", [])
    for slot in slots[start:]:
        slot.empty()
    del slots[start:]


def _bars_open() -> int:
    if not hasattr(_bars, "slots"):
        _bars.slots = []
    return len(_bars.slots)


def progress_callback(label: str):
    slot = st.empty()
    _bars_open()
    _bars.slots.append(slot)
    bar = slot.progress(0.0, text=label)

    def update(done: int, total: int, *rest: object) -> None:
        note = f"{label}: {rest[0]}" if rest else label
        bar.progress(min(1.0, done / total) if total else 1.0, text=f"{note} ({done}/{total})")

    return update


PICK_LIMIT = 200  # options a picker sends to the browser at most


def searchable_picker(label: str, options: dict[str, str], *, key: str, noun: str = "question",
                      help: str | None = None) -> str:
    """A selectbox over ``options`` (id -> its label, in the order to offer them) that stays
    light at team scale (issue 19): with more than :data:`PICK_LIMIT` options, a search box
    above it narrows them (any part of the label, case insensitive) and only the first
    :data:`PICK_LIMIT` matches are sent to the browser. 20,000 options were ~0.5 s of every
    render in the browser. The value is the id, never a position, and the one picked stays
    among the options while the search changes, so a new search never moves what the page
    shows under the person. ``noun`` names what is picked ("question", "document")."""
    ids = list(options)
    if not ids:  # callers offer at least one; a selectbox over nothing would give None
        raise ValueError(f"{label}: no {noun} to pick from")
    if len(ids) <= PICK_LIMIT:
        return picked(st.selectbox(label, ids, format_func=options.__getitem__, key=key, help=help))
    needle = st.text_input(f"Find a {noun} (type part of its id or text, then Enter; {len(ids)} in all)",
                           key=f"{key}_find").strip().casefold()
    matches = [q for q in ids if needle in options[q].casefold()] if needle else ids
    offered = matches[:PICK_LIMIT]
    current = st.session_state.get(key)
    if current in options and current not in offered:
        offered = [current, *offered]
    if needle and not matches:
        st.caption(f"No {noun} matches that search; the one picked stays.")
    elif len(matches) > PICK_LIMIT:
        st.caption(f"The first {PICK_LIMIT} of {len(matches)} matching {noun}s are listed: search to narrow them.")
    return picked(st.selectbox(label, offered or ids[:1], format_func=options.__getitem__, key=key, help=help))


def picked(value: T | None) -> T:
    """A selectbox's value where it has options and no empty choice: streamlit types every
    selectbox's value as optional (``index=None`` makes it so), but such a one always has one."""
    if value is None:
        raise ValueError("a selectbox with options and a default came back empty")
    return value


# Copying from the app leaves out the word joiners md_escape puts in (issue 29, L6: a quote
# copied out of a snippet carried them). A document-level copy listener, installed once per
# browser tab by a tiny Components v2 element (nothing painted); it changes only what goes on
# the clipboard, never what is shown, so the escaping stays exactly as strict.
_CLEAN_COPY_JS = """
export default function () {
  if (window.__goldenCleanCopy) return;
  window.__goldenCleanCopy = true;
  document.addEventListener("copy", (event) => {
    const text = String(document.getSelection() || "");
    if (!text.includes("\\u2060") || !event.clipboardData) return;
    event.clipboardData.setData("text/plain", text.replaceAll("\\u2060", ""));
    event.preventDefault();
  }, true);
}
"""
_CLEAN_COPY = st.components.v2.component("golden_clean_copy", js=_CLEAN_COPY_JS)


def clean_copy() -> None:
    """Install the copy listener (:data:`_CLEAN_COPY_JS`) on this page."""
    _CLEAN_COPY(key="clean_copy", height=0)
