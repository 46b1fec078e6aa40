"""The one source of truth for names: sub-experiments, payloads, columns, file names, exit codes.

Every other module imports these; none spells a column or a file name of its own.
docs/formats.md specifies them for users (section numbers below).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

# --- exit codes (docs/formats.md section 11) ----------------------------------------------------
EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3

# --- sub-experiments (docs/formats.md section 2) -----------------------------------------------
@dataclass(frozen=True)
class SubExperiment:
    name: str
    transport: str  # "intraprocess", "udpv4", "tcpv4", "shm", or a floor transport "udp"/"tcp"
    reliability: str  # "best_effort" or "reliable"
    security: bool
    is_floor: bool = False  # plain socket ping-pong: the machine's floor, never checked by default
    subscribers: int = 1  # one-to-many (`<sub>_1to<N>`): N subscribers, the round trip to the last one
    zero_copy: bool = False  # shared memory, data sharing and loaned samples on both sides


SUBEXPERIMENTS: tuple[SubExperiment, ...] = (
    SubExperiment("intraprocess_best_effort", "intraprocess", "best_effort", False),
    SubExperiment("intraprocess_reliable", "intraprocess", "reliable", False),
    SubExperiment("interprocess_best_effort", "udpv4", "best_effort", False),
    SubExperiment("interprocess_best_effort_security", "udpv4", "best_effort", True),
    SubExperiment("interprocess_best_effort_tcp", "tcpv4", "best_effort", False),
    SubExperiment("interprocess_best_effort_tcp_security", "tcpv4", "best_effort", True),
    SubExperiment("interprocess_reliable", "udpv4", "reliable", False),
    SubExperiment("interprocess_reliable_security", "udpv4", "reliable", True),
    SubExperiment("interprocess_reliable_tcp", "tcpv4", "reliable", False),
    SubExperiment("interprocess_reliable_tcp_security", "tcpv4", "reliable", True),
)
EXTRA_SUBEXPERIMENTS: tuple[SubExperiment, ...] = (
    SubExperiment("interprocess_best_effort_shm", "shm", "best_effort", False),
    SubExperiment("interprocess_reliable_shm", "shm", "reliable", False),
    SubExperiment("interprocess_best_effort_zero_copy", "shm", "best_effort", False, zero_copy=True),
    SubExperiment("interprocess_reliable_zero_copy", "shm", "reliable", False, zero_copy=True),
    SubExperiment("floor_udp", "udp", "best_effort", False, is_floor=True),
    SubExperiment("floor_tcp", "tcp", "reliable", False, is_floor=True),
)
DEFAULT_SUBEXPERIMENT_NAMES: tuple[str, ...] = tuple(s.name for s in SUBEXPERIMENTS)
FLOOR_SUBEXPERIMENT_NAMES: tuple[str, ...] = tuple(s.name for s in EXTRA_SUBEXPERIMENTS if s.is_floor)

# One-to-many: `<sub>_1to<N>` is latency sub-experiment <sub> (not a floor) with N subscribers, resolved,
# not listed (15 x 15 names would drown every list); above 16 they outnumber any reference machine's cores.
ONE_TO_MANY_INFIX = "_1to"
MAX_SUBSCRIBERS = 16
_FIXED_SUBEXPERIMENTS: dict[str, SubExperiment] = {s.name: s for s in SUBEXPERIMENTS + EXTRA_SUBEXPERIMENTS}


def one_to_many_name(sub: str, subscribers: int) -> str:
    return f"{sub}{ONE_TO_MANY_INFIX}{subscribers}"


def resolve_subexperiment(name: str) -> SubExperiment:
    """The sub-experiment a name stands for; ValueError with one line saying why for a name no run writes."""
    if name in _FIXED_SUBEXPERIMENTS:
        return _FIXED_SUBEXPERIMENTS[name]
    base, infix, count = str(name).rpartition(ONE_TO_MANY_INFIX)
    if not infix or base not in _FIXED_SUBEXPERIMENTS:
        raise ValueError(f"unknown sub-experiment {name!r}")
    if _FIXED_SUBEXPERIMENTS[base].is_floor:
        raise ValueError(f"sub-experiment {name!r}: {base} is a floor (plain sockets), it has no subscribers")
    if not (count.isascii() and count.isdigit()) or str(int(count)) != count or not 2 <= int(count) <= MAX_SUBSCRIBERS:
        raise ValueError(f"sub-experiment {name!r}: one-to-many takes 2 to {MAX_SUBSCRIBERS} subscribers "
                         f"({base}{ONE_TO_MANY_INFIX}2 .. {base}{ONE_TO_MANY_INFIX}{MAX_SUBSCRIBERS})")
    return dataclasses.replace(_FIXED_SUBEXPERIMENTS[base], name=name, subscribers=int(count))


class _KnownSubexperiments(dict):
    """The named sub-experiments, in order, and every one-to-many name besides.

    Iterating gives the fixed names (the ten, then the extras); `in`, `[]` and `get` also resolve
    `<sub>_1to<N>`, so every module that looks a name up accepts one-to-many names unchanged.
    """

    def __missing__(self, name):
        try:
            return resolve_subexperiment(name)
        except ValueError:
            raise KeyError(name) from None

    def __contains__(self, name) -> bool:
        try:
            return isinstance(name, str) and bool(self[name])
        except KeyError:
            return False

    def get(self, name, default=None):
        return self[name] if name in self else default


KNOWN_SUBEXPERIMENTS: dict[str, SubExperiment] = _KnownSubexperiments(_FIXED_SUBEXPERIMENTS)


def checked_by_default(name: str) -> bool:
    """Whether requirements must cover a measured sub-experiment: the floors and the one-to-many ones
    are measured for reference and checked only when the requirements list them."""
    sub = KNOWN_SUBEXPERIMENTS.get(name)
    return sub is None or not (sub.is_floor or sub.subscribers > 1)

# --- payloads and samples -----------------------------------------------------------------------
PAYLOADS: tuple[int, ...] = tuple(16 << i for i in range(11))  # 16 B .. 16 KiB
DEFAULT_SAMPLES = 10000

# --- latency definitions (metadata.json "latency_definition") ----------------------------------------
ROUND_TRIP = "round_trip"
HALF_ROUND_TRIP = "half_round_trip"  # Fast DDS' own LatencyTest reports half the round trip
LATENCY_DEFINITIONS = (ROUND_TRIP, HALF_ROUND_TRIP)

# --- columns (docs/formats.md sections 3 to 6) -------------------------------------------------
SAMPLE = "Sample"
PAYLOAD = "Payload [Bytes]"
LATENCY = "Latency [us]"
RAW_COLUMNS = (SAMPLE, PAYLOAD, LATENCY)

BYTES = "Bytes"
SAMPLES = "Samples"
MAX = "Max"
MIN = "Min"
MEAN = "Mean"
MEDIAN = "Median"
STDEV = "Stdev"
MEAN_JITTER = "Mean jitter"
MAX_JITTER = "Max jitter"
P90 = "90%"
P99 = "99%"
P9999 = "99.99%"
SUMMARY_COLUMNS = (BYTES, SAMPLES, MAX, MIN, MEAN, MEDIAN, STDEV, MEAN_JITTER, MAX_JITTER, P90, P99, P9999)
# the percentile columns and the quantile each one is
PERCENTILES = {MEDIAN: 0.5, P90: 0.9, P99: 0.99, P9999: 0.9999}

EXPERIMENT_TYPE = "Experiment type"
CHECKED_MAGNITUDES = (MEDIAN, P99, MAX)  # what requirements bound, in check-report order
REQUIREMENT_COLUMNS = (EXPERIMENT_TYPE, BYTES) + CHECKED_MAGNITUDES

CHECK = "Check"
REQUIREMENT = "Requirement"
EXPERIMENT = "Experiment"
DIFFERENCE = "Difference"
PERCENT_OVER = "Percentage over requirement"
STATUS = "Status"
CHECK_COLUMNS = (CHECK, BYTES, REQUIREMENT, EXPERIMENT, DIFFERENCE, PERCENT_OVER, STATUS)
PASSED, FAILED = "passed", "failed"
NOTED = "noted"  # with a baseline build, a miss within the gross margin (latency.gross): a note, no failure
CHECK_STATUSES = (PASSED, FAILED, NOTED)

# magnitudes drawn in the sub-experiment comparison and the history (plot file suffixes beside)
PLOTTED_MAGNITUDES = {MIN: "min", MEDIAN: "median", MAX: "max", P99: "99"}
# magnitudes that `compare` gates on
COMPARED_MAGNITUDES = (MIN, MEDIAN, P99, MAX)
LABEL = "Label"
CHECK_SLUGS = {MEDIAN: "median", P99: "99", MAX: "max"}

# --- the throughput experiment (docs/formats.md section 15) ---------------------------------------
# throughput_<sub> runs latency sub-experiment <sub>'s transport, reliability and security with bursts
THROUGHPUT_PREFIX = "throughput_"
DEMAND = "Demand [sample/burst]"
RECOVERY_TIME = "Recovery time [ms]"
SENT = "Sent [samples]"
PUBLICATION_TIME = "Publication time [us]"
PUBLICATION_RATE = "Publication sample rate [Sample/s]"
PUBLICATION_THROUGHPUT = "Publication throughput [Mb/s]"
RECEIVED = "Received [samples]"
LOST = "Lost [samples]"
SUBSCRIPTION_TIME = "Subscription time [us]"
SUBSCRIPTION_RATE = "Subscription sample rate [Sample/s]"
SUBSCRIPTION_THROUGHPUT = "Subscription throughput [Mb/s]"
THROUGHPUT_COLUMNS = (PAYLOAD, DEMAND, RECOVERY_TIME, SENT, PUBLICATION_TIME, PUBLICATION_RATE,
                      PUBLICATION_THROUGHPUT, RECEIVED, LOST, SUBSCRIPTION_TIME, SUBSCRIPTION_RATE,
                      SUBSCRIPTION_THROUGHPUT)
# what the harness writes; the rates and Lost are derived from it (perfgate.throughput.table)
THROUGHPUT_HARNESS_COLUMNS = (PAYLOAD, DEMAND, RECOVERY_TIME, SENT, PUBLICATION_TIME, RECEIVED, SUBSCRIPTION_TIME)
THROUGHPUT_COUNT_COLUMNS = (PAYLOAD, DEMAND, RECOVERY_TIME, SENT, RECEIVED, LOST)
DEFAULT_DEMANDS: tuple[int, ...] = (100, 1000)
DEFAULT_RECOVERY_TIMES_MS: tuple[int, ...] = (5,)
DEFAULT_THROUGHPUT_TIME_S = 1.0
QUICK_THROUGHPUT_PAYLOADS: tuple[int, ...] = (16, 16384)
THROUGHPUT_DIR = "throughput"  # the gate's throughput experiment, inside its output folder


def throughput_name(sub: str) -> str:
    """The throughput sub-experiment of a latency sub-experiment: its Experiment type."""
    return f"{THROUGHPUT_PREFIX}{sub}"


def throughput_csv_name(sub: str) -> str:
    """sub: the latency sub-experiment's name."""
    return f"{throughput_name(sub)}.csv"

