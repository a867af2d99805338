"""The kube client's request options: the proxy is resolved once, as aiohttp's trust_env would (pure)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client as k8s_client
from yarl import URL

from vc_kube.client import _request_options


def config(proxy: str | None = None, server_name: str | None = None) -> k8s_client.Configuration:
    cfg = k8s_client.Configuration()
    cfg.proxy = proxy
    cfg.tls_server_name = server_name
    return cfg


def test_the_kubeconfigs_proxy_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    options = _request_options(config(proxy="http://cfg-proxy:8080", server_name="kubernetes"), "https://10.0.0.1")
    assert options == {"proxy": "http://cfg-proxy:8080", "server_hostname": "kubernetes"}


def test_the_environments_proxy_is_used_unless_no_proxy_names_the_apiserver(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert _request_options(config(), "https://10.0.0.1:6443") == {}
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    assert _request_options(config(), "https://10.0.0.1:6443")["proxy"] == URL("http://env-proxy:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.1")
    assert _request_options(config(), "https://10.0.0.1:6443") == {}
