"""Import cycles among gpuviz's modules and its in-function imports, the figures issue 24 tracks.

    .venv/bin/python bench/import_graph.py [--cycles] [--per-module]

* cycles: strongly connected components (more than one module) of the import graph that grimp (import-linter's
  graph library) builds from every ``import`` statement, in-function imports included, so an import hidden in a
  function to dodge a cycle at import time still counts as the arrow it is.
* in-function imports: ``import``/``from ... import`` statements inside a function body; "own" are those of a
  ``gpuviz`` module (absolute or relative), the rest are of other packages (numpy, PySide6, kernels ...).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "gpuviz"


def strongly_connected(graph) -> list[list[str]]:
    """Tarjan's algorithm over grimp's graph; components of more than one module, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative: the graph is deep enough to matter for recursion on small stacks
        nonlocal counter
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return sorted(components, key=len, reverse=True)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_module(node: ast.Import | ast.ImportFrom, here: str, is_package: bool) -> list[str]:
    """The absolute names a statement imports from (one per alias for ``import a, b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level == 0:
        return [node.module or ""]
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return [".".join(base + ([node.module] if node.module else []))]


class _InFunctionImports(ast.NodeVisitor):
    """Collects the import statements that sit inside a function body (at any depth)."""

    def __init__(self):
        self.depth = 0
        self.found: list[ast.Import | ast.ImportFrom] = []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node):
        if self.depth:
            self.found.append(node)

    visit_ImportFrom = visit_Import


def in_function_imports(package_dir: Path) -> tuple[Counter, Counter]:
    """(own, other): in-function import statements per module, of gpuviz's own modules and of anything else."""
    own: Counter = Counter()
    other: Counter = Counter()
    for path in sorted(package_dir.rglob("*.py")):
        here = module_name(path)
        visitor = _InFunctionImports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for node in visitor.found:
            targets = imported_module(node, here, path.name == "__init__.py")
            if any(t == PACKAGE or t.startswith(PACKAGE + ".") for t in targets):
                own[here] += 1
            else:
                other[here] += 1
    return own, other


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", action="store_true", help="list the modules of each cycle")
    ap.add_argument("--per-module", action="store_true", help="in-function imports of gpuviz modules, per module")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(PACKAGE)
    cycles = strongly_connected(graph)
    own, other = in_function_imports(ROOT / PACKAGE)
    print(f"modules: {len(graph.modules)}")
    print(f"import cycles (strongly connected components, in-function imports counted): {len(cycles)}"
          f" ({', '.join(str(len(c)) for c in cycles) or 'none'} modules)")
    if args.cycles:
        for c in cycles:
            print("  " + " ".join(c))
    print(f"in-function imports of gpuviz modules: {sum(own.values())} in {len(own)} modules;"
          f" of other packages: {sum(other.values())}; all: {sum(own.values()) + sum(other.values())}"
          f" in {len(set(own) | set(other))} modules")
    if args.per_module:
        for name, n in own.most_common():
            print(f"  {n:4d} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
