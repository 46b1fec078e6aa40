"""calibrate.resume: where a calibration's raw runs go, and how an interrupted one goes on.

Each measured run is made in DIR/.calibration/partial/<step>/<name> and moved to DIR/.calibration/<step>/<name>
only when its command returned 0: a run folder under <step>/ is complete, one in partial/ is what an
interruption (the time budget, SIGINT, SIGTERM, a crash) left, and is measured again from the start. The
arguments of the first call are kept in DIR/.calibration/arguments.json: a later call with other arguments
would mix runs of two calibrations, and is refused. `Budget` is the time left, pure but for the clock.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from .. import files
from ..errors import InputError
from ..escape.workflow import log_text

CALIBRATION_DIR = ".calibration"
PARTIAL_DIR = "partial"
ARGUMENTS_JSON = "arguments.json"
TIMINGS_DIR = "timings"


def calibration_dir(output: Path) -> Path:
    return Path(output) / CALIBRATION_DIR


def done_path(output: Path, step: str, name: str) -> Path:
    return calibration_dir(output) / step / name


def partial_path(output: Path, step: str, name: str) -> Path:
    return calibration_dir(output) / PARTIAL_DIR / step / name


def timing_path(output: Path, step: str, name: str) -> Path:
    return calibration_dir(output) / TIMINGS_DIR / step / f"{name}.json"


def require_same_arguments(output: Path, arguments: dict) -> bool:
    """Keep the arguments of a new calibration; True when an earlier call's are the same (it goes on),
    InputError when they differ."""
    path = calibration_dir(output) / ARGUMENTS_JSON
    earlier = files.read_json_object(path, "calibration arguments")
    if earlier is None:
        files.write_text(path, json.dumps(arguments, indent=2) + "\n")
        return False
    if earlier != arguments:
        changed = sorted(key for key in set(earlier) | set(arguments) if earlier.get(key) != arguments.get(key))
        raise InputError(f"the calibration in this folder was started with other {', '.join(changed)} "
                         f"({log_text(json.dumps({k: earlier.get(k) for k in changed}))}): go on with the same "
                         f"arguments, or calibrate into another --output-directory", path)
    return True


def start_partial(output: Path, step: str, name: str) -> Path:
    """An empty folder for the run (what an interrupted attempt left there removed); its parent made."""
    folder = partial_path(output, step, name)
    if folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    return folder


def finish(output: Path, step: str, name: str, seconds: float) -> Path:
    """The run is complete: its wall time kept, its folder moved where the derivations read it."""
    files.write_text(timing_path(output, step, name), json.dumps({"seconds": round(seconds, 3)}) + "\n")
    done = done_path(output, step, name)
    done.parent.mkdir(parents=True, exist_ok=True)
    partial_path(output, step, name).rename(done)
    return done


def seconds_taken(output: Path, step: str, name: str) -> float | None:
    record = files.read_json_object(timing_path(output, step, name), "a run's wall time")
    value = record.get("seconds") if record else None
    return float(value) if isinstance(value, (int, float)) else None


class Budget:
    """The time a calibration may still spend (None: no limit), from the monotonic clock."""

    def __init__(self, seconds: float | None, clock=time.monotonic):
        self.seconds, self.clock, self.started = seconds, clock, clock()

    def left(self) -> float | None:
        return None if self.seconds is None else self.seconds - (self.clock() - self.started)

    def allows(self, estimate: float | None) -> bool:
        """Whether a run estimated to take `estimate` seconds (None: not known yet) fits in what is left."""
        left = self.left()
        return left is None or (left > 0 and (estimate is None or estimate <= left))


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "no time limit"
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"
