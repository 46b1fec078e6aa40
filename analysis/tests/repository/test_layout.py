"""The package's layout rules (README "Layout"): no import cycle between perfgate's modules, counting
the imports inside functions too (an import moved into a function to dodge a cycle is still one),
no module over 400 lines, a small core at the top, and the direction of the imports between its rooms
(the subpackages): ALLOWED below, as data."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "analysis" / "perfgate"
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
    assert graph["perfgate.gate.run"] >= {"perfgate.latency.run", "perfgate.latency.check", "perfgate.gate.plan"}
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


# The rooms of the package: "core" is the modules at the top (but cli, which only dispatches, and
# __main__, `python -m perfgate`, which only calls it), every
# other room a subpackage. A room may import itself, and the rooms listed here; nothing else.
CORE_MODULES = {"claims", "cli_types", "clock", "csv_lines", "errors", "files", "junit_writer", "model", "outcome",
                "outputs", "plausibility", "pools", "process_group", "schema", "temporaries"}
ALLOWED = {
    "escape": set(),  # pure functions of text, under everything
    "core": {"escape"},  # junit_writer: XML text made safe
    "plotting": {"core", "latency", "topology"},  # latency.check_terms: the words of a check its plots show; topology.names
    "report": {"core", "escape", "latency"},  # what a check, an experiment folder, a request are
    "fastdds": {"core", "escape"},
    "measure": {"core", "escape", "fastdds", "throughput"},  # throughput.table, .files: what a test counted
    "latency": {"core", "escape", "fastdds", "measure", "plotting", "throughput"},
    "throughput": {"core", "fastdds", "latency", "measure", "plotting"},
    "ab": {"core", "escape", "fastdds", "latency", "measure", "plotting", "report", "throughput"},
    # topology: the names and typed metadata of the stored topology runs, their figures (topology.target)
    "history": {"ab", "bisect", "core", "escape", "latency", "plotting", "store", "throughput", "topology"},
    "store": {"core", "escape", "fastdds", "history", "latency", "throughput", "topology"},
    "gate": {"ab", "core", "escape", "fastdds", "history", "latency", "measure", "report", "store", "throughput",
             "topology"},
    "bisect": {"ab", "core", "escape", "fastdds", "plotting", "report"},  # builds, A/Bs, their verdict; its report
    # the harness, its supervision and sampling; latency.requirements: targets derived as latency's requirements
    # ab: the A/B's arms and its decision (topology.ab, ab_verdict: the latency A/B's sign test and Holm)
    "topology": {"ab", "core", "escape", "fastdds", "latency", "measure", "plotting", "report"},  # report.bounds: an undefined bound as every table says it
    # constants their options show: cpu_latency.CHOICES, store's branch, the gate's default threshold, topology.names
    "commands": {"core", "gate", "measure", "store", "topology"},
    # the determine-* code of every file it derives, the measuring commands' options, gate.budget's levels
    # and fastdds: the known-good build's layout variants (perfgate build --layouts), its layout A/Bs' arms
    "calibrate": {"ab", "commands", "core", "escape", "fastdds", "gate", "latency", "measure", "throughput",
                  "topology"},
    "cli": {"core", "commands"},  # the work by name ("module:function"), imported when its command runs
}
# What measures (runs Fast DDS, builds it, drives the harness): the core, report/, plotting/ and escape/
# import none of it, so that reading and drawing results never starts a measurement.
MEASURING = ("perfgate.measure", "perfgate.fastdds", "perfgate.latency.run", "perfgate.throughput.run",
             "perfgate.ab.latency", "perfgate.ab.throughput", "perfgate.ab.turns", "perfgate.gate")


def room(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and not (PACKAGE / parts[1]).is_dir()):
        return "cli" if parts[1:] in (["cli"], ["__main__"]) else "core"
    return parts[1]


def test_the_core_is_small_and_every_room_is_known():
    top = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "__main__", "cli"}
    assert top == CORE_MODULES and len(top) <= 15
    rooms = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert rooms | {"core", "cli"} == set(ALLOWED)
    for folder in PACKAGE.glob("*/__init__.py"):
        assert '"""' in folder.read_text(encoding="utf-8"), f"{folder}: say what the room owns and may import"


def test_every_import_between_rooms_is_allowed():
    graph = import_graph()
    wrong = sorted((module, target) for module, targets in graph.items() for target in targets
                   if room(module) != room(target) and room(target) not in ALLOWED[room(module)])
    assert wrong == []


def test_reading_and_drawing_results_imports_no_measuring_code():
    graph = import_graph()
    wrong = sorted((module, target) for module, targets in graph.items() for target in targets
                   if room(module) in {"core", "report", "plotting", "escape"}
                   and any(target == m or target.startswith(m + ".") for m in MEASURING))
    assert wrong == []


def test_cli_only_dispatches():
    """cli.py imports no room but commands/: the work of a command is imported when that command runs."""
    assert {room(target) for target in import_graph()["perfgate.cli"]} <= {"core", "commands"}


def with_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph plus what importing a module also runs: the __init__ of each package above it (importing
    perfgate.report.x runs perfgate/report/__init__.py first), but for the importer's own packages, which
    are already being imported when it runs."""
    whole = {}
    for module, targets in graph.items():
        own = {".".join(module.split(".")[:end]) for end in range(1, len(module.split(".")) + 1)}
        inits = {".".join(target.split(".")[:end]) for target in targets for end in range(2, len(target.split(".")))}
        whole[module] = targets | {init for init in inits if init in graph and init not in own}
    return whole


def test_no_import_cycle_through_a_package_init():
    """A package whose __init__ imports its modules (report/) must not be imported by what it imports:
    `from ..report import x` in a module report/__init__ reaches would fail when that module is imported first."""
    assert cycles(with_package_inits(import_graph())) == []


def test_every_command_names_a_function_that_exists():
    """Each commands/ module's HANDLER ("module:function", imported only when the command runs) names
    a function that is there: a module moved or renamed without its command would fail only when run."""
    import importlib

    from perfgate import cli
    for command in cli.COMMANDS:
        module_name, function_name = command.HANDLER.split(":")
        assert callable(getattr(importlib.import_module(module_name), function_name)), command.NAME
    assert [command.NAME for command in cli.COMMANDS] == list(cli.build_parser().command_parsers)


# Test folders beyond the package's rooms: the command line's bad input and usage errors as a whole, the
# top-level (core) modules, and the repository itself (layout, packaging, workflows, Jenkinsfile).
TEST_FOLDERS_BEYOND_ROOMS = {"commands", "core", "repository"}


def test_tests_mirror_the_package():
    """Every test file sits in a folder named after a room of the package (or one of the three above);
    support modules sit beside conftest.py; no test file imports another (pytest puts each test folder
    on sys.path only when it collects it, so such an import breaks a run of one file)."""
    tests = REPO_ROOT / "analysis" / "tests"
    rooms = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert sorted(path.name for path in tests.glob("test_*.py")) == []
    folders = {path.parent.name for path in tests.glob("*/test_*.py")}
    assert folders <= rooms | TEST_FOLDERS_BEYOND_ROOMS, folders - rooms - TEST_FOLDERS_BEYOND_ROOMS
    assert not list(tests.glob("*/__init__.py")) and not list(tests.glob("*/conftest.py"))
    test_names = {path.stem for path in tests.glob("*/test_*.py")}
    for path in tests.glob("**/*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            imported = (node.module or "") if isinstance(node, ast.ImportFrom) else None
            names = [imported] if imported is not None else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            assert not set(names) & test_names, f"{path.relative_to(tests)} imports a test file: {names}"
