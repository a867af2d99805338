"""A thin JSON client for the kube-apiserver on top of kubernetes-asyncio's configuration.

Why not the generated API classes: Tephra's objects are msgspec Structs in Kubernetes JSON shape, and
half the kinds are CRDs. Raw paths (`/api/v1/...`, `/apis/<group>/<version>/...`) treat built-in
kinds and CRDs alike and skip the OpenAPI model round trip. kubernetes-asyncio still does the hard
parts: kubeconfig/in-cluster loading and tokens.

Requests go through a connection pool of our own (keep-alive, MAX_CONNECTIONS) whose TLS is
kubernetes-asyncio's set-up with session resumption (vc_kube.tls: a new connection skips the full
handshake), and a session that does not trust the environment: with trust_env, aiohttp re-reads the
netrc file and the proxy variables on every request (half of a request's client CPU); the proxy is
resolved once here instead. Bodies are encoded and answers decoded by msgspec: `request_bytes` hands
the answer's bytes to a caller that decodes them into typed objects (vc_kube.store), `stream` hands
over a watch's lines.

Errors become domain errors here, at the boundary (style B6).
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from importlib import metadata
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import msgspec
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from prometheus_client import Histogram
from yarl import URL

from vc_core.errors import AlreadyExists, Conflict, InvalidObject, NotFound, PermanentError, TemporaryError
from vc_kube.tls import client_context
from vc_proto.kinds import Kind

Json = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
# A watch line longer than this is refused (the stream is re-established): etcd's own limit on an
# object is 1.5 MiB, so a line this long is not an event but a broken or hostile peer.
MAX_WATCH_LINE = 16 * 1024 * 1024
_encode = msgspec.json.Encoder().encode
REQUEST_SECONDS = Histogram(
    "tephra_kube_request_seconds",
    "Requests to the kube-apiserver, from sending to the whole answer read, by method",
    ["method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
_request_seconds = {m: REQUEST_SECONDS.labels(m) for m in ("GET", "POST", "PATCH", "PUT", "DELETE")}
_decode_json = msgspec.json.Decoder().decode
# Requests in flight per client. HTTP/1.1 carries one request per connection at a time, so this is the
# client's concurrency: at kubernetes-asyncio's 100, a loaded apiserver answering in ~1.5 s capped a
# service at ~65 requests/s, and the scheduler's binds queued ~4.7 s in its own pool before even being
# sent (bench-kube's latencies line: client mean 6.3 s, the apiserver's own 1.6 s). client-go talks
# HTTP/2, many streams on one connection: no such cap. Each connection costs one TLS handshake, once,
# and all but the first resume a session (vc_kube.tls).
MAX_CONNECTIONS = 512


class KubeApiError(Exception):
    """An HTTP error answer from the apiserver, before it is mapped to a domain error."""

    def __init__(self, status: int, body: Json) -> None:
        super().__init__(f"{status}: {body.get('message', body)}")
        self.status = status
        self.body = body

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))


async def load_config(kubeconfig: str | None) -> k8s_client.Configuration:
    """From a kubeconfig file, else the in-cluster service account."""
    cfg = k8s_client.Configuration()
    if kubeconfig:
        await k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
    else:
        k8s_config.load_incluster_config(client_configuration=cfg)
    return cfg


def resource_path(kind: Kind, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    base = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.api_version}"
    if kind.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{kind.plural}"
    if name:
        base += f"/{quote(name, safe='')}"
    if sub:
        base += f"/{sub}"
    return base


def user_agent(agent: str) -> str:
    """client-go's shape, `<program>/<version> (<os>/<arch>) <origin>`: the apiserver takes the part before
    the first '/' as the default field manager, so managedFields say which Tephra service wrote a field."""
    try:
        version = metadata.version("vc-kube")
    except metadata.PackageNotFoundError:  # a source tree that was not installed
        version = "unknown"
    return f"{agent}/{version} ({sys.platform}/{platform.machine()}) tephra"


class KubeClient:
    """JSON requests against one apiserver. Use `async with` or call `close()`."""

    def __init__(self, cfg: k8s_client.Configuration, *, agent: str = "tephra") -> None:
        """`agent`: who is asking (the service's name); the apiserver names it as the field manager of
        what it writes and in its audit log."""
        self._cfg = cfg
        self._http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=client_context(cfg)),
            trust_env=False,
            read_bufsize=2**21,
            headers={"User-Agent": user_agent(agent)},
        )
        assert cfg.host is not None  # kubernetes_asyncio defaults it ("http://localhost"); a kubeconfig sets it
        self._host = cfg.host.rstrip("/")
        self._extra = _request_options(cfg, self._host)
        self._served: dict[str, Kind] = {}  # kind -> its row at the apiVersion this apiserver serves

    @classmethod
    async def connect(cls, kubeconfig: str | None, *, agent: str = "tephra") -> KubeClient:
        return cls(await load_config(kubeconfig), agent=agent)

    async def close(self) -> None:
        await self._http.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def served(self, kind: Kind) -> Kind:
        """`kind` at the apiVersion this apiserver serves it: its own, else the newest of its
        `older_versions` the server lists (PodDisruptionBudgets are policy/v1beta1 before Kubernetes
        1.21). Asked of the server's discovery once per kind; every request path for a kind with older
        versions goes through here."""
        if not kind.older_versions:
            return kind
        known = self._served.get(kind.kind)
        if known is None:
            try:
                group = await self.request("GET", f"/apis/{kind.group}")
            except KubeApiError as exc:
                if exc.status != 404:
                    raise
                group = {}  # the group is not served at all: requests say so with their own 404
            listed = {v.get("groupVersion") for v in group.get("versions") or [] if isinstance(v, dict)}
            version = next((v for v in (kind.api_version, *kind.older_versions) if v in listed), kind.api_version)
            known = self._served[kind.kind] = replace(kind, api_version=version)
        return known

    async def _headers(self, content_type: str = "application/json") -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        for setting in (await self._cfg.auth_settings()).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Json | None = None,
        content_type: str = "application/json",
        request_timeout_s: float = 30.0,
    ) -> Json:
        """One request; 2xx returns the decoded body, anything else raises KubeApiError (or TemporaryError)."""
        data = await self.request_bytes(
            method, path, query=query, body=body, content_type=content_type, request_timeout_s=request_timeout_s
        )
        decoded: Json = _decode_json(data) if data else {}
        return decoded

    async def request_bytes(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Json | None = None,
        content_type: str = "application/json",
        request_timeout_s: float = 30.0,
    ) -> bytes:
        """One request; 2xx returns the answer's bytes (for a typed decode), else raises as `request`."""
        url = self._host + path + ("?" + urlencode(query) if query else "")
        sent = time.monotonic()
        try:
            async with self._http.request(
                method,
                url,
                headers=await self._headers(content_type),
                data=_encode(body) if body is not None else None,
                timeout=aiohttp.ClientTimeout(total=request_timeout_s),
                **self._extra,
            ) as resp:
                data = await resp.read()
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TemporaryError(f"apiserver unreachable: {exc}") from exc
        histogram = _request_seconds.get(method)
        if histogram is not None:
            histogram.observe(time.monotonic() - sent)
        if not 200 <= status <= 299:
            raise KubeApiError(status, _error_body(data))
        return data

    async def stream(self, path: str, *, query: dict[str, str], read_timeout_s: float) -> AsyncIterator[bytes]:
        """A watch: its lines (one JSON event each), undecoded. Ends when the server closes the stream."""
        try:
            resp = await self._http.request(
                "GET",
                self._host + path + "?" + urlencode(query),
                headers=await self._headers(),
                # No total timeout: the server ends the watch after timeoutSeconds; sock_read guards a dead peer.
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=read_timeout_s),
                **self._extra,
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TemporaryError(f"apiserver unreachable: {exc}") from exc
        async with resp:
            if resp.status != 200:
                raise KubeApiError(resp.status, _error_body(await resp.read()))
            try:
                # Own line splitting: aiohttp's readline() fails on lines above its buffer limit.
                async for line in split_lines(resp.content.iter_any()):
                    yield line
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise TemporaryError(f"watch stream broke: {exc}") from exc


def _request_options(cfg: k8s_client.Configuration, host: str) -> dict[str, Any]:
    """What kubernetes-asyncio's session would add to each request: the kubeconfig's proxy, else the
    environment's (HTTPS_PROXY, NO_PROXY) as aiohttp would resolve it, and the TLS server name."""
    options: dict[str, Any] = {}
    if cfg.proxy:
        options["proxy"] = cfg.proxy
        if cfg.proxy_headers:
            options["proxy_headers"] = cfg.proxy_headers
    else:
        try:
            options["proxy"], options["proxy_auth"] = get_env_proxy_for_url(URL(host))
        except LookupError:
            pass  # no proxy for the apiserver
    if cfg.tls_server_name:
        options["server_hostname"] = cfg.tls_server_name
    return options


async def split_lines(chunks: AsyncIterator[bytes], *, max_line: int = MAX_WATCH_LINE) -> AsyncIterator[bytes]:
    """The non-blank lines of a byte stream cut anywhere. Each byte is searched once and copied at most
    twice (into the buffer, out as its line), however small the chunks and long the lines."""
    buffer = bytearray()
    async for chunk in chunks:
        searched = len(buffer)  # the bytes before this chunk hold no newline
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", searched)) >= 0:
            if end > start and not buffer[start:end].isspace():
                yield bytes(buffer[start:end])
            start = searched = end + 1
        if start:
            del buffer[:start]
        if len(buffer) > max_line:
            raise TemporaryError(f"watch line longer than {max_line} bytes: dropped, the watch starts again")
    if buffer.strip():
        yield bytes(buffer)


def _error_body(data: bytes) -> Json:
    """An error answer's Status object; a body that is not one (a proxy's page) becomes its message."""
    try:
        decoded = _decode_json(data) if data else {}
    except msgspec.DecodeError:
        return {"message": data[:200].decode("utf-8", "replace")}
    return decoded if isinstance(decoded, dict) else {"message": str(decoded)[:200]}


def map_error(exc: KubeApiError, kind: str, key: str, *, expected: int | None = None) -> Exception:
    """Translate an apiserver answer into the domain error the store port promises."""
    if exc.status == 404 and not (exc.body.get("details") or {}).get("name"):
        # No object named: the path itself is not served (a CRD's endpoints warming up after an apiserver
        # restart answer "the server could not find the requested resource"). Nothing is known about the
        # object, so it is not NotFound (a create would be refused for good, a read taken as a delete).
        return TemporaryError(f"apiserver does not serve {kind} (yet): {exc.body.get('message', '')}")
    if exc.status == 404:
        return NotFound(kind, key)
    if exc.status == 409:
        if exc.reason == "AlreadyExists":
            return AlreadyExists(kind, key)
        return Conflict(kind, key, expected=expected)
    if exc.status == 422:
        causes = (exc.body.get("details") or {}).get("causes") or [{}]
        field = str(causes[0].get("field", "")) or "object"
        return InvalidObject(field, str(causes[0].get("reason", "invalid")), str(exc.body.get("message", "")))
    if exc.status == 429 or exc.status >= 500:
        return TemporaryError(f"apiserver {exc.status}: {exc.body.get('message', '')}")
    return PermanentError(f"apiserver {exc.status}: {exc.body.get('message', '')}")