# --- file names (docs/formats.md sections 8 and 9) ---------------------------------------------
METADATA_FILE = "metadata.json"
JUNIT_FILE = "junit.xml"
PLOTS_DIR = "plots"
STORE_EXPERIMENTS_DIR = "experiments"
STORE_HISTORY_DIR = "history_plots"
RAW_PREFIX = "measurements_"
SUMMARY_SUFFIX = "_summary.csv"
CHECK_PREFIX = "checks_"
# raw measurements as the results store keeps them: gzip'd CSV (docs/history.md "Keeping raw samples")
COMPRESSED_SUFFIX = ".gz"


def raw_csv_name(sub: str) -> str:
    return f"{RAW_PREFIX}{sub}.csv"


def stored_raw_name(sub: str) -> str:
    """`measurements_<sub>.csv.gz`: the raw measurements in a results store's experiment."""
    return f"{raw_csv_name(sub)}{COMPRESSED_SUFFIX}"


def history_chart_id(sub: str, statistic: str) -> str:
    """history.html's chart of a statistic: what events and the PR comment link to (`#chart-<sub>-median`)."""
    return f"chart-{sub}-{CHECK_SLUGS[statistic]}"


def summary_csv_name(sub: str) -> str:
    return f"{RAW_PREFIX}{sub}{SUMMARY_SUFFIX}"


