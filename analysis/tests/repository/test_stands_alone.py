"""The repository stands alone: no file in it refers to a path outside it. A clone with nothing beside it
must install, test and run; a test that read `../shared/...` passed only where a machine happened to lay
that folder beside the clone (issue 22)."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

from conftest import FASTDDS_FIXTURES, REPO_ROOT

# Folders that only ever existed beside a checkout: naming one is reaching outside.
OUTSIDE_NAMES = re.compile(r"\.\./shared\b|\bshared/(?:fixtures|seeds|reference)\b|\bCONTRACT\.md\b")
# A shell script's own folder followed by `..` steps: "$(dirname "${BASH_SOURCE[0]}")/../.."
SHELL_UP = re.compile(r"""dirname "\$\{BASH_SOURCE\[0\]\}"\)"?((?:/\.\.)+)""")
# Going above a variable that holds the repository's root: "$root/..", REPO_ROOT.parent
ROOT_UP = re.compile(r"""\$\{?(?:root|ROOT|repo|REPO_ROOT)\}?/\.\.|\b(?:REPO_ROOT|ROOT|repo_root)\.parent\b""")


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z"], capture_output=True, check=True
                           ).stdout.decode().split("\0")
    found = []
    for name in filter(None, names):
        path = REPO_ROOT / name
        if FASTDDS_FIXTURES in path.parents or not path.is_file():
            continue  # the data itself; a file deleted in the work tree but not yet in git
        data = path.read_bytes()
        if b"\0" not in data[:8192]:
            found.append(path)
    return found


def levels_below_root(path: Path) -> int:
    return len(path.relative_to(REPO_ROOT).parts) - 1


def file_relative_folders(tree: ast.AST) -> dict[int, int]:
    """Line -> the most levels up from the file's own folder that a `Path(__file__)...parents[N]` or
    `.parent.parent` chain on it reaches."""
    found: dict[int, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Attribute, ast.Subscript)):
            continue
        up, inner = 0, node
        # Walk down the chain of .parent / .parents[N] / .resolve() to what it starts from.
        while True:
            if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Attribute) \
                    and inner.value.attr == "parents" and isinstance(inner.slice, ast.Constant):
                up += inner.slice.value + 1
                inner = inner.value.value
            elif isinstance(inner, ast.Attribute) and inner.attr == "parent":
                up += 1
                inner = inner.value
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in ("resolve", "absolute"):
                inner = inner.func.value
            else:
                break
        starts_at_file = isinstance(inner, ast.Call) and any(
            isinstance(arg, ast.Name) and arg.id == "__file__" for arg in inner.args)
        if starts_at_file and up:
            # the first step up is the file's own folder; a chain's inner links count less
            found[node.lineno] = max(found.get(node.lineno, 0), up - 1)
    return found


def test_the_published_measurements_are_in_the_repository_with_their_licence():
    licence = (FASTDDS_FIXTURES / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    readme = (FASTDDS_FIXTURES / "README.md").read_text()
    assert "eProsima/benchmarking" in readme and "Apache License 2.0" in readme
    assert REPO_ROOT in FASTDDS_FIXTURES.parents
    summary = (FASTDDS_FIXTURES / "v193" / "summary_intraprocess.csv").read_text()
    assert summary.startswith("Bytes,Samples,Max,Min,Mean,Median") and len(summary.splitlines()) == 12


def test_no_file_names_a_folder_beside_the_checkout():
    offenders = [f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
                 for path in tracked_text_files() if path != Path(__file__).resolve()
                 for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
                 if OUTSIDE_NAMES.search(line) or ROOT_UP.search(line)]
    assert offenders == []


def test_no_python_file_climbs_above_the_repository():
    offenders = []
    for path in tracked_text_files():
        if path.suffix != ".py":
            continue
        for line, up in file_relative_folders(ast.parse(path.read_text(), str(path))).items():
            if up > levels_below_root(path):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{line}: {up} folder(s) up")
    assert offenders == []


def test_no_shell_script_climbs_above_the_repository():
    offenders = []
    for path in tracked_text_files():
        text = path.read_text(errors="replace")
        if not (path.suffix == ".sh" or text.startswith("#!/usr/bin/env bash") or path.name == "run"):
            continue
        for match in SHELL_UP.finditer(text):
            if match.group(1).count("..") > levels_below_root(path):
                offenders.append(f"{path.relative_to(REPO_ROOT)}: {match.group(0)}")
    assert offenders == []


def test_the_checks_above_see_what_they_are_looking_for():
    # The detectors themselves, on lines that do climb out (so that an empty offender list means something).
    assert ROOT_UP.search('FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"')
    assert OUTSIDE_NAMES.search("cp -r ../shared/fixtures x") and ROOT_UP.search('cd "$root/.."')
    tree = ast.parse("ROOT = Path(__file__).resolve().parents[3]\nUP = Path(__file__).parent.parent\n")
    assert file_relative_folders(tree) == {1: 3, 2: 1}
    assert SHELL_UP.search('cd "$(dirname "${BASH_SOURCE[0]}")/../.."').group(1) == "/../.."
