"""Property-based (Hypothesis): whatever text or bytes a CSV file holds, a reader returns a frame that
obeys the contract or raises perfgate's InputError (one line, exit 2), never another exception; whatever
a user types, an option parser returns a valid value or refuses it, and the command line ends in one
line and exit 2 rather than a traceback."""
from __future__ import annotations

import argparse
import contextlib
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfgate import cli, cli_types, files, plausibility
from perfgate.history import summary_batch
from perfgate import schema as s
from perfgate.errors import InputError

# hundreds of generated files and command lines per test: outside the unit subset
pytestmark = pytest.mark.heavy

# database=None: no .hypothesis/ folder left in the checkout; a failure prints its example to reproduce it
SETTINGS = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# Cells a CSV writer or a careless hand could produce: numbers good and bad, names, quotes, comments.
CELLS = st.sampled_from(["1", "2", "3", "16", "32", "0", "-1", "10.5", "1e300", "1e9", "1e10", "nan", "inf", "-0",
                         "9007199254740993", "1.5e3", "", " ", "x", '"', '"16"', "#", "# note", "\t",
                         "interprocess_best_effort", "intraprocess_reliable", "1,2", "\r", "\x00", "é"])
LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\n \n"])


def csv_text(header: tuple[str, ...]):
    """A header (right, shuffled, short or with a duplicate) and rows of arbitrary cells."""
    headers = st.one_of(st.just(list(header)), st.permutations(list(header)),
                        st.lists(st.sampled_from(list(header) + ["Extra", ""]), min_size=1, max_size=len(header) + 2))
    rows = st.lists(st.lists(CELLS, min_size=0, max_size=len(header) + 2), max_size=12)
    return st.builds(lambda head, body, ends: "".join(",".join(cells) + end for cells, end in
                                                      zip([head, *body], ends * (len(body) + 1))),
                     headers, rows, st.lists(LINE_ENDS, min_size=1, max_size=3))


# Files that are mostly valid, some of them broken in one place: the readers' rules are exercised too,
# not only the CSV syntax.
LATENCY = st.one_of(st.floats(0.001, 1e5).map(lambda v: f"{v:.{3 + int(v) % 4}f}"), st.floats(0.001, 1e5).map(repr))
BAD_CELL = st.sampled_from(["0", "-1", "1e10", "nan", "inf", "", "x", "1e300", "0.000"])
MUTATIONS = st.sampled_from(["none", "none", "none", "cell", "swap rows", "repeat row", "blank line", "comment line",
                             "swap cells"])


@st.composite
def mutated(draw, header: str, rows: list[list[str]]) -> str:
    """The file of `header` and `rows`, with at most one change that may break a rule."""
    rows = [list(r) for r in rows]
    kind = draw(MUTATIONS)
    if rows and kind != "none":
        i = draw(st.integers(0, len(rows) - 1))
        j = draw(st.integers(0, len(rows) - 1))
        column = draw(st.integers(0, len(rows[i]) - 1))
        other = draw(st.integers(0, len(rows[i]) - 1))
        if kind == "cell":
            rows[i][column] = draw(BAD_CELL)
        elif kind == "swap rows":
            rows[i], rows[j] = rows[j], rows[i]
        elif kind == "repeat row":
            rows.insert(i, list(rows[i]))
        elif kind == "swap cells":
            rows[i][column], rows[i][other] = rows[i][other], rows[i][column]
        elif kind in ("blank line", "comment line"):
            rows.insert(i, ["# why" if kind == "comment line" else "  "])
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return end.join([header, *(",".join(r) for r in rows)]) + end


@st.composite
def raw_files(draw) -> str:
    payloads = draw(st.lists(st.sampled_from([16, 32, 64, 16384]), min_size=1, max_size=3, unique=True))
    rows, sample = [], 0
    for payload in payloads:
        for _ in range(draw(st.integers(1, 4))):
            sample += draw(st.integers(1, 2))
            rows.append([str(sample), str(payload), draw(LATENCY)])
    return draw(mutated(",".join(s.RAW_COLUMNS), rows))


