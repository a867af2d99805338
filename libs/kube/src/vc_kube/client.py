"""A thin JSON client for the kube-apiserver on top of kubernetes-asyncio's configuration and REST pool.

Why not the generated API classes: Tephra's objects are msgspec Structs in Kubernetes JSON shape, and
half the kinds are CRDs. Raw paths (`/api/v1/...`, `/apis/<group>/<version>/...`) treat built-in
kinds and CRDs alike and skip the OpenAPI model round trip. kubernetes-asyncio still does the hard
parts: kubeconfig/in-cluster loading, TLS, tokens, and the aiohttp session.

Errors become domain errors here, at the boundary (style B6).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from vc_core.errors import AlreadyExists, Conflict, InvalidObject, NotFound, PermanentError, TemporaryError
from vc_proto.kinds import Kind

Json = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"


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


class KubeClient:
    """JSON requests against one apiserver. Use `async with` or call `close()`."""

    def __init__(self, cfg: k8s_client.Configuration) -> None:
        self._cfg = cfg
        self._rest = k8s_client.ApiClient(cfg).rest_client
        self._host = cfg.host.rstrip("/")

    @classmethod
    async def connect(cls, kubeconfig: str | None) -> KubeClient:
        return cls(await load_config(kubeconfig))

    async def close(self) -> None:
        await self._rest.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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
        try:
            resp = await self._rest.request(
                method,
                self._host + path,
                query_params=query,
                headers=await self._headers(content_type),
                body=body,
                _preload_content=False,
                _request_timeout=request_timeout_s,
            )
            async with resp:
                data = await resp.read()
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TemporaryError(f"apiserver unreachable: {exc}") from exc
        decoded: Json = json.loads(data) if data else {}
        if not 200 <= status <= 299:
            raise KubeApiError(status, decoded)
        return decoded

    async def stream(self, path: str, *, query: dict[str, str], read_timeout_s: float) -> AsyncIterator[Json]:
        """A watch: one decoded JSON event per line. Ends when the server closes the stream."""
        try:
            resp = await self._rest.request(
                "GET",
                self._host + path,
                query_params=query,
                headers=await self._headers(),
                _preload_content=False,
                # No total timeout: the server ends the watch after timeoutSeconds; sock_read guards a dead peer.
                _request_timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=read_timeout_s),
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TemporaryError(f"apiserver unreachable: {exc}") from exc
        async with resp:
            if resp.status != 200:
                data = await resp.read()
                raise KubeApiError(resp.status, json.loads(data) if data else {})
            buffer = b""
            try:
                # Own line splitting: aiohttp's readline() fails on lines above its buffer limit.
                async for chunk in resp.content.iter_any():
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield json.loads(line)
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise TemporaryError(f"watch stream broke: {exc}") from exc


def map_error(exc: KubeApiError, kind: str, key: str, *, expected: int | None = None) -> Exception:
    """Translate an apiserver answer into the domain error the store port promises."""
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