def check_csv_name(sub: str) -> str:
    return f"{CHECK_PREFIX}{sub}.csv"


def comparison_csv_name(sub: str) -> str:
    return f"{sub}_comparison.csv"


def sub_from_raw_csv(path: Path) -> str | None:
    """`measurements_<sub>.csv` (or its stored form `.csv.gz`) -> `<sub>`; None for summaries and other files."""
    name = path.name.removesuffix(COMPRESSED_SUFFIX)
    if not name.startswith(RAW_PREFIX) or not name.endswith(".csv") or name.endswith(SUMMARY_SUFFIX):
        return None
    return name[len(RAW_PREFIX):-len(".csv")]


def sub_from_summary_csv(path: Path) -> str | None:
    name = path.name
    if not name.startswith(RAW_PREFIX) or not name.endswith(SUMMARY_SUFFIX):
        return None
    return name[len(RAW_PREFIX):-len(SUMMARY_SUFFIX)]


def sub_from_check_csv(path: Path) -> str | None:
    name = path.name
    if not name.startswith(CHECK_PREFIX) or not name.endswith(".csv"):
        return None
    return name[len(CHECK_PREFIX):-len(".csv")]


def sub_plots_dir(plots_dir: Path, sub: str) -> Path:
    return plots_dir / sub