@st.composite
def summary_files(draw) -> str:
    rows = []
    for payload in draw(st.lists(st.sampled_from([16, 32, 64]), min_size=1, max_size=3, unique=True)):
        ordered = sorted(draw(st.lists(st.floats(0.001, 1e6), min_size=6, max_size=6)))  # Min, Median ... Max
        mean = draw(st.floats(ordered[0], ordered[-1]))
        jitters = sorted(draw(st.lists(st.floats(0, 1e3), min_size=2, max_size=2)))
        cells = dict(zip(plausibility.SUMMARY_ORDER, ordered))
        cells.update({s.BYTES: payload, s.SAMPLES: draw(st.integers(2, 10**6)), s.MEAN: mean,
                      s.STDEV: draw(st.floats(0, 1e3)), s.MEAN_JITTER: jitters[0], s.MAX_JITTER: jitters[1]})
        rows.append([f"{cells[c]:.3f}" if isinstance(cells[c], float) else str(cells[c]) for c in s.SUMMARY_COLUMNS])
    return draw(mutated(",".join(s.SUMMARY_COLUMNS), rows))


@st.composite
def requirement_files(draw) -> str:
    rows = []
    for sub in draw(st.lists(st.sampled_from(["interprocess_best_effort", "intraprocess_reliable"]), min_size=1,
                             max_size=2, unique=True)):
        for payload in draw(st.lists(st.sampled_from([16, 32, 64]), min_size=1, max_size=3, unique=True)):
            values = sorted(draw(st.lists(st.floats(0.001, 1e6), min_size=3, max_size=3)))
            rows.append([sub, str(payload), *(f"{v:.3f}" for v in values)])
    return draw(mutated(",".join(s.REQUIREMENT_COLUMNS), rows))


READERS = {"raw": (files.read_raw, s.RAW_COLUMNS), "summary": (files.read_summary, s.SUMMARY_COLUMNS),
           "requirements": (files.read_requirements, s.REQUIREMENT_COLUMNS)}


def assert_valid(kind: str, frame) -> None:
    """What every caller of the reader relies on."""
    columns = READERS[kind][1]
    assert list(frame.columns[:len(columns)]) == list(columns)
    assert len(frame) >= 1
    numeric = [c for c in columns if c != s.EXPERIMENT_TYPE]
    values = frame[numeric].to_numpy(dtype=float)
    assert np.isfinite(values).all() and (values >= 0).all()
    if kind == "raw":
        assert (frame[s.LATENCY] > 0).all() and (frame[s.LATENCY] <= plausibility.MAX_LATENCY_US).all()
        assert frame.groupby(s.PAYLOAD).size().min() >= 2
        blocks = (frame[s.PAYLOAD] != frame[s.PAYLOAD].shift()).sum()
        assert blocks == frame[s.PAYLOAD].nunique()
    elif kind == "summary":
        assert (frame[s.MIN] > 0).all()
        for lower, upper in plausibility.SUMMARY_PAIRS:
            assert (frame[lower] <= frame[upper]).all()
    else:
        assert (frame[s.EXPERIMENT_TYPE].str.len() > 0).all()
        assert frame["line"].is_monotonic_increasing and frame["line"].min() >= 2


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Where each example's file is written (Hypothesis reruns a test body, so not a per-test tmp_path)."""
    return tmp_path_factory.mktemp("properties")


def read(folder: Path, kind: str, content: bytes | str):
    path = folder / f"{kind}.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    reader = READERS[kind][0]
    try:
        frame = reader(path)
    except InputError as error:
        text = str(error)
        assert "\n" not in text and "\r" not in text, text  # one line, whatever the cells hold
        assert text.startswith(str(path)), text
        return None
    assert_valid(kind, frame)
    return frame


