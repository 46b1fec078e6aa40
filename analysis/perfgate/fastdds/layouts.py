"""fastdds.layouts: one build's Fast DDS library linked again with its object files in other orders.

Where the linker places code moves a latency by several per cent with no change to the code (on
the Intel host, a reversed link order moves the TCP sub-experiments +4 %, docs/verdict.md). One
build is one draw of that layout, so an A/B of two builds compares two draws. `perfgate build
--layouts N` links the library N more times from the objects the build just compiled, each time
in another order, and keeps each beside the kept install as WS/installs/<commit>/layouts/<seed>/:
a copy of the install (hard links) with that library in place of its own and its own build record.
`perfgate ab --layouts N` rotates the rounds through them, the same seed in both arms of a round,
so that the verdict compares the two commits over N layouts each instead of one.

The order of seed k sorts the objects by sha256("k:<object path>"): the same for both commits of
an A/B wherever they have the same objects, and the same on every Python.
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from .. import files
from .. import schema as s
from ..errors import IncompleteError, InputError
from .colcon import ORIGIN_RPATH, linked_libraries
from .harness import LATENCY_EXECUTABLE

LAYOUTS_DIR = "layouts"
MAX_LAYOUTS = 64  # each is a 15 MB library; more rounds than any A/B has
ORDER = "object files sorted by sha256 of '<seed>:<object path>', linked again with the build's own command"
_RPATH = "-Wl,-rpath,"
LINK_TIMEOUT_S = 600
# The cache line: code a commit adds or removes elsewhere moves every later function by whole lines, so a
# layout-only change no longer moves TCP 7 % on the Intel host (docs/verdict.md "Code layout averaged, and
# pinned"); the platforms' layout files are derived from builds made so.
DEFAULT_ALIGN_FUNCTIONS = 64


def check_layouts(layouts: int | None) -> int:
    """--layouts of `perfgate build`, `ab`, `ab-throughput` and `gate`: 0 (default) to MAX_LAYOUTS."""
    count = 0 if layouts is None else int(layouts)
    if not 0 <= count <= MAX_LAYOUTS:
        raise InputError(f"--layouts must be from 0 to {MAX_LAYOUTS}, got {count}")
    return count


def check_alignment(align_functions: int | None) -> int:
    """`perfgate build --align-functions N`: DEFAULT_ALIGN_FUNCTIONS when not given, 0 (the compiler's own) or
    a power of two from 16 to 4096."""
    value = DEFAULT_ALIGN_FUNCTIONS if align_functions is None else int(align_functions)
    if value and not (16 <= value <= 4096 and value & (value - 1) == 0):
        raise InputError(f"--align-functions must be 0 or a power of two from 16 to 4096, got {value}")
    return value


def check_count(layouts: int | None, keep_installs: int) -> int:
    """`perfgate build --layouts`: they are kept in the kept install."""
    count = check_layouts(layouts)
    if count and keep_installs < 1:
        raise InputError("--layouts needs a kept install to keep them in: --keep-installs 1 or more")
    return count


def link_script(workspace: Path, package: str) -> Path:
    """The link command CMake wrote for the Fast DDS library (Makefile generator)."""
    return Path(workspace) / "build" / package / "src" / "cpp" / "CMakeFiles" / f"{package}.dir" / "link.txt"


def shuffled_command(script: str, seed: int, output: str) -> list[str]:
    """The library's link command with its object files in seed's order, writing `output`, its run path
    the install's ($ORIGIN/../lib), not the build tree's."""
    lines = [line for line in script.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ValueError(f"a link script of one command expected, found {len(lines)}")
    arguments = shlex.split(lines[0])
    objects = [i for i, argument in enumerate(arguments) if argument.endswith(".o")]
    if len(objects) < 2 or objects != list(range(objects[0], objects[-1] + 1)):
        raise ValueError("the object files are not one run of arguments")
    if arguments.count("-o") != 1:
        raise ValueError("no single -o in the link command")
    ordered = sorted((arguments[i] for i in objects),
                     key=lambda name: hashlib.sha256(f"{seed}:{name}".encode()).hexdigest())
    command = arguments[:objects[0]] + ordered + arguments[objects[-1] + 1:]
    command[command.index("-o") + 1] = output
    return [(_RPATH + ORIGIN_RPATH) if argument.startswith(_RPATH) else argument for argument in command]


def _hard_link_copy(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True, copy_function=os.link,
                    ignore=lambda folder, names: [LAYOUTS_DIR] if Path(folder) == source else [])


def make_layouts(workspace: Path, record: dict, copy: Path, final: Path, count: int,
                 kept_record) -> dict:
    """Write copy/layouts/1..count (copy becomes `final` once complete); each one's record is
    kept_record(record, folder, workspace, library) with its `layout`. Returns the `layouts` entry of
    the install's record. IncompleteError when the library cannot be linked again."""
    package = (record.get("fastdds") or {}).get("package") or "fastrtps"
    script_path = link_script(workspace, package)
    try:
        script = script_path.read_text()
        library = Path(record["fastdds_library"]).resolve()
        folder = library.parent
        relative = folder.relative_to((Path(workspace) / "install").resolve())
        real_name = library.name
    except (OSError, KeyError, TypeError, ValueError) as error:
        raise IncompleteError(f"cannot link the library again: {error}", script_path) from error
    for seed in range(1, count + 1):
        layout = copy / LAYOUTS_DIR / str(seed)
        _hard_link_copy(copy, layout)
        target = layout / relative / real_name
        target.unlink()  # a hard link to the build's library: replaced, never written through
        try:
            command = shuffled_command(script, seed, str(target))
        except ValueError as error:
            raise IncompleteError(f"cannot link the library again: {error}", script_path) from error
        try:
            done = subprocess.run(command, cwd=script_path.parents[2], capture_output=True, text=True,
                                  timeout=LINK_TIMEOUT_S)
        except subprocess.TimeoutExpired as error:
            raise IncompleteError(f"linking layout {seed} took over {LINK_TIMEOUT_S} s", script_path) from error
        if done.returncode != 0 or not target.is_file():
            said = "; ".join(line.strip() for line in (done.stderr or "").strip().splitlines()[-3:])
            raise IncompleteError(f"linking layout {seed} failed (exit {done.returncode}): {said[-400:]}", script_path)
        loaded = linked_libraries(layout / "bin" / LATENCY_EXECUTABLE)
        if not any(path is not None and Path(path).resolve() == target.resolve() for path in loaded.values()):
            raise IncompleteError(f"the harness of layout {seed} does not load its own library", target)
        entry = {"seed": seed, "of": count, "order": ORDER}
        own = kept_record(record, final / LAYOUTS_DIR / str(seed), workspace,
                          str(final / LAYOUTS_DIR / str(seed) / relative / real_name))
        files.write_text(layout / s.BUILD_RECORD_FILE, json.dumps({**own, "layout": entry}, indent=2,
                                                                  sort_keys=True) + "\n")
    return {"count": count, "order": ORDER}


def layout_folders(install: Path, count: int, option: str) -> list[Path]:
    """The first `count` layouts of a kept install, for `perfgate ab --layouts`; InputError naming the
    install when it has fewer."""
    try:
        record = json.loads((Path(install) / s.BUILD_RECORD_FILE).read_text())
    except (OSError, ValueError):
        record = None
    kept = (record.get("layouts") or {}).get("count") if isinstance(record, dict) else None
    if not isinstance(kept, int) or kept < count:
        raise InputError(f"{option}: --layouts {count} needs an install `perfgate build --layouts {count}` kept "
                         f"(it has {kept if isinstance(kept, int) else 'no'} layouts)", install)
    return [Path(install) / LAYOUTS_DIR / str(seed) for seed in range(1, count + 1)]
