"""The HTTP shell of who may look: the Host check, the login (a bearer token, or a session cookie
made from one) and the viewer every page is rendered for.

People and their namespaces are vcctl's: `--identities` is the identities.json `vcctl user create`
writes (re-read when it changes, so a deleted user is shut out at once, sessions included), and the
admin, who is not in it, is known by the public key `--admin-key` names. A token is
`vcctl user token`'s (vc_security.tokens); `POST /login` with it sets an HttpOnly, SameSite=Strict
session cookie that lasts as long as the token. Without either, every page answers 401 with the login
form; a Host the dashboard does not serve gets 421 before anything else (logic.access).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import structlog
from aiohttp import web

from vc_dashboard.logic.access import Viewer, host_allowed
from vc_dashboard.render.html import render
from vc_security.identities import ADMIN
from vc_security.registry import BadRegistry, Person, decode_registry
from vc_security.tokens import BadToken, verify_token

log = structlog.get_logger(__name__)

SESSION_COOKIE: Final = "tephra_session"
MAX_SESSIONS: Final = 10_000
MAX_FORM_BYTES: Final = 4096
OPEN_PATHS: Final = ("/login", "/static/")
VIEWER: Final = web.RequestKey("viewer", Viewer)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class People:
    """identities.json, re-read when its modification time changes; unreadable means nobody."""

    def __init__(self, path: str | None, admin_key: str | None) -> None:
        self._path = path
        self._admin_key = admin_key
        self._stamp: tuple[int, int] | None = None
        self._people: dict[str, Person] = {}

    def person(self, identity: str) -> Person | None:
        if identity == ADMIN:
            return Person(ADMIN, "admin", public_key=self._admin_key) if self._admin_key else None
        self._refresh()
        person = self._people.get(identity)
        return person if person is not None and person.role == "tenant" else None

    def public_key(self, identity: str) -> str | None:
        person = self.person(identity)
        return person.public_key if person is not None else None

    def _refresh(self) -> None:
        if self._path is None:
            return
        try:
            info = os.stat(self._path)
            stamp = (info.st_mtime_ns, info.st_size)
            if stamp == self._stamp:
                return
            with open(self._path, "rb") as source:
                self._people = decode_registry(source.read(), source=self._path)
            self._stamp = stamp
        except (OSError, BadRegistry) as exc:
            log.error("dashboard.identities_unreadable", path=self._path, error=str(exc))
            self._people, self._stamp = {}, None


@dataclass(frozen=True, slots=True)
class Session:
    identity: str
    expires: int


class Gate:
    def __init__(self, *, people: People, hosts: frozenset[str], clock: Callable[[], float] = time.time) -> None:
        self._people = people
        self._hosts = hosts
        self._clock = clock
        self._sessions: dict[str, Session] = {}

    def routes(self, app: web.Application) -> None:
        app.middlewares.append(self._middleware)
        app.router.add_get("/login", self._login_form)
        app.router.add_post("/login", self._login)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not host_allowed(request.headers.get("Host"), self._hosts):
            return web.Response(status=421, text="this dashboard does not serve that host name\n")
        if request.path == OPEN_PATHS[0] or request.path.startswith(OPEN_PATHS[1]):
            return await handler(request)
        viewer = self.viewer(request)
        if viewer is None:
            return _login_page(401, "Log in to see this cluster.")
        request[VIEWER] = viewer
        return await handler(request)

    def viewer(self, request: web.Request) -> Viewer | None:
        identity = self._identity(request)
        person = self._people.person(identity) if identity else None
        if person is None:
            return None
        return Viewer(person.identity, None if person.role == "admin" else person.namespaces)

    def _identity(self, request: web.Request) -> str | None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            try:
                return verify_token(token.strip(), self._people.public_key, now=self._clock())[0]
            except BadToken:
                return None
        session = self._sessions.get(request.cookies.get(SESSION_COOKIE, ""))
        if session is None or session.expires <= self._clock():
            return None
        return session.identity

    async def _login_form(self, _: web.Request) -> web.Response:
        return _login_page(200, "Paste a token from `vcctl user token`.")

    async def _login(self, request: web.Request) -> web.Response:
        origin = request.headers.get("Origin")
        if origin is not None and not host_allowed(urlsplit(origin).netloc, self._hosts):
            # Another site's form posting its own token would log this browser in as someone else.
            return _login_page(403, "Log in from the dashboard's own page.")
        if (request.content_length or 0) > MAX_FORM_BYTES:
            return _login_page(400, "The form is too large.")
        token = str((await request.post()).get("token", "")).strip()
        try:
            identity, expires = verify_token(token, self._people.public_key, now=self._clock())
        except BadToken as exc:
            return _login_page(401, str(exc))
        self._forget_expired()
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = Session(identity, expires)
        log.info("dashboard.login", identity=identity)
        response = web.Response(status=303, headers={"Location": "/"})
        response.set_cookie(
            SESSION_COOKIE,
            session_id,
            max_age=max(int(expires - self._clock()), 0),
            path="/",
            httponly=True,
            samesite="Strict",
        )
        return response

    def _forget_expired(self) -> None:
        now = self._clock()
        for key in [k for k, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[key]
        while len(self._sessions) >= MAX_SESSIONS:  # the oldest go first (dicts keep insertion order)
            del self._sessions[next(iter(self._sessions))]


def _login_page(status: int, message: str) -> web.Response:
    html = render(
        "layout.html", title="Log in", section="", stream="", fragment="login.html", synced=True, message=message
    )
    # same-origin, not the other pages' no-referrer: under no-referrer a browser sends `Origin: null`
    # with the form, and the login could not tell its own page from another site's.
    headers = {"Referrer-Policy": "same-origin"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="tephra"'

    return web.Response(status=status, text=html, content_type="text/html", headers=headers)
