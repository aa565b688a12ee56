"""No import cycle among modules at import time, read from the source (nothing is imported).

Module-level imports count; those under ``if TYPE_CHECKING:`` and inside functions run
later, or never. import-linter (``make lint``, pyproject's ``[tool.importlinter]``) holds
the arrows between packages, the kit's and the features'; it counts every import and cannot
tell when one runs, which is this test's rule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "tenantplane"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    at_import_time: bool


def module_name(path: Path, root: Path = SOURCE) -> str:
    parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_modules(root: Path = SOURCE) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(body: list[ast.stmt], at_import_time: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Every statement, and whether it runs when the module is imported."""
    for statement in body:
        yield statement, at_import_time
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk(statement.body, False)
        elif isinstance(statement, ast.If) and _is_type_checking(statement.test):
            yield from _walk(statement.body, False)
            yield from _walk(statement.orelse, at_import_time)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(statement, field, []):
                    if isinstance(child, ast.stmt):
                        yield from _walk([child], at_import_time)
                    else:  # except handlers and match cases hold statements
                        yield from _walk(getattr(child, "body", []), at_import_time)


def _package_of(importer: str, path: Path) -> str:
    return importer if path.name == "__init__.py" else importer.rpartition(".")[0]


def _targets(
    statement: ast.Import | ast.ImportFrom, importer: str, path: Path, modules: set[str]
) -> list[str]:
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    base = statement.module or ""
    if statement.level:
        package = _package_of(importer, path)
        for _ in range(statement.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    # `from package import name` imports the submodule when there is one, else the package.
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
        for alias in statement.names
    ]


def imports(root: Path = SOURCE) -> list[Import]:
    modules = source_modules(root)
    names = set(modules)
    found: list[Import] = []
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for statement, at_import_time in _walk(tree.body, True):
            if not isinstance(statement, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(statement, importer, path, names):
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    found.append(Import(importer, target, at_import_time))
    return found


def cycles(found: list[Import]) -> list[list[str]]:
    """Strongly connected components of the import-time graph that hold a cycle (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for item in found:
        if item.at_import_time and item.imported != item.importer:
            graph.setdefault(item.importer, set()).add(item.imported)
            graph.setdefault(item.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_import_cycle_at_import_time() -> None:
    assert cycles(imports()) == []


# The checks themselves, on a small made-up package: each must be able to fail.


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("second", "expected"),
    [
        ("from tenantplane.a import thing\n", [["tenantplane.a", "tenantplane.b"]]),
        ("from . import a\n", [["tenantplane.a", "tenantplane.b"]]),
        ("def f():\n    from tenantplane.a import thing\n", []),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tenantplane.a\n", []),
    ],
)
def test_only_import_time_cycles_count(
    tmp_path: Path, second: str, expected: list[list[str]]
) -> None:
    root = _package(
        tmp_path, {"__init__.py": "", "a.py": "import tenantplane.b\nthing = 1\n", "b.py": second}
    )
    assert cycles(imports(root)) == expected