@pytest.mark.parametrize("kind", list(READERS))
@SETTINGS
@given(content=st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_any_bytes_or_text_is_a_frame_or_an_input_error(folder, kind, content):
    read(folder, kind, content)


@pytest.mark.parametrize("kind", list(READERS))
@SETTINGS
@given(data=st.data())
def test_csv_shaped_text_is_a_frame_or_an_input_error(folder, kind, data):
    read(folder, kind, data.draw(csv_text(READERS[kind][1])))


NEAR_VALID = {"raw": raw_files(), "summary": summary_files(), "requirements": requirement_files()}


@pytest.mark.parametrize("kind", list(READERS))
@SETTINGS
@given(data=st.data())
def test_files_near_the_rules_are_a_valid_frame_or_an_input_error(folder, kind, data):
    read(folder, kind, data.draw(NEAR_VALID[kind]))


@SETTINGS
@given(data=st.data())
def test_summaries_read_together_are_each_what_read_summary_gives_alone(folder, data):
    """summary_batch joins plain files into one parse: the same frame, to the last bit, or the same error."""
    texts = data.draw(st.lists(st.one_of(summary_files(), summary_files(), csv_text(s.SUMMARY_COLUMNS)),
                               min_size=1, max_size=5))
    paths = []
    for number, text in enumerate(texts):
        paths.append(folder / f"batch-{number}.csv")
        paths[-1].write_bytes(text.encode("utf-8", "surrogatepass"))
    table, owner, refused = summary_batch.read_summaries(paths)
    for position, path in enumerate(paths):
        rows = table[owner == position].reset_index(drop=True)
        try:
            alone = files.read_summary(path)
        except InputError as error:
            assert str(refused[position]) == str(error) and rows.empty
            continue
        assert position not in refused
        pd.testing.assert_frame_equal(rows, alone.loc[:, list(s.SUMMARY_COLUMNS)].reset_index(drop=True),
                                      check_exact=True)


# --- the option parsers ---------------------------------------------------------------------------
LIST_TEXT = st.one_of(st.text(max_size=30), st.lists(st.sampled_from(["16", "32", " 64", "", "0", "x", "-1", "1e3",
                                                                      "interprocess_reliable", ";"]),
                                                     max_size=5).map(",".join))
PARSERS = {
    "payloads": (cli_types.payload_list, lambda v: v and all(isinstance(p, int) and p > 0 for p in v)),
    "names": (cli_types.name_list, lambda v: v and all(n and n == n.strip() and "," not in n for n in v)),
    "pin request": (cli_types.pin_request, lambda v: isinstance(v, str) and "" not in [p.strip() for p in v.split(",")]
                    if "," in v else isinstance(v, str)),
    "positive int": (cli_types.positive_int, lambda v: isinstance(v, int) and v > 0),
    "non-negative float": (cli_types.non_negative_float, lambda v: math.isfinite(v) and v >= 0),
    "positive float": (cli_types.positive_float, lambda v: math.isfinite(v) and v > 0),
    "percentile": (cli_types.percentile, lambda v: 0 <= v <= 100),
}


@pytest.mark.parametrize("name", list(PARSERS))
@SETTINGS
@given(text=LIST_TEXT)
def test_option_parsers_return_a_valid_value_or_refuse(name, text):
    parse, valid = PARSERS[name]
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as error:
        assert "\n" not in str(error) and "\r" not in str(error), str(error)  # the text is shown as a literal
        return
    assert valid(value), value


def option_strings(command: str) -> list[str]:
    parser = cli.build_parser().command_parsers[command]
    return [o for action in parser._actions for o in action.option_strings if o not in ("-h", "--help")]


COMMANDS = ["run", "ab", "gate", "process", "check", "compare", "determine-requirements", "history", "junit", "build"]


@SETTINGS
@given(data=st.data())
def test_any_command_line_parses_or_is_one_line_and_exit_2(data):
    command = data.draw(st.sampled_from(COMMANDS + ["", "frobnicate"]))
    options = option_strings(command) if command in COMMANDS else ["--output"]
    tokens = data.draw(st.lists(st.one_of(st.sampled_from(options), LIST_TEXT), max_size=8))
    argv = ([command] if command else []) + tokens
    if any(t.startswith("-h") or (len(t) > 2 and "--help".startswith(t.split("=")[0])) for t in tokens):
        return  # help prints the usage and exits 0 by design
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            parsed = cli.parse_arguments(argv)
        except SystemExit as exit_:
            error = stderr.getvalue()
            assert exit_.code == s.EXIT_USAGE, error
            assert error.count("\n") == 1 and error.endswith("\n") and "\r" not in error, error
            assert error.startswith("perfgate"), error
            assert stdout.getvalue() == ""
            return
    assert parsed.command == command
