"""The `vcctl` program: `vc_cli.main.main` in a process of its own.

nats-py imports aiohttp for its websocket transport, which vcctl never uses (it connects over nats://
and tls://), and aiohttp is a quarter of what every vcctl call spends starting. The program loads
nats-py's transport module with aiohttp marked absent, so that module goes without it as if it were not
installed, and unmarks it at once: the Kubernetes backend's client, loaded only for `--backend kube`,
imports aiohttp as usual. Only the program does this; an importer of `vc_cli.main` is left alone.
"""

from __future__ import annotations

import importlib
import sys


def _nats_without_aiohttp() -> None:
    if "aiohttp" in sys.modules or "nats.aio.transport" in sys.modules:
        return  # already loaded: nothing left to save
    sys.modules["aiohttp"] = None  # type: ignore[assignment]  # `import aiohttp` raises ImportError
    try:
        importlib.import_module("nats.aio.transport")
    finally:
        del sys.modules["aiohttp"]


def run() -> int:
    _nats_without_aiohttp()
    from vc_cli.main import main

    return main()
