"""The dashboard asks who is looking and shows each person only the namespaces they may read; it answers
only the Host names it serves (a page that re-points its own name at the dashboard gets nothing)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import ClientSession, CookieJar
from aiohttp.test_utils import TestServer

from tests.unit.dashboard.dashboard_builders import job
from tests.unit.dashboard.dashboard_logins import TENANTS, Logins
from vc_bus.testing import MemoryStore
from vc_dashboard.cache import ClusterCache
from vc_dashboard.hub import Hub
from vc_dashboard.logic.access import allowed_hosts, host_allowed, host_name
from vc_dashboard.login import SESSION_COOKIE, Gate
from vc_dashboard.readonly import ReadOnlyStore
from vc_dashboard.web import Dashboard
from vc_security.tokens import BadToken, verify_token


class Site:
    def __init__(self, base: str, logins: Logins) -> None:
        self.base = base
        self.logins = logins

    async def get(self, path: str, *, who: str | None = None, **headers: str) -> tuple[int, str]:
        if who is not None:
            headers["Authorization"] = f"Bearer {self.logins.token(who)}"
        async with ClientSession() as http, http.get(self.base + path, headers=headers, allow_redirects=False) as r:
            return r.status, await r.text()


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    store = MemoryStore()
    await store.create(job("a-job", namespace="team-a"))
    await store.create(job("b-job", namespace="team-b"))
    hub = Hub()
    cache = ClusterCache(ReadOnlyStore(store), publish=hub.publish)
    logins = Logins(tmp_path)
    shutdown = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        for informer in cache.informers:
            tg.create_task(informer.run(shutdown))
        for informer in cache.informers:
            await informer.synced.wait()
        gate = Gate(people=logins.people, hosts=allowed_hosts("127.0.0.1"))
        dashboard = Dashboard(cache=cache, hub=hub, nc=None, gate=gate)  # type: ignore[arg-type]
        async with TestServer(dashboard.application(), host="127.0.0.1") as server:
            yield Site(f"http://127.0.0.1:{server.port}", logins)
            hub.close()
        shutdown.set()


async def test_without_a_login_every_page_is_a_401_with_the_login_form(site: Site) -> None:
    for path in ("/", "/jobs", "/queues", "/nodes", "/jobs/team-a/a-job", "/stream/jobs"):
        status, body = await site.get(path)
        assert status == 401, path
        assert 'action="/login"' in body and "a-job" not in body, path
    async with ClientSession() as http, http.get(site.base + "/login") as page:
        # Its form must carry the page's real Origin (under no-referrer a browser sends `null`).
        assert page.status == 200 and page.headers["Referrer-Policy"] == "same-origin"
    for token in ("nonsense", site.logins.token("alice", lasts=-1), "alice.99999999999.AAAA"):
        assert (await site.get("/jobs", Authorization=f"Bearer {token}"))[0] == 401, token
    assert (await site.get("/static/dashboard.css"))[0] == 200  # the login page's own style


async def test_a_tenant_sees_only_the_namespaces_it_reads(site: Site) -> None:
    status, jobs = await site.get("/jobs", who="alice")
    assert status == 200 and 'data-job="team-a/a-job"' in jobs and "b-job" not in jobs and "team-b" not in jobs
    status, overview = await site.get("/", who="alice")
    assert status == 200 and "a-job" in overview and "b-job" not in overview
    assert (await site.get("/queues", who="alice"))[0] == 200  # cluster-scoped, as on NATS
    status, body = await site.get("/jobs/team-b/b-job", who="alice")
    assert status == 403 and "alice may not read namespace team-b" in body
    assert (await site.get("/stream/jobs/team-b/b-job", who="alice"))[0] == 403
    status, everything = await site.get("/jobs", who="admin")
    assert status == 200 and "team-a/a-job" in everything and "team-b/b-job" in everything


async def test_a_foreign_host_gets_nothing_logged_in_or_not(site: Site) -> None:
    for who in (None, "admin"):
        status, body = await site.get("/jobs/team-b/b-job", who=who, Host="evil.example.com")
        assert status == 421 and "b-job" not in body
    assert (await site.get("/static/dashboard.css", Host="evil.example.com:80"))[0] == 421
    assert (await site.get("/jobs", who="admin", Host="localhost:1234"))[0] == 200


async def test_a_session_from_a_token_lasts_until_the_person_is_deleted(site: Site) -> None:
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:  # unsafe: a cookie for an IP
        async with browser.post(site.base + "/login", data={"token": "bad"}, allow_redirects=False) as refused:
            assert refused.status == 401 and "not a Tephra login token" in await refused.text()
        form = {"token": site.logins.token("alice")}
        for origin in ("http://evil.example.com", "null"):  # another site's form, with its own token
            headers = {"Origin": origin}
            async with browser.post(site.base + "/login", data=form, headers=headers, allow_redirects=False) as r:
                assert r.status == 403 and SESSION_COOKIE not in r.cookies, origin
        async with browser.post(site.base + "/login", data=form, allow_redirects=False) as login:
            assert login.status == 303 and login.headers["Location"] == "/"
            cookie = login.cookies[SESSION_COOKIE]
            assert cookie["httponly"] and cookie["samesite"] == "Strict"
        async with browser.get(site.base + "/jobs") as page:
            assert page.status == 200 and "team-a/a-job" in await page.text()
        site.logins.write({"bob": TENANTS["bob"]})  # `vcctl user delete alice`
        async with browser.get(site.base + "/jobs") as page:
            assert page.status == 401


def test_tokens_are_checked_against_the_identitys_key(tmp_path: Path) -> None:
    logins = Logins(tmp_path)
    token = logins.token("alice")
    now = time.time()
    assert verify_token(token, logins.people.public_key, now=now)[0] == "alice"
    forged = "bob." + token.split(".", 1)[1]  # alice's signature, bob's name
    with pytest.raises(BadToken, match="not signed by a known identity"):
        verify_token(forged, logins.people.public_key, now=now)


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("127.0.0.1:8090", True),
        ("LOCALHOST", True),
        ("evil.example.com", False),
        ("127.0.0.1.evil.example.com:8090", False),
        ("[::1]:8090", True),
        ("0.0.0.0:8090", False),
        ("", False),
    ],
)
def test_host_names(header: str, allowed: bool) -> None:
    assert host_allowed(header, allowed_hosts("127.0.0.1")) is allowed
    assert host_allowed(header, allowed_hosts("0.0.0.0", ["dash.example.com"])) is False
    assert host_name("[::1]:8090") == "::1" and host_name("example.com:80") == "example.com"
