"""Connections to the real kube-apiserver resume the TLS session an earlier connection received: a
service opening many HTTP/1.1 connections pays the full handshake (the server's signature) once."""

from __future__ import annotations

import asyncio
import ssl

import pytest
from prometheus_client import REGISTRY
from yarl import URL

from tests.kube.support import KUBECONFIG
from vc_kube.client import KubeClient, load_config
from vc_kube.tls import client_context

pytestmark = pytest.mark.kube


def handshakes(resumed: str) -> float:
    return REGISTRY.get_sample_value("tephra_kube_tls_handshakes_total", {"resumed": resumed}) or 0.0


async def test_new_connections_resume_the_first_ones_session(kube: KubeClient) -> None:
    await kube.request("GET", "/version")  # the first connection: a full handshake, and a ticket
    full, resumed = handshakes("false"), handshakes("true")
    # Eight at once: the pool holds one idle connection, so at least seven are new.
    answers = await asyncio.gather(*(kube.request("GET", "/version") for _ in range(8)))
    assert all(answer.get("major") for answer in answers)
    assert handshakes("true") - resumed >= 7
    assert handshakes("false") == full  # none of them paid the full handshake


async def resumed(context: ssl.SSLContext, url: URL, name: str) -> bool:
    """One request on a new connection to the apiserver as `name`; whether it resumed a session."""
    reader, writer = await asyncio.open_connection(url.host, url.port, ssl=context, server_hostname=name)
    try:
        writer.write(b"GET /version HTTP/1.1\r\nHost: apiserver\r\nConnection: close\r\n\r\n")
        assert (await reader.read()).startswith(b"HTTP/1.1 ")  # read: the ticket comes with the answer
        return bool(writer.get_extra_info("ssl_object").session_reused)
    finally:
        writer.close()


async def test_a_session_is_offered_only_to_the_server_name_it_came_from(kube: KubeClient) -> None:
    cfg = await load_config(str(KUBECONFIG))
    url, context = URL(cfg.host), client_context(cfg)
    # Two names the apiserver's certificate carries, one address.
    assert not await resumed(context, url, "localhost")
    assert not await resumed(context, url, "kubernetes")  # localhost's session is not offered: verified in full
    assert await resumed(context, url, "localhost")
    assert await resumed(context, url, "kubernetes")


async def test_a_session_does_not_stand_in_for_verification_of_another_name(kube: KubeClient) -> None:
    cfg = await load_config(str(KUBECONFIG))
    url, context = URL(cfg.host), client_context(cfg)
    assert not await resumed(context, url, "localhost")
    assert await resumed(context, url, "localhost")  # a session is held, and offered to localhost
    with pytest.raises(ssl.SSLCertVerificationError):  # a name the certificate does not carry
        await asyncio.open_connection(url.host, url.port, ssl=context, server_hostname="not-the-apiserver")