def histogram_png(plots_dir: Path, sub: str, payload: int) -> Path:
    return plots_dir / sub / f"histogram_{payload}.png"


def series_png(plots_dir: Path, sub: str, payload: int) -> Path:
    return plots_dir / sub / f"series_{payload}.png"


def check_png(plots_dir: Path, sub: str, magnitude: str) -> Path:
    return plots_dir / sub / f"check_{CHECK_SLUGS[magnitude]}.png"


def comparison_png(plots_dir: Path, magnitude: str) -> Path:
    return plots_dir / f"comparison_{PLOTTED_MAGNITUDES[magnitude]}.png"


def history_magnitude_png(history_dir: Path, sub: str, magnitude: str) -> Path:
    return history_dir / sub / f"history_{PLOTTED_MAGNITUDES[magnitude]}.png"


def history_payload_png(history_dir: Path, sub: str, payload: int, magnitude: str) -> Path:
    return history_dir / sub / f"{payload}_bytes_{CHECK_SLUGS[magnitude]}.png"

# --- metadata.json values (docs/formats.md section 8; its keys are the fields of perfgate.model) -----
# each sub-experiment's `outcome`
OUTCOME_OK = "ok"
OUTCOME_INCOMPLETE = "incomplete"  # started but could not finish (peer died, timeout, lost discovery)
OUTCOME_FAILED_TO_START = "failed_to_start"
FASTDDS_SOURCE_SYSTEM = "system_package"
FASTDDS_SOURCE_COLCON = "colcon_build"

# --- compare and determine-requirements outputs (history / compare / requirements helper) -------
REFERENCE = "Reference"
RESULT = "Result"
LIMIT = "Limit"
PERCENT_OVER_REFERENCE = "Percentage over reference"
COMPARISON_FAILURE_COLUMNS = (EXPERIMENT_TYPE, CHECK, BYTES, REFERENCE, RESULT, LIMIT, PERCENT_OVER_REFERENCE)
COMPARISON_FAILURES_FILE = "comparison_failures.csv"
REFERENCE_LABEL_PREFIX = "Reference: "
RESULT_LABEL_PREFIX = "Result: "
# each compare plot draws two magnitudes of reference and result against payload
COMPARE_PLOT_PAIRS = {"min_median": (MIN, MEDIAN), "max_99": (MAX, P99)}


def compare_png(plots_dir: Path, sub: str, pair: str) -> Path:
    return plots_dir / sub / f"comparison_{pair}.png"


def requirements_provenance_json(requirements_csv: Path) -> Path:
    """How a determined requirements CSV was made, beside it: `<stem>_provenance.json`."""
    return requirements_csv.with_name(f"{requirements_csv.stem}_provenance.json")

# --- gate reports and baselines (gate / report helper) ------------------------------------------
REPORT_HTML = "report.html"
REPORT_MARKDOWN, PLATFORM_FILES_JSON = "report.md", "platform_files.json"  # the latter: gate.platform_files' line
BASELINE_COMPARISON_DIR = "baseline_comparison"  # inside an experiment's plots/: compare vs baseline
REQUIREMENTS_DIR = "requirements"  # requirements/<platform>.csv
STORE_REMOTE_ENV = "PERFGATE_STORE_REMOTE"  # the git repository of `perfgate store push/pull` (store_sync)
BASELINES_DIR = "baselines"  # baselines/<platform>/
PLATFORM_ENV, STRICT_PLATFORM_ENV = "PERFGATE_PLATFORM", "PERFGATE_STRICT_PLATFORM"  # the latter "1": --strict-platform
PIN_CPUS_ENV = "PERFGATE_PIN_CPUS"  # the gate's --pin-cpus default, set once per reference machine
WORKSPACE_ENV, STORE_ENV = "PERFGATE_WORKSPACE", "PERFGATE_STORE"  # a runner's; the gate's --workspace, --store defaults
FASTDDS_WORKSPACE_SPEC = "workspace"  # perfgate gate --fastdds: the Fast DDS of $PERFGATE_WORKSPACE


