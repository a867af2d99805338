"""The layering, checked on the source: which of our packages may import what (an AST walk, no imports
run). Each test names the rule it holds; add rules here as the tree is reshaped."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEDULING = ROOT / "libs" / "scheduling" / "src" / "vc_scheduling"
IO_ROOTS = frozenset({"asyncio", "nats", "aiohttp", "kubernetes_asyncio"})
ADAPTERS = frozenset({"vc_bus", "vc_runtime", "vc_kube"})


def imported_roots(path: Path) -> set[str]:
    """Top-level package of every absolute import in the module, wherever it sits (lazy imports too)."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def modules(*folders: Path) -> list[Path]:
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


def packages(under: str) -> dict[str, Path]:
    """`vc_x` -> its source folder, for every package under libs/ or services/."""
    return {src.name: src for src in sorted((ROOT / under).glob("*/src/vc_*")) if src.is_dir()}


def offenders(paths: Iterable[Path], forbidden: frozenset[str]) -> dict[str, list[str]]:
    found = {str(p.relative_to(ROOT)): sorted(imported_roots(p) & forbidden) for p in paths}
    return {path: roots for path, roots in found.items() if roots}


def test_the_scheduling_core_imports_no_event_loop_transport_or_adapter() -> None:
    files = modules(SCHEDULING)
    assert len(files) > 30  # the walk found the package (a moved folder would make this vacuous)
    assert offenders(files, IO_ROOTS | ADAPTERS) == {}


SCHEDULER_PURE = ("planning.py", "sharding.py", "ledger.py", "gangs.py", "status_policy.py")
CLOCK_CALLS = frozenset({"now", "utcnow", "today", "time", "monotonic", "perf_counter", "time_ns", "monotonic_ns"})


def called_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


@pytest.mark.parametrize("name", SCHEDULER_PURE)
def test_the_pure_scheduler_shell_modules_import_no_transport_and_read_no_clock(name: str) -> None:
    """Documented PURE: they run in the cycle's worker thread, or decide on times they are given."""
    path = ROOT / "services" / "scheduler" / "src" / "vc_scheduler" / name
    assert offenders([path], IO_ROOTS | ADAPTERS) == {}
    assert not called_names(path) & CLOCK_CALLS


def test_vc_core_imports_no_event_loop_transport_or_adapter() -> None:
    assert offenders(modules(ROOT / "libs" / "core" / "src" / "vc_core"), IO_ROOTS | ADAPTERS) == {}


def test_the_kube_adapter_does_not_import_the_runtime() -> None:
    """vc_runtime opens the kube store for `--backend kube`; the reverse would be a package cycle."""
    assert offenders(modules(ROOT / "libs" / "kube" / "src" / "vc_kube"), frozenset({"vc_runtime"})) == {}


@pytest.mark.parametrize("lib", sorted(packages("libs")))
def test_a_lib_imports_no_service(lib: str) -> None:
    services = frozenset(packages("services"))
    assert services  # the walk found the services
    assert offenders(modules(packages("libs")[lib]), services) == {}


@pytest.mark.parametrize("service", sorted(packages("services")))
def test_a_service_imports_no_other_service(service: str) -> None:
    others = frozenset(packages("services")) - {service}
    assert offenders(modules(packages("services")[service]), others) == {}
