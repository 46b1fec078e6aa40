"""The value types of the command line's options (argparse `type=` functions): each returns the
parsed value or raises argparse.ArgumentTypeError with the reason, which cli.OneLineParser prints as
the one line of a usage error (exit 2)."""
from __future__ import annotations

import argparse
import math
import re
import unicodedata

from .outputs import length_problem


def list_items(text: str, what: str) -> list[str]:
    """The comma-separated items of a list option, stripped. An empty item (`16,,32`, a trailing
    comma) is refused rather than skipped: it is most often a value lost in a script's variable."""
    items = [part.strip() for part in text.split(",")]
    if any(item == "" for item in items):
        raise argparse.ArgumentTypeError(f"empty item in {text!r} ({what} separated by commas)")
    return items


WHOLE_NUMBER = re.compile(r"[0-9]+")


def payload_list(text: str) -> list[int]:
    items = list_items(text.replace(";", ","), "payloads in bytes")
    bad = [item for item in items if not WHOLE_NUMBER.fullmatch(item)]
    if bad:
        raise argparse.ArgumentTypeError(f"payloads must be whole numbers separated by commas: {bad[0]!r} in {text!r}")
    payloads = [int(item) for item in items]
    if any(not 0 < p <= 65536 for p in payloads):  # 64 KiB: the harness's largest sample (native kMaxDataBytes)
        raise argparse.ArgumentTypeError(f"payloads must be from 1 to 65536 bytes: {text!r}")
    return payloads


def demand_list(text: str) -> list[int]:
    items = list_items(text, "samples per burst")
    bad = [item for item in items if not WHOLE_NUMBER.fullmatch(item) or int(item) == 0]
    if bad:
        raise argparse.ArgumentTypeError(f"positive whole numbers separated by commas, got {bad[0]!r} in {text!r}")
    return [int(item) for item in items]


def millisecond_list(text: str) -> list[int]:
    items = list_items(text, "milliseconds")
    bad = [item for item in items if not WHOLE_NUMBER.fullmatch(item)]
    if bad:
        raise argparse.ArgumentTypeError(f"whole milliseconds separated by commas, got {bad[0]!r} in {text!r}")
    return [int(item) for item in items]


def name_list(text: str) -> list[str]:
    return list_items(text, "names")


# Unicode categories a label must not hold: control characters (line breaks, tabs, escapes, DEL and
# the C1 range), format characters (bidirectional overrides, zero-width ones: text that reads other
# than it is), line and paragraph separators, and lone surrogates (bytes of a command line that are
# not UTF-8, which no report, JSON or XML writer can encode).
_LABEL_REFUSED = {"Cc": "a control character", "Cf": "an invisible format character", "Zl": "a line separator",
                  "Zp": "a paragraph separator", "Cs": "a byte that is not UTF-8"}
MAX_LABEL = 200  # bytes: the gate's store names a folder after it (255 at most), with room for -throughput


def label_problem(text: str) -> str | None:
    """Why `text` cannot be an experiment's label, or None. A label is written into metadata.json, file
    and folder names (the gate's store), report.md, report.html and JUnit, and printed in one-line
    messages: a line break or a terminal escape there splits a message, forges a report line or makes
    the JUnit file XML no reader parses."""
    if not text.strip():
        return "is empty"
    for position, char in enumerate(text):
        what = _LABEL_REFUSED.get(unicodedata.category(char))
        if what is not None:
            return f"holds {what} (U+{ord(char):04X}) at character {position + 1}"
    if len(text.encode()) > MAX_LABEL:
        return f"is {len(text.encode())} bytes long (UTF-8), more than {MAX_LABEL}"
    return None


def label(text: str) -> str:
    """--label: printable text (label_problem)."""
    problem = label_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"the label {ascii(text)} {problem}")
    return text


def pin_request(text: str) -> str:
    """--pin-cpus as given (measure.options.parse_pin_cpus reads it against this machine's CPUs); only an empty
    item is refused here, which parse_pin_cpus would skip (`0,` would pin both sides to CPU 0)."""
    if "," in text:
        list_items(text, "CPU numbers")
    return text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = finite_float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be zero or more: {text!r}")
    return value


def positive_float(text: str) -> float:
    value = finite_float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than zero: {text!r}")
    return value


def probability(text: str) -> float:
    """A false-alarm level: more than 0 (no test could ever reject) and less than 1 (every test would)."""
    value = finite_float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"a probability between 0 and 1 (exclusive), got {text!r}")
    return value


def percentile(text: str) -> float:
    value = non_negative_float(text)
    if value > 100:
        raise argparse.ArgumentTypeError(f"a percentile is between 0 and 100: {text!r}")
    return value


# the metavars of every option that names a file or folder (cli.py); each gets `path_name` as its type
PATH_METAVARS = frozenset({"D", "DIR", "F", "FILE", "CSV", "PATH", "WS", "system|workspace|DIR"})


def path_name(text: str) -> str:
    """A path the system can take: a name over 255 bytes or a path over 4095 was a traceback
    (ENAMETOOLONG) wherever it was first used, after other outputs had been written."""
    problem = length_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def path_typed(options: dict) -> dict:
    """An option's argparse keywords, with `path_name` as the type of an option that names a path."""
    if options.get("metavar") in PATH_METAVARS and "type" not in options and options.get("action") is None:
        return {**options, "type": path_name}
    return options