def requirements_csv(requirements_dir: Path, platform: str) -> Path:
    return requirements_dir / f"{platform}.csv"


def gross_margins_json(requirements_csv: Path) -> Path:  # `<stem>_gross.json` beside it (latency.gross)
    return requirements_csv.with_name(f"{requirements_csv.stem}_gross.json")


# --- check record (check / junit helper) ---------------------------------------------------------
# check.json in the experiment folder: {"requirements": absolute path of the requirements CSV used,
#  "missing": [{"subexperiment", "bytes", "line", "reason"}], "not_checked": [floor sub-experiments]}
CHECK_RECORD_FILE = "check.json"

# --- Fast DDS builds: perfgate-build.json at the root of a `perfgate build` workspace, what was built
# and how (fastdds/build.py); run and gate copy its Fast DDS part into metadata.json ------------------
BUILD_RECORD_FILE = "perfgate-build.json"
BUILD_OK = "ok"
BUILD_FAILED = "failed"
BUILD_TESTCASE = "build"  # the JUnit testcase (and suite) that carries a failed build
ENGINE_HARNESS = "harness"  # perfgate run --engine: perfgate's own harness from native/
ENGINE_UPSTREAM = "upstream"  # Fast DDS' own performance.latency tests (half round trip)
ENGINES = (ENGINE_HARNESS, ENGINE_UPSTREAM)

# --- A/B measurements and their verdict: <ab dir>/metadata.json, rounds/<NN>/<arm>/ (an experiment
# folder per arm) and the verdict's files beside rounds/ ---------------------------------------------
AB_ROUNDS_DIR = "rounds"
AB_DIR = "ab"  # inside a gate's experiment folder: the A/B against --baseline-build
AB_ARMS = ("baseline", "candidate")
VERDICT_CSV = "verdict.csv"
VERDICT_PAYLOADS_CSV = "verdict_payloads.csv"
VERDICT_JSON = "verdict.json"
AB_CURTAILED_JSON = "curtailed.json"  # an A/B that stopped measuring decided sub-experiments (ab.curtail)
VERDICT_HEATMAP_PNG = "verdict_heatmap.png"  # in <ab dir>/plots/
FASTDDS_SYSTEM_SPEC = "system"  # perfgate ab --baseline/--candidate: the system Fast DDS
PIN_AUTO = "auto"  # --pin-cpus auto (the default): two distinct CPUs, isolated ones first
PIN_NONE = "none"

# --- resources of the harness processes (measure.resources / resources_table; docs/formats.md section 16)
# resources_<sub>.csv beside the raw CSV: a row per process and sampling interval; the check of
# <platform>_resources.json writes resource_checks.csv (another prefix: resources_*.csv are the samples).
RESOURCES_PREFIX = "resources_"
RESOURCE_TIME = "time[ms]"
RESOURCE_ROLE = "role"
RESOURCE_CPU = "cpu[%]"
RESOURCE_RSS = "rss[KB]"
RESOURCE_VSZ = "vsz[KB]"
RESOURCE_COLUMNS = (RESOURCE_TIME, RESOURCE_ROLE, RESOURCE_CPU, RESOURCE_RSS, RESOURCE_VSZ)
ROLE = "Role"
RESOURCE_CHECKS_FILE = "resource_checks.csv"
RESOURCE_CHECK_COLUMNS = (EXPERIMENT_TYPE, ROLE, CHECK, REQUIREMENT, EXPERIMENT, DIFFERENCE, PERCENT_OVER, STATUS)
RESOURCES_REQUIREMENTS_SUFFIX = "_resources.json"


def resources_csv_name(sub: str) -> str:
    return f"{RESOURCES_PREFIX}{sub}.csv"


def sub_from_resources_csv(path: Path) -> str | None:
    name = Path(path).name
    if name.startswith(RESOURCES_PREFIX) and name.endswith(".csv") and len(name) > len(RESOURCES_PREFIX) + 4:
        return name[len(RESOURCES_PREFIX):-len(".csv")]
    return None


def resources_requirements_json(requirements_dir: Path, platform: str) -> Path:
    """requirements/<platform>_resources.json: the platform's, wherever the latency requirements are."""
    return Path(requirements_dir) / f"{platform}{RESOURCES_REQUIREMENTS_SUFFIX}"


def resources_png(plots_dir: Path, sub: str) -> Path:
    return sub_plots_dir(plots_dir, sub) / "resources.png"
