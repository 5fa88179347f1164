"""`pa compare` verdict, --fail-on exit codes, iterations, per-GPU rows, capped percentages and the
warnings that two captures may not be comparable."""

from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import needs_real_profile, real_nsys_profile
from testkit.phased import MS, phased, write

from pa.cli import main
from pa.compare import compare
from pa.compare.changes import pct_change
from pa.formatting import duration_pair
from pa.metrics.model import ProfileSummary
from pa.metrics.summarize import summarize

MIX = {"step_kernel": 0.7, "update_kernel": 0.3}


def _steps(path: Path, n: int, step_ms: float, mix: dict[str, float] = MIX, seed: int = 0) -> Path:
    """A capture of n back-to-back 'Iteration <i>' ranges of step_ms each."""
    dur = int(step_ms * MS)
    scen, _ = phased([(dur, mix, 0.8)] * n, seed=seed, markers=[f"Iteration {i}" for i in range(n)])
    return write(scen, path)


@pytest.fixture(scope="module")
def caps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("verdict")
    return {"base": _steps(d / "base.sqlite", 10, 20), "faster": _steps(d / "faster.sqlite", 10, 15),
            "longer": _steps(d / "longer.sqlite", 20, 20, seed=1),
            "other": _steps(d / "other.sqlite", 10, 20, mix={"foo_kernel": 1.0})}


def test_iterations_found_as_the_profile_holds_them(caps: dict[str, Path]) -> None:
    it = summarize(caps["base"]).markers.iterations  # type: ignore[union-attr]
    with sqlite3.connect(caps["base"]) as con:   # independent: the ranges as written
        durs = [e - s for s, e in con.execute(
            "SELECT start, end FROM NVTX_EVENTS WHERE text LIKE 'Iteration %' OR textId IN "
            "(SELECT id FROM StringIds WHERE value LIKE 'Iteration %')")]
    assert it is not None and it.name == "Iteration #"
    assert it.count == len(durs) == 10 and it.median_ns == statistics.median(durs) == 20 * MS


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["compare", *args, "--no-rules", "--no-llm"])
    return r.exit_code, r.stdout, r.stderr


