"""NCCL/RCCL kernels are communication (pa/metrics/communication.py): hand counts from the
planted events, and the compute rules never pick a communication kernel."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference import reference_union  # tests/ is on sys.path
from testkit import scenarios
from testkit.nsys_writer import write_nsys
from testkit.scenario import Kernel

from pa.metrics.summarize import summarize
from pa.rules.engine import evaluate, load_ruleset


def _is_comm(k: Kernel) -> bool:
    return k.name.lower().startswith(("nccl", "rccl"))


def _subtract(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Length of the union of `a` minus the union of `b`, counted by hand over the boundaries."""
    return reference_union(a) - (reference_union(a) + reference_union(b) - reference_union(a + b))


@pytest.mark.parametrize("name", ["nccl_exposed", "nccl_imbalanced", "nccl_overlapped"])
def test_communication_facts_match_a_hand_count(tmp_path: Path, name: str) -> None:
    scen = scenarios.ALL_SCENARIOS[name]()
    write_nsys(scen, tmp_path / "p.sqlite")
    s = summarize(tmp_path / "p.sqlite")
    gains, computes = [], []
    for d in s.devices:
        comm = [(k.start, k.end) for k in scen.kernels if k.device == d.id and _is_comm(k)]
        compute = [(k.start, k.end) for k in scen.kernels if k.device == d.id and not _is_comm(k)]
        exposed = _subtract(comm, compute)
        overlapped = reference_union(comm) - exposed
        assert d.communication_kernel_count == len(comm)
        assert d.communication_time_ns == sum(e - b for b, e in comm)
        assert d.communication_busy_ns == reference_union(comm)
        assert d.communication_exposed_ns == exposed
        assert d.compute_busy_ns == reference_union(compute)
        assert d.communication_recoverable_ns == min(exposed, reference_union(compute) - overlapped)
        gains.append(min(exposed, reference_union(compute) - overlapped))
        computes.append(reference_union(compute))
    g = s.gpu
    assert g.communication_devices == 2
    assert g.communication_recoverable_ns == min(gains) * 2
    assert g.compute_busy_ns == sum(computes)
    mean = sum(computes) / 2
    assert g.compute_imbalance_ns is not None and 0 <= g.compute_imbalance_ns - (max(computes) - mean) < 1
    assert {k.kernel_class for k in s.kernels} == {"compute", "communication"}


def test_a_communication_kernel_is_never_the_kernel_to_optimise(tmp_path: Path) -> None:
    # 1 ms of compute then a 3 ms allreduce per step: the allreduce has most of the kernel time, yet
    # the dominant-kernel and compute-bound rules speak of the compute kernel only.
    b = scenarios._collective_steps("comm_heavy", "1 ms compute, 3 ms allreduce", (1_000_000, 1_000_000), 3_000_000)
    write_nsys(b.done(["communication"], "allreduce-heavy"), tmp_path / "p.sqlite")
    s = summarize(tmp_path / "p.sqlite")
    assert s.kernels[0].kernel_class == "communication"          # the largest by time
    result = evaluate(s, load_ruleset())
    kern = next(o for o in result.outcomes if o.rule_id == "GPU-KERN-001")
    assert kern.values["dominant_kernel_name"] == "gemm_tn_kernel"
    # busy counts compute only: 1 ms of every 4 ms step (the allreduce keeps the GPU busy, not computing)
    # over the analysis window (both GPUs' active windows), not the span
    assert kern.values["kernel_busy_frac"] == pytest.approx(s.gpu.compute_busy_ns / s.gpu.window_ns)
    assert kern.values["kernel_busy_frac"] == pytest.approx(0.25, abs=0.01)
    assert not any("nccl" in h.title.lower() for h in result.hypotheses if h.rule_id != "COMM-001")
    assert result.hypotheses[0].rule_id == "COMM-001"
