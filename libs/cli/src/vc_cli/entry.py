"""The `vcctl` program: `vc_cli.main.main` in a process of its own.

nats-py imports aiohttp for its websocket transport, which vcctl never uses (it connects over nats://
and tls://), and aiohttp is a quarter of what every vcctl call spends starting: the program keeps it out.
Only the program does: an importer of `vc_cli.main` (the tests, another tool) keeps its own aiohttp.
"""

from __future__ import annotations

import sys


def run() -> int:
    if "aiohttp" not in sys.modules:
        sys.modules["aiohttp"] = None  # type: ignore[assignment]  # `import aiohttp` raises ImportError
    from vc_cli.main import main

    return main()