def test_verdict_on_iteration_median_and_fail_on_exit_codes(caps: dict[str, Path]) -> None:
    code, out, _ = _run(str(caps["base"]), str(caps["faster"]), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "improvement" and doc["verdict_basis"] == "iteration_median"
    med = doc["iterations"]["median"]
    assert (med["before"], med["after"]) == (20 * MS, 15 * MS) and med["delta_pct"] == pytest.approx(-25.0)
    assert _run(str(caps["base"]), str(caps["faster"]), "--fail-on", "improvement")[0] == 1
    assert _run(str(caps["base"]), str(caps["faster"]), "--fail-on", "regression")[0] == 0
    code, out, err = _run(str(caps["faster"]), str(caps["base"]), "--fail-on", "regression")
    assert code == 1 and "VERDICT: REGRESSION" in out and "matches --fail-on regression" in err
    assert _run(str(caps["faster"]), str(caps["base"]), "--fail-on", "change")[0] == 1
    assert _run(str(caps["base"]), str(caps["base"]), "--fail-on", "change")[0] == 0


def test_a_longer_capture_of_the_same_iterations_is_within_noise(caps: dict[str, Path]) -> None:
    c = compare(summarize(caps["base"]), summarize(caps["longer"]))
    span = next(x for x in c.overview if x.metric == "span")
    assert span.significant and span.delta is not None and span.delta > 0   # twice the steps, twice the span
    assert c.verdict == "within_noise" and c.verdict_basis == "iteration_median"
    assert c.iterations is not None and (c.iterations.before_count, c.iterations.after_count) == (10, 20)


def test_without_iterations_the_verdict_rests_on_the_gpu_window(tmp_path: Path) -> None:
    sb, _ = phased([(100 * MS, MIX, 0.8)], seed=0)
    sa, _ = phased([(130 * MS, MIX, 0.8)], seed=0)
    b, a = summarize(write(sb, tmp_path / "b.sqlite")), summarize(write(sa, tmp_path / "a.sqlite"))
    c = compare(b, a)
    assert c.iterations is None and "no iteration range in either capture" in c.iterations_reason
    assert (c.verdict, c.verdict_basis) == ("regression", "gpu_window")
    assert "from {} to {}".format(*duration_pair(b.gpu.window_ns, a.gpu.window_ns)) in c.verdict_reason
    # without GPU operations on a side, the span decides
    c = compare(b.model_copy(update={"gpu": b.gpu.model_copy(update={"window_ns": 0})}), a)
    assert c.verdict_basis == "span" and "from 100 ms to 130 ms (+30.0 %)" in c.verdict_reason


def test_percentages_from_zero_are_capped() -> None:
    assert pct_change(0, 5) == (None, "new")
    assert pct_change(0, 0) == (None, None)
    assert pct_change(2, 886) == (None, "from ~0")      # +44200 % would say nothing
    assert pct_change(100, 150) == (50.0, None)
    assert pct_change(100, 0) == (-100.0, None)


def test_new_kernels_and_other_application_are_said_plainly(caps: dict[str, Path]) -> None:
    b, o = summarize(caps["base"]), summarize(caps["other"])
    c = compare(b, o)
    foo = next(k for k in c.kernels if k.name == "foo_kernel")
    assert foo.status == "new" and foo.delta_pct is None and foo.note == "new"
    assert any("different applications" in w and "0 % of BEFORE's kernel time" in w for w in c.warnings)
    assert not any("different applications" in w for w in compare(b, summarize(caps["faster"])).warnings)
    code, out, _ = _run(str(caps["base"]), str(caps["other"]), "--format", "markdown")
    assert code == 0 and "different applications" in out and "+inf" not in out


def _with_devices(s: ProfileSummary, names: list[str], sms: list[int]) -> ProfileSummary:
    d0 = s.devices[0]
    devs = [d0.model_copy(update={"id": i, "name": n, "busy_ns": d0.busy_ns * (i + 1),
                                  "hardware": d0.hardware.model_copy(update={"sm_count": sm})})
            for i, (n, sm) in enumerate(zip(names, sms, strict=True))]
    return s.model_copy(update={"devices": devs})


def test_per_gpu_rows_and_different_gpus_warning(caps: dict[str, Path]) -> None:
    b = _with_devices(summarize(caps["base"]), ["A100", "A100"], [108, 108])
    a = _with_devices(summarize(caps["faster"]), ["H100", "H100"], [132, 132])
    c = compare(b, a)
    assert [d.device for d in c.devices] == [0, 1]
    busy1 = next(x for x in c.devices[1].changes if x.metric == "gpu busy")
    assert (busy1.before, busy1.after) == (b.devices[1].busy_ns, a.devices[1].busy_ns)
    gpu_warning = next(w for w in c.warnings if "different GPUs" in w)
    assert "2× A100 (cc 8.0, 108 SMs)" in gpu_warning and "2× H100 (cc 8.0, 132 SMs)" in gpu_warning
    same = compare(b, _with_devices(summarize(caps["faster"]), ["A100", "A100"], [108, 108]))
    assert not any("different GPUs" in w for w in same.warnings)
    from pa.compare.render import render_text

    text = render_text(c)
    assert "Per GPU:" in text and "GPU 1 A100" in text


def _startup_then_steps(path: Path, startup_ms: int) -> Path:
    """A host-only start-up of `startup_ms` (a marker range, so the span includes it), then the same 200 steps."""
    from testkit.facts import scenario_from_facts

    scen = scenario_from_facts([
        {"marker": "init", "steps": [{"host": startup_ms * 1000}]},
        {"repeat": 200, "steps": [{"launch": "step_kernel", "us": 400, "api_us": 5}, {"host": 600}]}])
    return write(scen, path)


def test_a_shorter_start_up_is_not_an_improvement_of_the_steady_state(tmp_path: Path) -> None:
    """Same steady work, 300 ms less start-up: the span says -60 %, the GPU's window says nothing changed."""
    b = summarize(_startup_then_steps(tmp_path / "b.sqlite", 450))
    a = summarize(_startup_then_steps(tmp_path / "a.sqlite", 150))
    c = compare(b, a)
    span = next(x for x in c.overview if x.metric == "span")
    window = next(x for x in c.overview if x.metric == "gpu window")
    startup = next(x for x in c.overview if x.metric == "start-up")
    assert span.significant and span.delta is not None and span.delta < 0
    assert (c.verdict, c.verdict_basis) == ("within_noise", "gpu_window")
    assert window.before == b.gpu.window_ns and window.after == a.gpu.window_ns and not window.significant
    assert startup.significant and startup.delta is not None and -301 * MS < startup.delta < -299 * MS
    assert "Start-up (to the first GPU operation) went from" in c.verdict_reason


def test_a_baseline_json_with_an_out_of_range_number_is_bad_input(tmp_path: Path) -> None:
    """Issue 26.15: span_ns = 10**400 in a hand-edited baseline is one error line and exit 2, not a bug."""
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import example

    prof = write_nsys(example(), tmp_path / "p.sqlite")
    res = CliRunner().invoke(main, ["summary", "--json", str(prof)])
    doc = json.loads(res.stdout)
    doc["span_ns"] = 10 ** 400
    (tmp_path / "base.json").write_text(json.dumps(doc))
    res = CliRunner().invoke(main, ["compare", str(tmp_path / "base.json"), str(prof), "--no-llm"])
    assert res.exit_code == 2 and "summary.span_ns is out of range" in res.output
    assert len(res.output.strip().splitlines()) == 1
    res = CliRunner().invoke(main, ["compare", str(prof), str(prof), "--no-llm"])
    # the example marks its 40 solver iterations ("iteration #", inside the user's "solve" range)
    assert res.exit_code == 0 and "(on the median iteration time)" in res.stdout


def test_a_capture_without_gpu_records_is_compared_on_what_both_hold(
        caps: dict[str, Path], scenario_profiles: object) -> None:
    """Issue 30.6: against a capture with no GPU records, no kernel "vanished", no GPU row, no verdict."""
    nogpu = scenario_profiles.path("gpu_not_captured", "nsys")  # type: ignore[attr-defined]
    with sqlite3.connect(nogpu) as con:   # independent: the file really holds no GPU record
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        gpu_rows = sum(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables
                       if t.startswith("CUPTI_ACTIVITY_KIND_") and t.split("_")[-1] in ("KERNEL", "MEMCPY", "MEMSET"))
    assert gpu_rows == 0
    b, a = summarize(caps["base"]), summarize(nogpu)
    c = compare(b, a)
    assert (c.verdict, c.verdict_basis) == ("not_comparable", "none") and not c.within_noise
    assert c.kernels == [] and c.devices == [] and c.phases == []
    rows = {x.metric: x for x in c.overview}
    for m in ("gpu window", "gpu busy", "gpu idle", "kernel time", "kernel count", "utilization"):
        assert rows[m].after is None and rows[m].before is not None and not rows[m].significant, m
    assert rows["span"].before == b.span_ns and rows["span"].after == a.span_ns   # both captured: compared
    assert not any(k.kind in ("kernel", "idle") for k in c.key_differences)
    assert any(w.startswith(f"AFTER ({nogpu.name}) holds no GPU activity records") for w in c.warnings)
    # Swapped: BEFORE is the side that lacks them.
    assert any(w.startswith("BEFORE") for w in compare(a, b).warnings)
    code, out, _ = _run(str(caps["base"]), str(nogpu), "--fail-on", "regression")
    assert code == 0 and "vanished" not in out and "REGRESSION" not in out
    assert out.index("holds no GPU activity records") < out.index("VERDICT: NOT COMPARABLE")
    doc = json.loads(_run(str(caps["base"]), str(nogpu), "--json")[1])
    assert doc["verdict"] == "not_comparable" and doc["warnings"] and doc["kernels"] == []


CLOVERLEAF = real_nsys_profile("nsys2024.5_cloverleaf_a100.sqlite")
QCU_NO_GPU = real_nsys_profile("nsys2024.1_qcu_no_gpu_activity.sqlite")


@needs_real_profile(CLOVERLEAF, QCU_NO_GPU)
def test_real_capture_against_one_without_gpu_activity(summary_of: object) -> None:
    """Issue 30.6 on the shared profiles: cloverleaf (A100) against qcu (runtime calls, no GPU rows)."""
    before, after = CLOVERLEAF, QCU_NO_GPU
    c = compare(summary_of(before), summary_of(after))  # type: ignore[operator]
    assert c.verdict == "not_comparable" and c.kernels == [] and c.warnings
    idle = next(x for x in c.overview if x.metric == "gpu idle")
    assert idle.after is None and not idle.significant


@pytest.mark.parametrize("fmt,verdict_mark", [("text", "VERDICT:"), ("markdown", "**Verdict:"),
                                              ("html", 'id="verdict"')])
def test_the_different_applications_warning_comes_before_the_verdict(
        caps: dict[str, Path], fmt: str, verdict_mark: str) -> None:
    """Issue 30.7: the warning qualifies the verdict, so it is read first, in every format."""
    code, out, _ = _run(str(caps["base"]), str(caps["other"]), "--format", fmt)
    assert code == 0
    assert out.index("different applications") < out.index(verdict_mark)


ICON_GPU, ICON_CPU = real_nsys_profile("icon_gpu.sqlite"), real_nsys_profile("icon_cpu.sqlite")


@needs_real_profile(ICON_GPU, ICON_CPU)
def test_a_gpu_build_against_its_cpu_build_is_judged_on_the_iterations_both_mark(summary_of: object) -> None:
    """Issue 30.6's limit: no GPU records on one side leaves the verdict only to what both hold; the
    ICON GPU and CPU builds both mark 'for_each' iterations, a host-side measure, so it stands."""
    b, a = summary_of(ICON_GPU), summary_of(ICON_CPU)  # type: ignore[operator]
    c = compare(b, a)
    assert c.verdict_basis == "iteration_median" and c.iterations is not None
    assert (c.iterations.median.before, c.iterations.median.after) == (b.markers.iterations.median_ns,
                                                                       a.markers.iterations.median_ns)
    assert c.verdict == ("regression" if a.markers.iterations.median_ns > b.markers.iterations.median_ns
                         else "improvement")
    assert c.kernels == [] and any("rests on the iteration range both mark" in w for w in c.warnings)
