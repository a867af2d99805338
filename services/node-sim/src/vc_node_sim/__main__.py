"""vc-node-sim: simulated nodes that run the pods bound to them."""

from __future__ import annotations

from vc_node_sim.app import NodeSimApp, add_arguments
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(NodeSimApp, lambda: parse("node-sim", add_arguments=add_arguments))


if __name__ == "__main__":
    main()
