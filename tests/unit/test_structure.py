"""The shape of the package: no import circle, no module over 400 lines, no unexplained
import inside a function.

An import circle is two modules each needing the other (directly or around a longer
loop): whichever is imported first sees the other half-built, so the code dodges it with
imports hidden in functions, and the floors of docs/ARCHITECTURE.md no longer say which
module stands on which. The graph here is read from the source with ``ast``: every import
counts, at module level, in a function or under ``TYPE_CHECKING``, and relative imports
(``from . import x``) are resolved, so a circle cannot hide from it.

An import inside a function is kept for a heavy or optional dependency (Ray, pyarrow,
Textual, watchfiles, or a raytop module that pulls one in) on a path that must stay
light, or for a module tests replace at call time; its reason is a comment on its line,
on the line directly above, or above the first of a run of imports that share it.
Anything else belongs at the top of its module.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import raytop

SRC = Path(raytop.__file__).parent
MAX_LINES = 400


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under ``root`` (its folder), by dotted name; a
    package's ``__init__.py`` is named as the package."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              known: dict[str, Path]) -> set[str]:  # fmt: skip
    """The modules of ``known`` that one import statement in ``module`` names."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            # ``from . import x`` in a package's __init__ is relative to the package itself.
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        # ``from pkg import name``: the submodule ``pkg.name`` if there is one, else ``pkg``.
        targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                   for alias in node.names]  # fmt: skip
    found = set()
    for target in targets:
        while target and target not in known:  # ``import pkg.mod.attr`` → ``pkg.mod``
            target = target.rpartition(".")[0]
        if target:
            found.add(target)
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports, anywhere in its source."""
    known = module_names(root, package)
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _imported(node, module, is_package, known)
        edges.discard(module)
        graph[module] = edges
    return graph


def import_cycles(root: Path, package: str) -> list[list[str]]:
    """The import circles of the package under ``root``: one per group of modules that
    reach each other (Tarjan's strongly connected components), each given as one loop
    through it, ``[a, b, …, a]``, so the message names the arrows to cut."""
    graph = import_graph(root, package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: a deep chain must not hit the recursion limit
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [_loop(graph, group) for group in groups]


def _loop(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """One loop through ``group`` from its first module back to it (breadth-first, so the
    shortest), staying inside the group."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return [*group, start]  # unreachable for a strongly connected group


def long_modules(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path: N lines`` for each module over ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


PRAGMAS = ("noqa", "type:", "fmt:", "pragma")


def _reasons(source: str) -> dict[int, bool]:
    """Line → whether a comment on it is the line's only content; pragma comments
    (``# noqa: F401``) give no reason and are left out."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = token.string.lstrip("#").strip()
            if text and not text.startswith(PRAGMAS):
                found[token.start[0]] = not token.line[: token.start[1]].strip()
    return found


def _local_imports(tree: ast.AST) -> list[tuple[ast.stmt, ast.stmt | None]]:
    """Each import inside a function body, with the statement just before it in the same
    block (None for a block's first)."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        in_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            previous = None
            for statement in block:
                if in_function and isinstance(statement, (ast.Import, ast.ImportFrom)):
                    found.append((statement, previous))
                previous = statement
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    return found


def unexplained_imports(root: Path) -> list[str]:
    """``path:line`` of each import inside a function with no reason: no comment on its
    lines or alone on the line above, and not in a run of imports whose first has one."""
    missing = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text()
        reasons = _reasons(source)
        explained: set[ast.stmt] = set()
        found = _local_imports(ast.parse(source, str(path)))
        for node, previous in sorted(found, key=lambda pair: pair[0].lineno):
            own = any(line in reasons for line in range(node.lineno, node.end_lineno + 1))
            above = reasons.get(node.lineno - 1, False)
            if own or above or previous in explained:
                explained.add(node)
            else:
                missing.append(f"{path.relative_to(root)}:{node.lineno}")
    return missing


def test_raytop_has_no_import_circle():
    cycles = import_cycles(SRC, "raytop")
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_circle_check_finds_a_planted_circle(tmp_path):
    """The positive control: two modules that import each other, one through a relative
    import at module level, the other inside a function, are one circle."""
    package = tmp_path / "planted"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text("from . import second\n")
    (package / "second.py").write_text("def late():\n    from planted.first import x\n")
    (package / "apart.py").write_text("import planted.second\n")
    assert import_cycles(package, "planted") == [["planted.first", "planted.second",
                                                  "planted.first"]]  # fmt: skip
    (package / "second.py").write_text("def late():\n    return 1\n")
    assert import_cycles(package, "planted") == []


def test_no_module_is_over_400_lines():
    assert not long_modules(SRC), f"over {MAX_LINES} lines: " + ", ".join(long_modules(SRC))


def test_the_length_check_names_a_long_module(tmp_path):
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert long_modules(tmp_path) == [f"long.py: {MAX_LINES + 1} lines"]


def test_every_import_in_a_function_says_why():
    missing = unexplained_imports(SRC)
    assert not missing, "imports in a function without a reason comment: " + ", ".join(missing)


def test_the_reason_check_names_a_planted_import(tmp_path):
    """The positive control: a bare import in a function is named, as is one whose only
    comment is a pragma or sits after code on the line above; one with a reason, or in a
    run under one, or at module level, is not."""
    (tmp_path / "planted.py").write_text(
        "import os\n"
        "def f():\n"
        "    # heavy: both\n"
        "    import ray\n"
        "\n"
        "    import pyarrow\n"
        "    x = 1  # a comment after code\n"
        "    import json\n"
        "    import csv  # noqa: F401\n"
        "def g():\n"
        "    import pyarrow.fs  # heavy\n"
        "    import textwrap\n"
    )
    assert unexplained_imports(tmp_path) == ["planted.py:8", "planted.py:9"]
