"""The package's layout rules (README "Layout"): no import cycle between perfgate's modules, counting
the imports inside functions too (an import moved into a function to dodge a cycle is still one),
and no module over 400 lines."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "perfgate"
MAX_LINES = 400


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its text (top level or in a function)."""
    modules = {module_name(path, package): path for path in package.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        own_package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = own_package.split(".")[:len(own_package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # `from . import x` names the module x; `from .x import y` the module x
                found |= {f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target
                          for alias in node.names}
            elif isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
        graph[name] = {target for target in found if target in modules and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 50  # the whole package was read
    assert graph["perfgate.gate"] >= {"perfgate.run", "perfgate.check", "perfgate.gate_plan"}
    assert cycles(graph) == []


def test_an_import_cycle_is_found_even_inside_a_function(tmp_path):
    package = tmp_path / "perfgate"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def late():\n    from .sub.c import thing\n")
    (package / "sub" / "c.py").write_text("from ..a import x\n")
    (package / "d.py").write_text("import perfgate.a\n")
    graph = import_graph(package)
    assert graph["perfgate.b"] == {"perfgate.sub.c"} and graph["perfgate.d"] == {"perfgate.a"}
    assert cycles(graph) == [["perfgate.a", "perfgate.b", "perfgate.sub.c"]]
    (package / "b.py").write_text("def late():\n    return 1\n")
    assert cycles(import_graph(package)) == []


def test_no_module_is_over_400_lines():
    lengths = {module_name(path): len(path.read_text(encoding="utf-8").splitlines()) for path in PACKAGE.rglob("*.py")}
    assert {name: length for name, length in lengths.items() if length > MAX_LINES} == {}
