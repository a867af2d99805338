"""The pages and their live streams over the in-memory store (the real run is in
tests/integration/test_dashboard_browser.py): escaping, bounds, errors, security headers, SSE."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.unit.dashboard.dashboard_builders import job, node, pod, podgroup, queue, unschedulable
from tests.unit.dashboard.dashboard_logins import Logins
from vc_bus.testing import MemoryStore
from vc_dashboard.cache import ClusterCache
from vc_dashboard.hub import Hub
from vc_dashboard.logic.access import allowed_hosts
from vc_dashboard.login import Gate
from vc_dashboard.readonly import ReadOnlyStore, ReadOnlyStoreError
from vc_dashboard.web import Dashboard
from vc_proto.scheduling import Queue

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
async def store() -> MemoryStore:
    memory = MemoryStore()
    await memory.create(
        queue(
            "research",
            spec={"weight": 2, "capability": {"cpu": "64"}},
            status={"state": "Open", "allocated": {"cpu": "16"}},
        )
    )
    await memory.create(node("node-0", cpu="32"))
    await memory.create(job("waiting", phase="Pending", tasks={"worker": 2}))
    await memory.create(podgroup("waiting", phase="Inqueue", conditions=[unschedulable(HOSTILE)]))
    await memory.create(pod("p-0", node="node-0", phase="Running", requests={"cpu": "4"}, job_name="other"))
    return memory


@pytest.fixture
async def client(store: MemoryStore, tmp_path: Path) -> AsyncIterator[tuple[TestClient[Any, Any], Hub]]:
    hub = Hub(max_streams=2)
    cache = ClusterCache(ReadOnlyStore(store), publish=hub.publish)
    shutdown = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        for informer in cache.informers:
            tg.create_task(informer.run(shutdown))
        for informer in cache.informers:
            await informer.synced.wait()
        logins = Logins(tmp_path)
        gate = Gate(people=logins.people, hosts=allowed_hosts("127.0.0.1"))
        dashboard = Dashboard(cache=cache, hub=hub, nc=None, gate=gate)  # type: ignore[arg-type]  # no job pages here
        server = TestServer(dashboard.application())
        async with TestClient(server, headers={"Authorization": f"Bearer {logins.token('admin')}"}) as test_client:
            yield test_client, hub
            hub.close()
        shutdown.set()


async def test_every_list_page_renders_with_strict_security_headers(client: tuple[TestClient[Any, Any], Hub]) -> None:
    http, _ = client
    for path in ("/", "/queues", "/jobs", "/nodes", "/jobs?phase=Pending&size=1"):
        response = await http.get(path)
        assert response.status == 200, path
        csp = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        body = await response.text()
        assert f'data-stream="/stream{path.replace("&", "&amp;")}"' in body
        assert '<script src="/static/live.js" defer></script>' in body


async def test_user_strings_are_escaped(client: tuple[TestClient[Any, Any], Hub]) -> None:
    http, _ = client
    body = await (await http.get("/jobs")).text()
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in body  # the verdict, shown as text
    assert 'title="&lt;script&gt;' in body  # and in an attribute, quotes escaped


async def test_pages_show_queues_jobs_and_nodes(client: tuple[TestClient[Any, Any], Hub]) -> None:
    http, _ = client
    queues = await (await http.get("/queues")).text()
    assert 'data-queue="research"' in queues and "16 allocated / 64 capability" in queues
    jobs = await (await http.get("/jobs?phase=Pending")).text()
    assert 'data-job="default/waiting"' in jobs and "showing 1-1 of 1" in jobs
    nodes = await (await http.get("/nodes")).text()
    assert 'data-node="node-0"' in nodes and "4 / 32" in nodes and "1 / 110" in nodes


async def test_a_node_page_lists_the_pods_on_it_with_their_jobs_in_units(
    client: tuple[TestClient[Any, Any], Hub], store: MemoryStore
) -> None:
    http, _ = client
    await store.create(pod("p-1", node="node-0", phase="Running", requests={"cpu": "1500m", "memory": "1536Mi"}))
    await store.create(pod("done", node="node-0", phase="Succeeded", requests={"cpu": "1"}, job_name="other"))
    nodes = await (await http.get("/nodes")).text()
    assert '<a href="/nodes/node-0">node-0</a>' in nodes
    response = await http.get("/nodes/node-0")
    assert response.status == 200 and response.headers["Content-Security-Policy"]
    page = await response.text()
    assert 'data-pod="default/p-0"' in page and '<a href="/jobs/default/other">other</a>' in page
    assert "cpu 1.5 · memory 1.5Gi" in page  # not 1500m, not 1610612736
    assert 'data-pod="default/done"' not in page  # a finished pod holds nothing of the node
    assert "2 of 2 shown" in page and "5.5 / 32" in page
    missing = await http.get("/nodes/node-9")
    assert missing.status == 404 and "no node node-9" in await missing.text()
    bad = await http.get("/nodes/Not_A_Node")
    assert bad.status == 400 and "name" in await bad.text()
    assert (await http.get("/stream/nodes/Not_A_Node")).status == 400


async def test_a_node_page_is_live(client: tuple[TestClient[Any, Any], Hub], store: MemoryStore) -> None:
    http, _ = client
    assert 'data-stream="/stream/nodes/node-0"' in await (await http.get("/nodes/node-0")).text()
    response = await http.get("/stream/nodes/node-0")
    assert 'data-pod="default/p-0"' in await _event(response)
    await store.create(pod("arrived", node="node-0", phase="Running", requests={"cpu": "1"}, job_name="new"))
    assert '<a href="/jobs/default/new">new</a>' in await _event(response)
    response.close()


async def test_a_bad_query_is_a_400_naming_the_field(client: tuple[TestClient[Any, Any], Hub]) -> None:
    http, _ = client
    response = await http.get("/jobs?page=-1")
    assert response.status == 400 and "query field &#39;page&#39;: must be a whole number" in await response.text()
    response = await http.get("/jobs/Not_A_Name/x")
    assert response.status == 400 and "namespace" in await response.text()
    assert (await http.get("/stream/jobs?size=9999")).status == 400


async def test_a_stream_sends_the_page_at_once_then_again_on_a_change(
    client: tuple[TestClient[Any, Any], Hub], store: MemoryStore
) -> None:
    http, _ = client
    response = await http.get("/stream/queues")
    assert response.headers["Content-Type"] == "text/event-stream"
    first = await _event(response)
    assert first.startswith("event: update\n") and 'data: <tr data-queue="research">' in first
    await store.create(queue("brand-new"))
    second = await _event(response)
    assert 'data-queue="brand-new"' in second
    response.close()


async def test_streams_beyond_the_bound_are_refused(client: tuple[TestClient[Any, Any], Hub]) -> None:
    http, hub = client
    open_ = [await http.get("/stream/nodes"), await http.get("/stream/jobs")]
    for response in open_:
        await _event(response)
    assert hub.open_streams == 2
    refused = await http.get("/stream/queues")
    assert refused.status == 503 and refused.headers["Retry-After"] == "5"
    for response in open_:
        response.close()


async def test_the_store_the_dashboard_gets_refuses_every_write(store: MemoryStore) -> None:
    readonly = ReadOnlyStore(store)
    research = await readonly.get(Queue, None, "research")
    for write in (readonly.create(research), readonly.update(research), readonly.delete(Queue, None, "research")):
        with pytest.raises(ReadOnlyStoreError, match="read-only"):
            await write
    assert (await store.get(Queue, None, "research")).metadata.resource_version == research.metadata.resource_version


async def _event(response: Any) -> str:
    """One whole server-sent event (up to its blank line)."""
    lines = []
    async with asyncio.timeout(10):
        while True:
            line = (await response.content.readline()).decode()
            if line == "\n" and lines:
                return "".join(lines)
            if not line.startswith(":"):
                lines.append(line)
