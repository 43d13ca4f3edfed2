"""The app: decides who is signed in, then routes with st.navigation to the pages that
person's roles allow. Started by `golden serve` / `make run` (app_pages/streamlit_app.py)
or `streamlit run app.py`.

Every page re-checks the user's permission itself (app_pages/_shared.require_page), and the
annotator layer checks again on every write: the navigation list is a convenience."""


from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from annotator.process import context
from annotator.people.roles import ROLE_PERMISSIONS, Permission
from golden_store.core.errors import GoldenError
from annotator.people.identity import LOOPBACK_ONLY, User
from app_pages._shared import (auth_mode, clean_copy, client_is_local, current_user, md_escape, oidc_signed_in,
                               rubric_banner, sign_out)
from app_pages.session_cookie import sync_cookie
from app_pages import warm

PAGES = Path(__file__).resolve().parent


def main() -> None:
    with warm.page_running():  # the background warm-up waits while a page renders
        _main()


def _main() -> None:
    st.set_page_config(page_title="Golden-set studio", page_icon=":material/verified:", layout="wide")

    try:
        store = context.get_store()
    except GoldenError as exc:
        message = str(exc)

        def store_unavailable() -> None:
            st.error(message)

        # Still route through st.navigation, so no page can be reached without a store.
        st.navigation([st.Page(store_unavailable, title="Store unavailable")]).run()
        st.stop()
    warm.start(store)  # once per process: heavy imports and cached figures while the sign-in page waits

    mode = auth_mode()
    if mode == "local" and not client_is_local():
        # single-user mode grants admin to whoever asks: never to another machine
        def local_only() -> None:
            st.error(LOOPBACK_ONLY)

        st.navigation([st.Page(local_only, title="Local only")]).run()
        st.stop()
    user = current_user()
    if mode == "oidc" and oidc_signed_in() and user is None:
        email = md_escape(st.user.get("email") or "(no email address)")
        if st.user.get("email_verified") in (False, "false", "False"):
            st.error(f"Your identity provider has not verified the address {email}, so it cannot open an "
                     "account here. Verify it with your provider, then sign in again.")
        else:
            st.error(f"You are signed in as {email}, but this studio has no account for that address. "
                     "Ask an admin to add it on the Users page.")
        st.button("Sign out", on_click=st.logout)
        st.stop()

    pages: list[StreamlitPage] | dict[str, list[StreamlitPage]]
    if user is None:
        # The sign-in page answers at the address asked for: after signing in, the same
        # address opens that page (or Home).
        pages = [st.Page(PAGES / "sign_in.py", title="Sign in", icon=":material/login:",
                         url_path="home", default=True)]
        asked = _asked_page()
        if asked:
            pages.append(st.Page(PAGES / "sign_in.py", title="Sign in", icon=":material/login:", url_path=asked))
    else:
        sections = page_sections(user)
        by_section = {section: [st.Page(PAGES / file, title=title, icon=icon,
                                        url_path="home" if file == "home.py" else None, default=file == "home.py")
                                for file, title, icon in entries]
                      for section, entries in sections.items()}
        pages = by_section
        asked = _asked_page()
        allowed = {Path(file).stem for entries in sections.values() for file, _t, _i in entries}
        if asked and asked not in allowed and roles_for(asked):
            # a deep link past this person's roles: a hidden page says which roles it needs
            by_section[""].append(forbidden_page(user, asked))

    with st.sidebar:
        if user is not None and user.can(Permission.LABEL):
            # once per rubric change, on whichever page opens; in the sidebar, so no page's own
            # layout moves under the person's mouse (selecting a quote, the labeling keys)
            rubric_banner(user)
        if user is not None:
            st.markdown(f"**{md_escape(user.display_name)}**")
            st.caption("Roles: " + ", ".join(sorted(r.value for r in user.roles)))
            if mode == "local":
                st.info(
                    "Single-user local mode: no accounts exist, so you act as admin. "
                    "Add an account on the Users page to require sign-in."
                )
            elif mode == "oidc":
                st.button("Sign out", on_click=st.logout)
            elif st.button("Sign out"):
                sign_out()
                st.rerun()
        # A real button on every page: besides re-reading the store, it makes the browser load
        # the button component at start-up, so on the Judge page the grade keys are bound as
        # soon as the item shows (without it the first key pressed there could be lost). Not
        # on the sign-in page (its form's button loads it there): a lone Refresh beside the
        # sign-in form re-read nothing a signed-out person sees (issue 29, L3).
        if user is not None:
            st.button("Refresh", key="sidebar_refresh", help="Re-read the store (other people's changes)")
        if user is not None and user.can(Permission.IMPORT_CORPUS):  # where the data lives: engineers, admins
            st.caption(f"Store: {md_escape(store.path)}")
        if mode == "accounts" and user is not None:
            sync_cookie(st.session_state.get("session_token"))
        if user is not None:
            clean_copy()  # copies from the app carry no word joiners (md_escape's)
    if mode == "accounts" and user is None:
        # signed out: the cookie element (nothing painted) goes in the page, so the sidebar
        # stays empty and Streamlit shows none beside the sign-in form (L3)
        sync_cookie(st.session_state.get("session_token"))

    # Signed out there is nothing to navigate to: no menu of (two) sign-in entries.
    # expanded: every page listed, none folded under "View N more"
    st.navigation(pages, position="hidden" if user is None else "sidebar", expanded=True).run()


