"""vc-admission starts in every system a test, `vcctl up` or a chaos run brings up, often twice: its
start-up must not pay for the kube client (kubernetes-asyncio: seconds of CPU to import) unless it
manages its webhook certificate in a Secret, the one path that talks to the apiserver."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import sys
    from vc_admission.__main__ import main  # what the vc-admission script imports
    from vc_admission.app import AdmissionApp, add_arguments
    from vc_runtime.settings import parse

    app = AdmissionApp(parse("admission", sys.argv[1:], add_arguments=add_arguments))
    assert app.options is not None
    print(",".join(sorted(m for m in ("kubernetes_asyncio", "vc_kube.client") if m in sys.modules)))
    """
)


def loaded_kube_modules(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([], id="the-nats-write-api-only"),
        pytest.param(["--webhook-port", "9443", "--generate-certs", "/tmp/certs"], id="a-webhook-on-generated-certs"),
    ],
)
def test_admission_starts_without_importing_the_kube_client(argv: list[str]) -> None:
    assert loaded_kube_modules(*argv) == ""
