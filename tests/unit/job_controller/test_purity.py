"""The job controller's core stays pure: no I/O libraries, no event loop, no clock, no randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "services" / "job-controller" / "src" / "vc_job_controller"
PURE_DIRS = ("logic", "plugins")
BANNED_MODULES = {
    "asyncio",
    "nats",
    "kubernetes_asyncio",
    "aiohttp",
    "vc_bus",
    "vc_kube",
    "vc_runtime",
    "random",
    "time",
}
BANNED_CALLS = {"now", "utcnow", "today", "urandom", "uuid4"}
# The one module allowed to create randomness: the real ssh key generator, injected through PluginDeps.
RANDOMNESS_ALLOWED = {"keys.py"}


def pure_modules() -> list[Path]:
    return sorted(p for d in PURE_DIRS for p in (PACKAGE / d).rglob("*.py"))


def imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def called_names(tree: ast.AST) -> set[str]:
    return {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }


def test_there_are_pure_modules_to_check() -> None:
    assert len(pure_modules()) > 20


@pytest.mark.parametrize("module", pure_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_is_pure(module: Path) -> None:
    tree = ast.parse(module.read_text())
    assert not imported_roots(tree) & BANNED_MODULES
    if module.name not in RANDOMNESS_ALLOWED:
        assert not called_names(tree) & BANNED_CALLS
