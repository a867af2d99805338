"""The dashboard's layering, on its source: pure views and templates import no I/O, and the only store
it is given is the read-only one."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "services" / "dashboard" / "src" / "vc_dashboard"
IO = frozenset({"asyncio", "nats", "aiohttp", "kubernetes_asyncio", "vc_bus", "vc_runtime", "vc_kube"})


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_pure_views_and_the_templates_import_no_event_loop_transport_or_adapter() -> None:
    files = sorted([*(PACKAGE / "logic").glob("*.py"), *(PACKAGE / "render").glob("*.py"), PACKAGE / "sse.py"])
    assert len(files) >= 9  # the walk found the modules
    assert {str(p.relative_to(PACKAGE)): sorted(imported_roots(p) & IO) for p in files if imported_roots(p) & IO} == {}


def test_the_store_reaches_the_dashboard_only_wrapped_read_only() -> None:
    """Every use of the service context's store in the package is `ReadOnlyStore(ctx.store)`."""
    uses = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        wrapped = {
            id(arg)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ReadOnlyStore"
            for arg in node.args
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "store" and isinstance(node.value, ast.Name):
                uses.append((path.name, node.value.id, id(node) in wrapped))
    assert uses == [("app.py", "ctx", True)]


def test_templates_never_turn_escaping_off() -> None:
    templates = sorted((PACKAGE / "templates").glob("*.html"))
    assert templates
    for template in templates:
        text = template.read_text()
        assert "|safe" not in text.replace(" ", "") and "autoescape false" not in text, template.name
        assert "<script>" not in text and "style=" not in text, template.name  # the CSP allows neither
