"""The kube client's request options: the proxy is resolved once, as aiohttp's trust_env would (pure); which
version of a kind it asks for (discovery stubbed: no apiserver); the TLS set-up a configuration gives."""

from __future__ import annotations

import ssl

import pytest
from kubernetes_asyncio import client as k8s_client
from yarl import URL

from vc_kube.client import KubeClient, _request_options, resource_path
from vc_kube.tls import client_context
from vc_proto.kinds import KINDS


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


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        (["policy/v1beta1"], "policy/v1beta1"),  # Kubernetes 1.20
        (["policy/v1", "policy/v1beta1"], "policy/v1"),  # 1.21 to 1.24
        (["policy/v1"], "policy/v1"),  # 1.25 on
    ],
)
async def test_a_kind_is_asked_at_the_newest_version_the_apiserver_serves(listed: list[str], expected: str) -> None:
    cfg = config()
    cfg.host = "https://10.0.0.1:6443"
    asked: list[str] = []

    async def request(method: str, path: str, **kw: object) -> dict[str, object]:
        asked.append(path)
        return {"kind": "APIGroup", "name": "policy", "versions": [{"groupVersion": v} for v in listed]}

    async with KubeClient(cfg) as kube:
        kube.request = request  # type: ignore[method-assign]
        pdb = KINDS["PodDisruptionBudget"]
        assert (await kube.served(pdb)).api_version == expected
        assert (await kube.served(pdb)).api_version == expected
        assert asked == ["/apis/policy"]  # discovery once per kind and client
        assert await kube.served(KINDS["Pod"]) is KINDS["Pod"]  # one version: no question asked
        assert (
            resource_path(await kube.served(pdb), "ns", "b") == f"/apis/{expected}/namespaces/ns/poddisruptionbudgets/b"
        )


def test_the_tls_context_keeps_the_configurations_verification_switches() -> None:
    checked = client_context(config())  # no CA file: the system's, and full verification
    assert checked.verify_mode == ssl.CERT_REQUIRED and checked.check_hostname
    default = ssl.create_default_context()  # kubernetes-asyncio's starting point
    assert (checked.verify_flags, checked.options) == (default.verify_flags, default.options)
    cfg = config()
    cfg.verify_ssl = False  # a kubeconfig's insecure-skip-tls-verify
    unchecked = client_context(cfg)
    assert unchecked.verify_mode == ssl.CERT_NONE and not unchecked.check_hostname
