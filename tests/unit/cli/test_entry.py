"""The `vcctl` program loads the NATS client without aiohttp (nats-py's websocket transport, which vcctl
never uses), and aiohttp stays importable for the Kubernetes backend; an importer of vc_cli.main is left
alone."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import sys
sys.argv = ["vcctl", "--help"]
from vc_cli.entry import run
try:
    run()
except SystemExit:
    pass
print("nats.aio.client" in sys.modules, sys.modules.get("aiohttp", "absent"))
import aiohttp  # what the Kubernetes backend's client does when `--backend kube` loads it
print(aiohttp.ClientSession is not None)
"""


def test_the_program_imports_the_nats_client_without_aiohttp() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-2:] == ["True absent", "True"]


def test_an_importer_of_main_keeps_aiohttp() -> None:
    code = "import vc_cli.main, aiohttp, sys; print(sys.modules['aiohttp'] is not None)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
