"""Advice that fits the programming model (issue 25, item 9).

The model is detected from names pa already reads (rules/models.yaml); for the rules a model lists,
its suggestion replaces the rule's own. The finding, its evidence and its bound do not change.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import missing_reason, real_nsys_profile
from testkit.facts import scenario_from_facts
from testkit.nsys_writer import write_nsys

from pa.errors import UserError
from pa.metrics.summarize import summarize
from pa.rules.evaluate import evaluate, programming_model
from pa.rules.loader import load_ruleset

# the same loop of round trips, its kernel named by an OpenMP offload compiler or by a plain CUDA program
ROUND_TRIPS = [{"repeat": 20, "steps": [
    {"copy": "HtoD", "mib": 32, "gbps": 12, "mem": "pinned"},
    {"launch": "KERNEL", "us": 1000},
    {"copy": "DtoH", "mib": 32, "gbps": 12, "mem": "pinned"},
    {"sync": "stream"}]}]


def _round_trip_summary(tmp_path: Path, kernel: str):
    blocks = [{**b, "steps": [{**s, "launch": kernel} if "launch" in s else s for s in b["steps"]]}
              for b in ROUND_TRIPS]
    return summarize(write_nsys(scenario_from_facts(blocks), tmp_path / f"{kernel}.sqlite"))


def _suggestion(summary, rule_id: str, ruleset=None) -> str:
    hyps = evaluate(summary, ruleset or load_ruleset()).hypotheses
    hit = [h for h in hyps if h.rule_id == rule_id]
    assert hit, f"{rule_id} did not fire: {[h.rule_id for h in hyps]}"
    return hit[0].suggestion


def test_an_openmp_offload_kernel_gets_target_data_advice_and_a_cuda_kernel_does_not(tmp_path: Path) -> None:
    omp = _round_trip_summary(tmp_path, "__omp_offloading_fd00_2a_solve_l204")
    cuda = _round_trip_summary(tmp_path, "solve_kernel")
    assert programming_model(omp, load_ruleset()).key == "openmp_offload"
    assert programming_model(cuda, load_ruleset()) is None
    omp_text, cuda_text = _suggestion(omp, "GPU-COPY-004"), _suggestion(cuda, "GPU-COPY-004")
    assert "target data" in omp_text and "OpenACC" not in omp_text
    assert omp_text != cuda_text
    # the finding itself does not depend on the model: same claim either way
    f = {h.rule_id: h.runtime_fraction_pct for h in evaluate(omp, load_ruleset()).hypotheses}
    g = {h.rule_id: h.runtime_fraction_pct for h in evaluate(cuda, load_ruleset()).hypotheses}
    assert f["GPU-COPY-004"] == pytest.approx(g["GPU-COPY-004"])


def test_a_site_pack_adds_its_own_model(tmp_path: Path) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(yaml.safe_dump({"pack": "site", "version": 1, "description": "a site model",
                                    "programming_models": {"kokkos_site": {
        "name": "our Kokkos build", "kernel_prefixes": ["solve_"],
        "suggestions": {"GPU-COPY-004": "Keep the Views on the device: deep_copy once before the loop."}}}}))
    summary = _round_trip_summary(tmp_path, "solve_kernel")
    assert _suggestion(summary, "GPU-COPY-004", load_ruleset([pack])) == \
        "Keep the Views on the device: deep_copy once before the loop."


@pytest.mark.parametrize("given, message", [
    ({"m": {"suggestions": {"GPU-NOPE-001": "x"}}}, "unknown rule id"),
    ({"m": {"suggestions": {"GPU-COPY-004": "{{ no_such_name }}"}}}, "unknown name"),
    ({"m": {"kernel_prefix": ["x"]}}, "kernel_prefix"),
])
def test_a_bad_model_is_a_clear_error(tmp_path: Path, given: dict, message: str) -> None:
    pack = tmp_path / "bad.yaml"
    pack.write_text(yaml.safe_dump({"pack": "bad", "version": 1, "description": "bad", "programming_models": given}))
    with pytest.raises(UserError, match=message):
        load_ruleset([pack])


def _real(name: str) -> Path:
    path = real_nsys_profile(name)
    if not path.is_file():
        pytest.skip(missing_reason(path))
    return path


def test_openacc_is_not_told_to_use_cuda_graphs(summary_of) -> None:
    s = summary_of(_real("openacc_legacy.sqlite"))
    text = _suggestion(s, "GPU-LAUNCH-001")
    assert "cannot capture CUDA Graphs" in text and "cudaStreamBeginCapture" not in text
    assert "data" in _suggestion(s, "GPU-ALLOC-001")


def test_eager_pytorch_dispatch_is_told_torch_compile(summary_of) -> None:
    s = summary_of(_real("mfu_after.sqlite"))
    assert "torch.compile" in _suggestion(s, "GPU-DISPATCH-001")


def test_a_plain_cuda_program_keeps_the_vendor_advice(summary_of) -> None:
    s = summary_of(_real("saxpy_mpi_2022.sqlite"))
    assert programming_model(s, load_ruleset()) is None


def test_a_site_pack_names_its_own_compile_ranges(tmp_path: Path) -> None:
    """Compile names are rule-pack data (issue 25, item 3): `marker_names.compile_ranges` adds texts."""
    blocks: list[dict] = []
    for _ in range(10):
        blocks.append({"steps": [{"launch": "step_kernel", "us": 1000}, {"sync": "stream"}]})
        blocks.append({"marker": "emit_ptx for stage", "steps": [{"host": 3000}]})
    path = write_nsys(scenario_from_facts(blocks), tmp_path / "codegen.sqlite")
    pack = tmp_path / "site.yaml"
    pack.write_text(yaml.safe_dump({"pack": "site", "version": 1, "description": "our code generator",
                                    "marker_names": {"compile_ranges": ["EMIT_PTX"]}}))
    plain = summarize(path).gpu.idle_by_cause
    site = summarize(path, marker_naming=load_ruleset([pack]).marker_naming).gpu.idle_by_cause
    # 9 gaps between the 10 kernels, each ~3 ms inside the range: host work by default, compilation
    # once the site names the range (case-insensitively, as text)
    assert plain.get("compile", 0) == 0 and plain.get("cpu_stall", 0) > 9 * 2_900_000
    assert site.get("cpu_stall", 0) == 0 and site.get("compile", 0) > 9 * 2_900_000
