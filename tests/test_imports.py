"""The package's own imports: no circle, and nothing inside imports the package root.

Read from the source of every module of the installed package (an AST walk,
so an import inside a function counts as much as one at the top; only those
under ``if TYPE_CHECKING:`` do not, as they never run)."""

from __future__ import annotations

import ast
from pathlib import Path

import backoff_iter

ROOT = "backoff_iter"


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package under *package*, by dotted name."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _running(tree: ast.AST) -> list[ast.AST]:
    """The nodes of *tree* that run: not the body of an ``if TYPE_CHECKING:``."""
    nodes, stack = [], [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                stack.extend(child.orelse)
                continue
            stack.append(child)
    return nodes


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that module *name* imports when it runs: ``from
    x import y`` names the module ``x.y`` if there is one, else ``x`` itself."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _running(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                while parts and ".".join(parts) not in known:
                    parts.pop()
                if parts:
                    found.add(".".join(parts))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*base, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    found.add(f"{base}.{alias.name}")
                elif base in known:
                    found.add(base)
    found.discard(name)
    return found


def graph(package: Path) -> dict[str, set[str]]:
    """Each module of the package, and the package's modules it imports."""
    paths = modules(package)
    known = set(paths)
    return {name: imports(name, path, known) for name, path in paths.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of *edges*: its strongly connected parts of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_package_imports_a_module_that_imports_it_back():
    """No import circle in backoff_iter/, lazy imports inside functions included."""
    found = circles(graph(Path(backoff_iter.__file__).parent))
    assert found == [], f"import circles: {found}"


def test_no_module_inside_the_package_imports_the_package_root():
    """No module of backoff_iter/ imports backoff_iter itself (from .. import x, import backoff_iter)."""
    edges = graph(Path(backoff_iter.__file__).parent)
    upward = sorted(name for name, targets in edges.items() if name != ROOT and ROOT in targets)
    assert upward == [], f"importing the root: {upward}"


def test_the_fleet_and_the_parts_it_serves_import_one_way():
    """The budgets, breaker and throttle never import the fleet, even lazily; the fleet imports them."""
    edges = graph(Path(backoff_iter.__file__).parent)
    for part in ("budgets", "breakers", "throttles", "_stores"):
        assert not any(t.startswith("backoff_iter.fleet") for t in edges[f"backoff_iter.{part}"])
    assert "backoff_iter.budgets" in edges["backoff_iter.fleet._budgets"]


def test_the_walk_finds_a_circle_an_upward_import_and_a_lazy_one(tmp_path):
    """A made-up package: a lazy import back, a module importing the root, and TYPE_CHECKING imports that do not count."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import a\nversion = 1\n")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def later():\n    from ..a import x\n")
    (package / "c.py").write_text("from . import version\nfrom typing import TYPE_CHECKING\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n"
    )
    edges = graph(package)
    assert edges["pkg.a"] == {"pkg.sub.b"} and edges["pkg.sub.b"] == {"pkg.a"}
    assert edges["pkg.c"] == {"pkg"} and edges["pkg.d"] == set()
    assert circles(edges) == [["pkg.a", "pkg.sub.b"]]
