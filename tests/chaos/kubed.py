"""A private etcd + kube-apiserver for one kube-mode chaos schedule (never the shared one in .kube/).

The binaries are the cached build of scripts/kube/build.sh (built on first use); the flags are
those of scripts/kube/up.sh, on free ports, with state, certificates and logs under the schedule's
own directory, so the harness can kill -9 either process and start it again on the same state.

One flag differs: `--storage-media-type application/json`. etcd then holds every object as JSON
(not protobuf), so the history recorder (etcd_recorder.py) can read each revision straight from
etcd. Only the encoding at rest changes; what clients see is the same.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from vc_bus.server import free_port

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 120.0


def kube_bin() -> Path:
    """The cached kube-apiserver build (built now when missing: minutes, once per machine)."""
    env = {**os.environ, "KUBE_WHAT": "cmd/kube-apiserver"}
    out = subprocess.run(
        [str(ROOT / "scripts" / "kube" / "build.sh")], check=True, capture_output=True, text=True, env=env
    )
    return Path(out.stdout.strip().splitlines()[-1])


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@dataclass
class Daemon:
    name: str
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9 (a crash: SIGTERM would let the apiserver drain its watches for a minute)."""
        if self.alive():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class KubeCluster:
    root: Path
    etcd_port: int = field(default_factory=free_port)
    etcd_peer_port: int = field(default_factory=free_port)
    api_port: int = field(default_factory=free_port)
    bin_dir: Path | None = None
    token: str = ""
    etcd: Daemon | None = None
    apiserver: Daemon | None = None

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    def prepare(self) -> None:
        """Binaries, certificates, token, command lines and the kubeconfig (nothing started)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.bin_dir = self.bin_dir or kube_bin()
        r = self.root
        if not (r / "apiserver.crt").exists():
            _openssl(
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=chaos-ca",
                "-keyout", str(r / "ca.key"), "-out", str(r / "ca.crt"),
            )  # fmt: skip
            _openssl(
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver",
                "-keyout", str(r / "apiserver.key"), "-out", str(r / "apiserver.csr"),
            )  # fmt: skip
            (r / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
            _openssl(
                "x509", "-req", "-in", str(r / "apiserver.csr"), "-CA", str(r / "ca.crt"), "-CAkey",
                str(r / "ca.key"), "-CAcreateserial", "-days", "30", "-extfile", str(r / "san.ext"),
                "-out", str(r / "apiserver.crt"),
            )  # fmt: skip
            _openssl("genrsa", "-out", str(r / "sa.key"), "2048")
            _openssl("rsa", "-in", str(r / "sa.key"), "-pubout", "-out", str(r / "sa.pub"))
        self.token = self.token or os.urandom(24).hex()
        (r / "tokens.csv").write_text(f'{self.token},tephra-admin,tephra-admin,"system:masters"\n')
        self.write_kubeconfig(self.kubeconfig, self.api_port)
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        self.etcd = Daemon(
            "etcd",
            [
                "etcd", "--name", "chaos", "--data-dir", str(r / "etcd"),
                "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"chaos={peer}", "--listen-metrics-urls", "",
            ],
            r / "etcd.log",
        )  # fmt: skip
        self.apiserver = Daemon(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                "--etcd-servers", self.etcd_url,
                "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                "--secure-port", str(self.api_port), "--insecure-port", "0",
                "--tls-cert-file", str(r / "apiserver.crt"), "--tls-private-key-file", str(r / "apiserver.key"),
                "--cert-dir", str(r / "certs"), "--token-auth-file", str(r / "tokens.csv"),
                "--authorization-mode", "RBAC",
                "--service-account-key-file", str(r / "sa.pub"), "--service-account-signing-key-file",
                str(r / "sa.key"), "--service-account-issuer", "https://kubernetes.default.svc",
                "--service-cluster-ip-range", "10.96.0.0/16",
                "--disable-admission-plugins", "ServiceAccount", "--endpoint-reconciler-type", "none",
                "--allow-privileged=true", "--watch-cache=true",
                "--storage-media-type", "application/json",
            ],
            r / "apiserver.log",
        )  # fmt: skip

    def write_kubeconfig(self, path: Path, port: int) -> Path:
        """A kubeconfig for the apiserver reached on `port` (its own, or a fault proxy in front of it)."""
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: chaos\n  cluster:\n    server: https://127.0.0.1:{port}\n"
            f"    certificate-authority: {self.root / 'ca.crt'}\n"
            f"users:\n- name: tephra-admin\n  user:\n    token: {self.token}\n"
            "contexts:\n- name: chaos\n  context: {cluster: chaos, user: tephra-admin}\ncurrent-context: chaos\n"
        )
        path.chmod(0o600)
        return path

    # -- processes ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Both, then the CRDs (once per cluster: they live in etcd)."""
        self.prepare()
        self.start_etcd()
        self.start_apiserver()
        subprocess.run(
            [sys.executable, "-m", "vc_kube.crds", "--kubeconfig", str(self.kubeconfig), "--dir",
             str(ROOT / "deploy" / "k8s" / "crds")],
            check=True, capture_output=True, timeout=180,
        )  # fmt: skip

    def start_etcd(self) -> None:
        assert self.etcd is not None
        self.etcd.start()
        self._until(lambda: self._get(f"{self.etcd_url}/health"), self.etcd, "etcd")

    def start_apiserver(self) -> None:
        assert self.apiserver is not None
        self.apiserver.start()
        self.wait_apiserver()

    def wait_apiserver(self) -> None:
        assert self.apiserver is not None
        self._until(self.apiserver_ready, self.apiserver, "kube-apiserver")

    def apiserver_ready(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.root / "ca.crt"))
        return self._get(f"https://127.0.0.1:{self.api_port}/readyz", context)

    def _get(self, url: str, context: ssl.SSLContext | None = None) -> bool:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def _until(self, ready: object, daemon: Daemon, what: str) -> None:
        assert callable(ready)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not ready():
            if not daemon.alive():
                tail = daemon.log_path.read_text(errors="replace").splitlines()[-15:]
                raise RuntimeError(f"{what} exited: " + " | ".join(tail))
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} not ready within {READY_TIMEOUT_S:.0f} s (log: {daemon.log_path})")
            time.sleep(0.2)

    def stop(self) -> None:
        """Everything this cluster started (also after a failure: safe to call twice)."""
        for daemon in (self.apiserver, self.etcd):
            if daemon is not None:
                daemon.kill()