# Every page but Home, by what people do there: (permission(s) that open it, file, title,
# icon); a tuple opens it with any one of them. None: Transcripts (reviewers and engineers).
_SECTIONS: tuple[tuple[str, tuple[tuple[Permission | tuple[Permission, ...] | None, str, str, str], ...]], ...] = (
    ("Label", ((Permission.LABEL, "evidence.py", "Evidence", ":material/format_quote:"),
               (Permission.LABEL, "judge.py", "Judge", ":material/gavel:"),
               (Permission.LABEL, "references.py", "Reference answers", ":material/task_alt:"),
               # people mark answers per rubric criterion; the judge's calibration set (§10.4, §11.1)
               (Permission.LABEL, "answer_grading.py", "Answer grading", ":material/grading:"),
               # reviewers mark answers' outcomes in its Scores section (abstention, §10.5)
               ((Permission.LABEL, Permission.MARK_OUTCOMES), "nuggets.py", "Nuggets", ":material/checklist:"))),
    ("Review", ((Permission.ADJUDICATE, "adjudication.py", "Adjudication", ":material/balance:"),
                # what refuses a freeze, with the fixes (issue 37 item 9): leads fix, engineers freeze
                ((Permission.ADJUDICATE, Permission.FREEZE), "freeze_conflicts.py", "Freeze conflicts",
                 ":material/rule:"),
                (Permission.RUN_ROUNDS, "agreement.py", "Agreement", ":material/handshake:"),
                (Permission.CALIBRATE_JUDGE, "calibration.py", "Judge calibration", ":material/tune:"),
                (Permission.GRADE_POOL_BY_JUDGE, "pool_grading.py", "Judge the pool", ":material/smart_toy:"),
                (None, "transcripts.py", "Transcripts", ":material/forum:"),
                # people check the faithfulness judge's claim verdicts (§11.1): reviewers, and leads calibrating it
                ((Permission.REVIEW, Permission.CALIBRATE_JUDGE), "claims.py", "Claim review", ":material/fact_check:"))),
    ("Data", ((Permission.VIEW_STORE, "corpus.py", "Corpus", ":material/description:"),
              (Permission.VIEW_STORE, "queries.py", "Queries", ":material/help:"))),
    ("Engineer", ((Permission.VIEW_VERSIONS, "pool.py", "Runs & pool", ":material/stacks:"),
                  (Permission.VIEW_VERSIONS, "versions.py", "Versions", ":material/inventory_2:"),
                  (Permission.VIEW_VERSIONS, "power.py", "Power", ":material/query_stats:"),
                  (Permission.VIEW_RESULTS, "results.py", "Results", ":material/leaderboard:"),
                  (Permission.MANAGE_WEBHOOKS, "webhooks.py", "Webhooks", ":material/webhook:"))),
    ("Admin", ((Permission.MANAGE_USERS, "users.py", "Users", ":material/group:"),)),
)


def _opens(perm: Permission | tuple[Permission, ...] | None) -> tuple[Permission, ...]:
    """The permissions any one of which opens a page."""
    if perm is None:
        return (Permission.REVIEW, Permission.IMPORT_RUNS)
    return perm if isinstance(perm, tuple) else (perm,)


def page_sections(user) -> dict[str, list[tuple[str, str, str]]]:
    """The pages this person's roles allow, as (file, title, icon), grouped by what people
    do there (empty groups left out). The unnamed first group holds Home."""
    out = {"": [("home.py", "Home", ":material/home:")]}
    for section, entries in _SECTIONS:
        shown = [(file, title, icon) for perm, file, title, icon in entries if any(map(user.can, _opens(perm)))]
        if shown:
            out[section] = shown
    return out


def roles_for(page: str) -> tuple[str, list[str]] | None:
    """(title, the roles that open it) for a page's url path (``agreement``), None for an
    unknown one."""
    for _, entries in _SECTIONS:
        for perm, file, title, _icon in entries:
            if Path(file).stem == page:
                need = _opens(perm)
                return title, sorted(r.value for r, perms in ROLE_PERMISSIONS.items() if any(p in perms for p in need))
    return None


def forbidden_page(user: User, page: str) -> StreamlitPage:
    """A page that says why a deep link to ``page`` does not open for ``user`` and which
    roles it needs (issue 29, L1: it said "Page not found" and ran Home)."""
    title, roles = roles_for(page) or (page, [])

    def show() -> None:
        st.title(title)
        have = ", ".join(sorted(r.value for r in user.roles)) or "none"
        st.error(f"The {md_escape(title)} page needs the {' or '.join(roles)} role; you are signed in as "
                 f"{md_escape(user.username)} with the role(s) {have}. Ask an admin for the role, or pick a page "
                 "from the menu.")

    return st.Page(show, title=title, url_path=page, visibility="hidden")


# The pages a deep link may name (the file stems under app_pages/, which are their url paths).
_LINKABLE = frozenset(p.stem for p in PAGES.glob("*.py")) - {"entry", "sign_in", "streamlit_app", "home", "warm"}


def _asked_page() -> str | None:
    """The page a deep link asks for (``/judge`` -> ``judge``) while nobody is signed in: the
    sign-in page answers there too, so the address stays and opens that page once signed in."""
    try:
        path = urlparse(st.context.url or "").path
    except Exception:  # no browser behind this run
        return None
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return last if last in _LINKABLE else None
