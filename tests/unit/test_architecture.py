"""The layering. The rules live in one place, the import-linter contracts in pyproject.toml, which `make lint`
checks; these tests run the same contracts, make sure they name every package and pure folder on disk (a new
package cannot slip past them), and hold the one rule an import graph cannot: pure scheduler modules read
no clock."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_FOLDERS = frozenset({"logic", "framework", "actions", "plugins"})
CLOCK_CALLS = frozenset({"now", "utcnow", "today", "time", "monotonic", "perf_counter", "time_ns", "monotonic_ns"})


def importlinter_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return config


def contract(contract_id: str) -> dict[str, Any]:
    (found,) = (c for c in importlinter_config()["contracts"] if c["id"] == contract_id)
    return found


def packages(under: str) -> dict[str, Path]:
    """`vc_x` -> its source folder, for every package under libs/ or services/ (or proto/)."""
    return {src.name: src for src in sorted((ROOT / under).glob("*/src/vc_*")) if src.is_dir()}


def module_path(module: str) -> Path:
    """The file or folder of a dotted module of ours."""
    top, *rest = module.split(".")
    sources = packages("libs") | packages("services") | {"vc_proto": ROOT / "proto" / "src" / "vc_proto"}
    path = sources[top].joinpath(*rest)
    return path if path.is_dir() else path.with_suffix(".py")


def test_the_import_contracts_hold() -> None:
    """Through the same script `make lint` runs (the linter has a venv of its own, see scripts/lint)."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lint" / "import_contracts.py")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_the_contracts_know_every_package() -> None:
    libs, services = set(packages("libs")), set(packages("services"))
    assert len(libs) >= 8 and len(services) >= 9  # the walk found the tree (a moved folder would make this vacuous)
    assert set(importlinter_config()["root_packages"]) == {"vc_proto"} | libs | services
    assert set(contract("proto-imports-nothing-of-ours")["forbidden_modules"]) == libs | services
    assert set(contract("libs-import-no-service")["source_modules"]) == libs
    assert set(contract("libs-import-no-service")["forbidden_modules"]) == services
    assert set(contract("services-are-independent")["modules"]) == services


def test_every_pure_folder_is_under_the_pure_contract() -> None:
    """logic/, framework/, actions/ and plugins/ are pure by the style guide, wherever they are."""
    pure = contract("pure-modules-do-no-io")["source_modules"]
    covered = [module_path(module) for module in pure]
    folders = [
        folder
        for src in (packages("libs") | packages("services")).values()
        for folder in src.rglob("*")
        if folder.is_dir() and folder.name in PURE_FOLDERS
    ]
    assert folders
    uncovered = [str(f.relative_to(ROOT)) for f in folders if not any(f == c or c in f.parents for c in covered)]
    assert uncovered == []
    assert all(path.exists() for path in covered), "a contract names a module that is gone"


def called_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


SCHEDULER_PURE = [m for m in contract("pure-modules-do-no-io")["source_modules"] if m.startswith("vc_scheduler.")]


@pytest.mark.parametrize("module", SCHEDULER_PURE)
def test_the_pure_scheduler_shell_modules_read_no_clock(module: str) -> None:
    """They run in the cycle's worker thread, or decide on times they are given."""
    assert not called_names(module_path(module)) & CLOCK_CALLS
