"""calibrate's pure parts: the runner check's lines, the plan's steps, the resources derivation, the budget."""
from __future__ import annotations

import pytest

from perfgate.calibrate import plan as p, resources, resume, runner_checks
from perfgate.errors import InputError

TUNED = {"governors": {"0": "performance", "1": "performance"}, "turbo": "off", "smt": "off",
         "isolated_cpus": [2, 3], "online_cpus": [0, 1, 2, 3], "aslr": "on (full)"}
THIS_VM = {"governors": {}, "turbo": "unknown", "smt": "unsupported", "isolated_cpus": [], "online_cpus": [0, 1],
           "aslr": "on (full)"}


def test_a_tuned_runner_has_only_ok_lines():
    lines = [f.line() for f in runner_checks.findings(TUNED, 0.1, "tsc")]
    assert lines == ["ok      isolated CPUs: CPUs 2,3 (isolcpus)", "ok      governor: performance on every CPU",
                     "ok      turbo: off", "ok      SMT: off", "ok      load: 0.10 over the last minute",
                     "ok      clock source: tsc"]


def test_an_untuned_vm_says_what_to_fix_and_what_cannot_be_read():
    found = {f.setting: f for f in runner_checks.findings(THIS_VM, 2.5, "kvm-clock")}
    assert [f.status for f in found.values()] == ["fix", "unknown", "unknown", "ok", "fix", "fix"]
    assert found["isolated CPUs"].line().startswith("fix     isolated CPUs: 0 isolated; isolate two CPUs")
    assert found["governor"].line() == ("unknown governor: no cpufreq on this machine: frequency scaling cannot "
                                        "be read")
    assert found["load"].text == "2.50 over the last minute: stop what else runs here"
    assert found["clock source"].text.startswith("kvm-clock: reading it costs more than tsc")
    other = dict(TUNED, governors={"0": "performance", "1": "powersave"}, turbo="on", smt="on")
    lines = {f.setting: f.status for f in runner_checks.findings(other, None, None)}
    assert lines == {"isolated CPUs": "ok", "governor": "fix", "turbo": "fix", "SMT": "fix", "load": "unknown",
                     "clock source": "unknown"}


def test_steps_bring_what_they_need():
    assert p.derived_steps(None) == tuple(p.DERIVED_STEPS)
    assert p.derived_steps(["gross"]) == ("requirements", "gross")
    assert p.derived_steps(["layout"]) == ("layout", "detection")
    made = p.make_plan(platform="x", quick=True, fastdds=None, workspace=None, subexperiments=None,
                       steps=["gross"])
    assert made.measured == ("latency", "aa") and made.fastdds_spec == "system" and len(made.subexperiments) == 10
    assert p.unit_names("topology", p.QUICK) == ["light/run-01", "heavy/run-01", "light/run-02", "heavy/run-02"]
    # a build with layout variants: the layout thresholds from A/Bs of them, as many pairs as they give
    variants = tuple(f"/ws/installs/c/layouts/{k}" for k in range(1, 8))
    with_layouts = p.make_plan(platform="x", quick=False, fastdds=None, workspace="/ws", subexperiments=None,
                               steps=["layout"], layout_variants=variants)
    assert with_layouts.measured == ("aa", "layout_ab") and with_layouts.counts.layout_pairs == 3
    assert p.unit_names("layout_ab", with_layouts.counts) == ["pair-01", "pair-02", "pair-03"]
    one = p.make_plan(platform="x", quick=False, fastdds=None, workspace="/ws", subexperiments=None,
                      steps=["layout"], layout_variants=variants[:1])
    assert one.measured == ("aa",) and one.layout_variants == ()
    with pytest.raises(InputError, match="unknown step 'latencies'"):
        p.make_plan(platform="x", quick=True, fastdds=None, workspace=None, subexperiments=None, steps=["latencies"])
    with pytest.raises(InputError, match="'floor_udp' is not one of the ten"):
        p.make_plan(platform="x", quick=True, fastdds=None, workspace=None, subexperiments=["floor_udp"], steps=None)


def test_resources_follow_the_documented_method():
    observed = {
        "intraprocess_reliable": {"cpu_mean_percent": {"both": [30.0, 61.1]}, "rss_peak_kb": {"both": [25992, 26008]},
                                  "p99_us": [10.5, 37.7]},
        "interprocess_best_effort": {"cpu_mean_percent": {"publisher": [21.6, 28.1], "subscriber": [27.3, 19.8]},
                                     "rss_peak_kb": {"publisher": [20152, 20124], "subscriber": [20556, 20500]},
                                     "p99_us": [3741.3, 5772.9]},
    }
    document = resources.derive(observed, "p")
    assert document["resources"] == {"cpu[%]": 45.0, "rss[KB]": 34000}  # 1.6 x 28.1; the largest rss limit
    assert document["resources_by_subexperiment"] == {"intraprocess_reliable": {"rss[KB]": 34000, "cpu[%]": 97.8},
                                                      "interprocess_best_effort": {"rss[KB]": 27000}}
    assert document["late_limit_us"] == {"intraprocess_reliable": 500, "interprocess_best_effort": 12000}
    assert document["latency_total"] == {"lost[%]": 0.5, "late[%]": 1.0}


def test_the_budget_starts_no_run_that_would_not_fit():
    now = [100.0]
    budget = resume.Budget(60.0, clock=lambda: now[0])
    assert budget.allows(None) and budget.allows(60.0) and not budget.allows(61.0)
    now[0] = 150.0
    assert budget.left() == 10.0 and budget.allows(None) and not budget.allows(11.0)
    now[0] = 161.0
    assert not budget.allows(None)
    assert resume.Budget(None).allows(1e9) and resume.duration_text(3725) == "1 h 2 min"
