"""The scheduling core is pure: no event loop, no transport, no sockets, no clock or file access."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "libs" / "sched_core" / "src" / "vc_sched_core"
PURE = ["snapshot", "framework", "actions", "plugins", "cycle.py"]
FORBIDDEN = {
    "asyncio",
    "nats",
    "aiohttp",
    "kubernetes_asyncio",
    "vc_bus",
    "vc_kube",
    "vc_runtime",
    "socket",
    "threading",
}


def _modules() -> list[Path]:
    files: list[Path] = []
    for name in PURE:
        path = PACKAGE / name
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_pure_module_imports_no_io(path: Path) -> None:
    assert not _imported_roots(path) & FORBIDDEN


CLOCK_AND_FILE_CALLS = {"open", "now", "utcnow", "today", "time", "read_text", "read_bytes", "write_text"}


def _calls(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_pure_module_never_reads_the_clock_or_files(path: Path) -> None:
    assert not _calls(path) & CLOCK_AND_FILE_CALLS
