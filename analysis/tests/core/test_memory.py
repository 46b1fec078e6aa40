"""Memory bounded by design (issue 23): raw files read in chunks and summarised one payload at a time,
a .gz that inflates past its limit refused, requirements files bounded and their problems printed in
a few lines. The chunked reader must give what the whole file gives, to the byte and to the message."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfgate import csv_lines, files, plausibility
from perfgate.latency import process
from perfgate import schema as s
from perfgate.errors import InputError

from conftest import metadata, perfgate_in_process, tiny_summary, write_experiment

PERFGATE = str(Path(sys.executable).with_name("perfgate"))
HEADER = ",".join(s.RAW_COLUMNS)
# peak RSS of the children of a fresh interpreter: the largest process of the command's tree
PEAK_OF = ("import resource, subprocess, sys\n"
           "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
           "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n")


def write_raw(path: Path, rows: int, payloads=s.PAYLOADS, seed: int = 3) -> Path:
    """`rows` rows of raw measurements, the payloads one block after another, as the harness writes them."""
    rng = np.random.default_rng(seed)
    blocks = np.repeat(np.asarray(payloads), -(-rows // len(payloads)))[:rows]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(HEADER + "\n")
        for start in range(0, rows, 1_000_000):
            end = min(rows, start + 1_000_000)
            chunk = pd.DataFrame({s.SAMPLE: np.arange(start + 1, end + 1), s.PAYLOAD: blocks[start:end],
                                  s.LATENCY: (20 + blocks[start:end] / 1024) * rng.lognormal(0, 0.2, end - start)})
            handle.write(chunk.to_csv(index=False, header=False, float_format="%.3f", lineterminator="\n"))
    return path


def peak_rss(*arguments: str) -> tuple[int, int]:
    """(exit code, peak resident bytes) of `perfgate ARGUMENTS` run as a real process."""
    done = subprocess.run([sys.executable, "-c", PEAK_OF, PERFGATE, *arguments], capture_output=True, text=True,
                          check=True)
    code, peak = done.stdout.split()
    return int(code), int(peak)


def read_with_blocks(path: Path, block_bytes: int, monkeypatch) -> pd.DataFrame | str:
    """The summary of a raw file read in blocks of `block_bytes`, or the error it is refused with."""
    monkeypatch.setattr(csv_lines, "BLOCK_BYTES", block_bytes)
    try:
        return process.summarise_raw_file(path)[0]
    except InputError as error:
        return str(error)


# --- the chunks change nothing -----------------------------------------------------------------------
def test_the_published_summary_to_the_byte_whatever_the_chunks(fastdds_fixtures, monkeypatch):
    raw = fastdds_fixtures / "v193" / "measurements_interprocess.csv"
    published = (fastdds_fixtures / "v193" / "summary_interprocess.csv").read_text().replace("\r\n", "\n")
    for block_bytes in (65536, 1 << 30):  # chunks of about 3000 rows (rows and payloads cut), the whole file
        summary = read_with_blocks(raw, block_bytes, monkeypatch)
        assert files.format_csv(summary) == published
    monkeypatch.setattr(csv_lines, "BLOCK_BYTES", 65536)
    summary, latencies = process.summarise_raw_file(raw, keep_latencies=True)
    whole = files.read_raw(raw)
    assert list(latencies) == list(summary[s.BYTES])
    for payload, values in latencies.items():
        assert values.dtype == np.float64
        assert np.array_equal(values, whole[whole[s.PAYLOAD] == payload][s.LATENCY].to_numpy())


RAW_CASES = {
    "crlf and lone cr": "\r\n".join([HEADER, "1,16,5.5", "2,16,6.25", "3,32,7", "4,32,8"]) + "\r5,64,1\r6,64,2\r\n",
    "blank lines and a byte-order mark": "\ufeff" + "\n".join([HEADER, "", "1,16,5.5", "  ", "2,16,6", "", "3,32,1",
                                                              "4,32,2", ""]),
    "starts again": "\n".join([HEADER] + [f"{i},16,5" for i in range(1, 40)] + ["40,32,1", "41,32,2", "42,16,3"]),
    "sample repeats": "\n".join([HEADER] + [f"{i},16,5" for i in range(1, 40)] + ["39,16,1"]),
    "sample goes down": "\n".join([HEADER] + [f"{i},16,5" for i in range(1, 40)] + ["7,16,1"]),
    "a lonely payload last": "\n".join([HEADER] + [f"{i},16,5" for i in range(1, 40)] + ["40,32,1"]),
    "a lonely payload first": "\n".join([HEADER, "1,8,5"] + [f"{i},16,5" for i in range(2, 40)] + ["40,16,x"]),
    "a bad cell late": "\n".join([HEADER] + [f"{i},16,5" for i in range(1, 40)] + ["40,16,0"]),
    "NUL late": "\n".join([HEADER] + [f"{i},16,5" for i in range(1, 40)]) + "\n\0",
    "more cells late": "\n".join([HEADER] + [f"{i},16,5" for i in range(1, 40)] + ["40,16,5,9"]),
    "a missing column": "Sample,Latency [us]\n1,5\n2,6\n",
    "a header only": HEADER + "\n\n",
    "empty": "\n \n",
}


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_chunks_give_the_whole_file_s_summary_or_its_error(case, tmp_path, monkeypatch):
    path = tmp_path / "measurements_case.csv"
    path.write_bytes(RAW_CASES[case].encode("utf-8"))
    whole = read_with_blocks(path, 1 << 30, monkeypatch)
    for block_bytes in (1, 7, 64):
        chunked = read_with_blocks(path, block_bytes, monkeypatch)
        if isinstance(whole, str):
            assert chunked == whole, block_bytes
        else:
            assert isinstance(chunked, pd.DataFrame) and files.format_csv(chunked) == files.format_csv(whole)
    if case == "starts again":
        assert whole.endswith("payload 16 B starts again after payload 32 B (its first block ends at line 40); "
                              "the samples of a payload are one block")
    if case == "crlf and lone cr":
        assert whole[s.BYTES].tolist() == [16, 32, 64] and whole[s.SAMPLES].tolist() == [2, 2, 2]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0.001, max_value=1e6, allow_nan=False), min_size=2, max_size=400))
def test_a_payload_s_row_is_pandas_grouped_statistics(values):
    """summary_row holds one payload at a time; its values are the floats of pandas' grouped statistics,
    the definition the published summaries were reproduced with."""
    latencies = np.asarray(values)
    row = process.summary_row(16, latencies)
    groups = pd.Series(latencies).groupby(np.zeros(latencies.size), sort=False)
    jitter = pd.Series(np.abs(groups.diff().to_numpy())).groupby(np.zeros(latencies.size), sort=False)
    expected = {s.MAX: groups.max(), s.MIN: groups.min(), s.MEAN: groups.mean(), s.STDEV: groups.std(ddof=0),
                s.MEAN_JITTER: jitter.mean(), s.MAX_JITTER: jitter.max(),
                **{column: groups.quantile(q) for column, q in s.PERCENTILES.items()}}
    for column, value in expected.items():
        assert row[column] == float(value.iloc[0]), column
    assert row[s.BYTES] == 16 and row[s.SAMPLES] == latencies.size


# --- memory -----------------------------------------------------------------------------------------------
@pytest.mark.heavy
def test_process_of_millions_of_rows_stays_within_the_file_s_size_above_the_interpreter(tmp_path):
    """3 million rows (57 MB): process held 13 times the file (a frame of the whole file and its lines);
    one payload at a time and chunks of 2 MiB keep it under 0.9 times the file above the interpreter."""
    tiny = write_raw(tmp_path / "measurements_tiny.csv", 100)
    code, baseline = peak_rss("process", "--raw-csv", str(tiny), "--output-csv", str(tmp_path / "tiny.csv"),
                              "--no-plots")
    assert code == 0
    raw = write_raw(tmp_path / "measurements_big.csv", 3_000_000)
    size = raw.stat().st_size
    code, peak = peak_rss("process", "--raw-csv", str(raw), "--output-csv", str(tmp_path / "summary.csv"),
                          "--no-plots")
    assert code == 0
    summary = files.read_summary(tmp_path / "summary.csv")
    assert summary[s.BYTES].tolist() == list(s.PAYLOADS)
    assert int(summary[s.SAMPLES].sum()) == 3_000_000
    assert peak - baseline < 2 * size, f"peak {peak / 2**20:.0f} MB, baseline {baseline / 2**20:.0f} MB, file {size / 2**20:.0f} MB"


# --- gzip bombs -----------------------------------------------------------------------------------------------
def gzip_bomb(path: Path, rows: int = 1_500_000) -> Path:
    """16 MB of one row repeated, in a .gz of some 30 KB: about 500 times its size."""
    path.write_bytes(gzip.compress((HEADER + "\n" + "1,16,1.000\n" * rows).encode(), compresslevel=9, mtime=0))
    return path


def test_a_gzip_bomb_is_refused_by_process_in_one_line_naming_it(tmp_path):
    bomb = gzip_bomb(tmp_path / f"{s.stored_raw_name('intraprocess_best_effort')}")
    limit = csv_lines.inflation_limit(bomb.stat().st_size)
    result = perfgate_in_process("process", "--raw-csv", str(bomb), "--output-csv", str(tmp_path / "out.csv"),
                                 "--no-plots")
    assert result.returncode == s.EXIT_USAGE
    assert result.stderr.splitlines() == [f"perfgate process: error: {bomb}: raw measurements file inflates past "
                                          f"{limit} bytes (64 times its compressed size): not measurements"]
    assert not (tmp_path / "out.csv").exists()
    result = perfgate_in_process("process", "--experiment-directory", str(tmp_path), "--no-plots")
    assert result.returncode == s.EXIT_USAGE and "inflates past" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not list(tmp_path.glob("*_summary.csv"))


def test_a_gzip_bomb_in_a_store_is_one_line_in_history(tmp_path):
    store = tmp_path / "store"
    experiments = store / s.STORE_EXPERIMENTS_DIR
    good = write_experiment(experiments / "run-0", {"interprocess_reliable": tiny_summary({16: (10, 20, 30)})},
                            metadata("run-0", "2024-01-01T00:00:00Z"))
    assert good.is_dir()
    raw_only = experiments / "run-1"
    raw_only.mkdir()
    files.write_metadata(raw_only, metadata("run-1", "2024-01-02T00:00:00Z"))
    gzip_bomb(raw_only / s.stored_raw_name("interprocess_reliable"))
    requirements_csv = write_requirements(tmp_path / "requirements.csv", [("interprocess_reliable", 16)])
    result = perfgate_in_process("history", "--requirements", str(requirements_csv), "--experiments-results",
                                 str(store), "--plots-directory", str(tmp_path / "plots"), "--no-plots")
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    assert "inflates past" in result.stderr and str(raw_only) in result.stderr
    assert len(result.stderr.splitlines()) <= 3


def test_a_genuine_gz_inflates_within_its_limit(fastdds_fixtures, tmp_path):
    raw = fastdds_fixtures / "v193" / "measurements_interprocess.csv"
    stored = tmp_path / s.stored_raw_name("interprocess")
    stored.write_bytes(gzip.compress(raw.read_bytes(), compresslevel=6, mtime=0))
    assert raw.stat().st_size < csv_lines.inflation_limit(stored.stat().st_size)
    assert files.format_csv(process.summarise_raw_file(stored)[0]) == files.format_csv(process.summarise_raw_file(raw)[0])


# --- requirements files -----------------------------------------------------------------------------------
def write_requirements(path: Path, rows: list[tuple[str, int]]) -> Path:
    lines = [",".join(s.REQUIREMENT_COLUMNS)] + [f"{sub},{payload},100.000,200.000,300.000" for sub, payload in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def measured_experiment(folder: Path) -> Path:
    folder.mkdir()
    files.write_csv(folder / s.summary_csv_name("interprocess_reliable"), tiny_summary({16: (10, 20, 30)}))
    return folder


def test_a_requirements_file_of_more_rows_than_could_ever_be_checked_is_refused_in_one_line(tmp_path):
    experiment = measured_experiment(tmp_path / "experiment")
    rows = [("interprocess_reliable", 16)] + [(f"sub_{n // 1000}", n % 1000 + 1) for n in range(plausibility.MAX_REQUIREMENT_ROWS)]
    requirements = write_requirements(tmp_path / "requirements.csv", rows)
    result = perfgate_in_process("check", "--requirements", str(requirements), "--experiment-directory",
                                 str(experiment), "--plots-directory", str(tmp_path / "plots"), "--no-plots",
                                 "--junit", str(tmp_path / "junit.xml"))
    assert result.returncode == s.EXIT_USAGE
    limit = plausibility.MAX_REQUIREMENT_ROWS
    assert result.stderr.splitlines() == [
        f"perfgate check: error: {requirements}:{limit + 2}: requirements file has more than {limit} rows (row "
        f"{limit + 1} is at line {limit + 2}): more than perfgate could ever check"]
    assert not (tmp_path / "junit.xml").exists() and not list(experiment.glob("checks_*"))


def test_thousands_of_missing_requirement_rows_are_a_few_stderr_lines(tmp_path):
    """Every row but one names what was not measured: 10 sub-experiments' lines and one for the rest,
    each naming a few payloads and lines and how many; the JUnit keeps every row (a testcase each)."""
    experiment = measured_experiment(tmp_path / "experiment")
    rows = [("interprocess_reliable", 16)] + [("interprocess_reliable", n) for n in range(17, 1017)]
    rows += [(f"sub_{n // 100}", n % 100 + 1) for n in range(plausibility.MAX_REQUIREMENT_ROWS - len(rows))]
    requirements = write_requirements(tmp_path / "requirements.csv", rows)
    junit = tmp_path / "junit.xml"
    result = perfgate_in_process("check", "--requirements", str(requirements), "--experiment-directory",
                                 str(experiment), "--plots-directory", str(tmp_path / "plots"), "--no-plots",
                                 "--junit", str(junit))
    assert result.returncode == s.EXIT_INCOMPLETE
    lines = result.stderr.splitlines()
    assert len(lines) == 11
    assert lines[0] == (f"perfgate check: error: {requirements}:3: no measurements for interprocess_reliable "
                        f"(17, 18, 19, 20, 21, ... (1000 in all) B): no rows of these payloads in "
                        f"{s.summary_csv_name('interprocess_reliable')} (lines 3, 4, 5, 6, 7, ... (1000 in all))")
    assert lines[1] == (f"perfgate check: error: {requirements}:1003: no measurements for sub_0 (1, 2, 3, 4, 5, ... "
                        f"(100 in all) B): no {s.summary_csv_name('sub_0')} in the experiment folder (lines 1003, "
                        "1004, 1005, 1006, 1007, ... (100 in all))")
    assert lines[-1] == (f"perfgate check: error: {requirements}: and 81 more sub-experiment(s) with required results "
                         "that have no measurements (check.json lists every one)")
    record = json.loads((experiment / s.CHECK_RECORD_FILE).read_text())
    assert len(record["missing"]) == plausibility.MAX_REQUIREMENT_ROWS - 1
    assert junit.read_text().count("<testcase ") == 3 * plausibility.MAX_REQUIREMENT_ROWS
    assert junit.stat().st_size < 20_000_000
