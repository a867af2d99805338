"""`vcctl up --vgpus-per-node N [--vgpu-memory MiB] [--vgpu-split S]` hands node-sim its shareable GPUs."""

from __future__ import annotations

from vc_cli.main import build_parser
from vc_cli.up import plan_children

NATS = "nats://127.0.0.1:4222"


def node_sim_argv(*argv: str) -> list[str]:
    args = build_parser().parse_args(["up", *argv])
    (sim,) = [child for child in plan_children(args, NATS) if child.name == "node-sim"]
    return sim.argv


def test_the_vgpu_flags_reach_node_sim_only_when_asked() -> None:
    argv = node_sim_argv("--vgpus-per-node", "2", "--vgpu-memory", "24576")
    at = argv.index("--vgpus-per-node")
    assert argv[at : at + 6] == ["--vgpus-per-node", "2", "--vgpu-memory", "24576", "--vgpu-split", "10"]
    assert "--vgpus-per-node" not in node_sim_argv()
