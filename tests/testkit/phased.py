"""Planted-phase scenarios for the phase, rank and compare tests and the rank benchmark.

A phase is (duration_ns, {kernel name: weight}, busy fraction): kernels are drawn at random from the
mix, with random durations around MEAN_KERNEL_NS and idle gaps sized so the stream is busy for
`busy` of the time. Kernels never cross a planted boundary, so the planted truth is exact. Each
kernel is launched by a short launch call just before it starts (the host's own work fills the
rest of each gap), so the idle gaps read as host work, as they do in a real host-bound phase.
"""

from __future__ import annotations

import random
from pathlib import Path

from testkit.nsys_writer import write_nsys
from testkit.scenario import ApiCall, Device, Kernel, Marker, MpiCall, Process, Scenario

PID = 4242
T0 = 1_000_000_000
MS = 1_000_000
US = 1_000
MEAN_KERNEL_NS = 200 * US
LAUNCH_NS = 5 * US          # the launch call
LAUNCH_LATENCY_NS = 3 * US  # launch call end -> kernel start

Phase = tuple[int, dict[str, float], float]


def phased(phases: list[Phase], seed: int = 0, pid: int = PID, rank: int | None = None,
           markers: list[str] | None = None, t0: int = T0) -> tuple[Scenario, list[int]]:
    """A one-GPU scenario with the given phases; returns it and the planted boundaries (absolute ns)."""
    rng = random.Random(seed)
    kernels: list[Kernel] = []
    calls: list[ApiCall] = []
    bounds: list[int] = []
    t = t0
    for dur, mix, busy in phases:
        end = t + dur
        names = list(mix)
        weights = [mix[n] for n in names]
        # the first launch call must not start before t0, where the planted span begins
        cur = t if t > t0 else t + LAUNCH_NS + LAUNCH_LATENCY_NS
        while True:
            kd = max(1_000, int(rng.uniform(0.5, 1.5) * MEAN_KERNEL_NS))
            if cur + kd > end:
                break
            if busy > 0:
                corr = len(kernels) + 1
                kernels.append(Kernel(pid, 0, 7, cur, cur + kd, rng.choices(names, weights)[0], correlation_id=corr))
                call_end = cur - LAUNCH_LATENCY_NS
                calls.append(ApiCall(pid, pid, call_end - LAUNCH_NS, call_end, "launch", corr))
            gap = int(kd * (1 - busy) / busy) if busy > 0 else kd
            cur += kd + int(gap * rng.uniform(0.5, 1.5))
        bounds.append(end)
        t = end
    scen = Scenario(name="phased", description="planted phases", devices=[Device(id=0)],
                    processes=[Process(pid, "app", {pid: "main"}, rank=rank)], kernels=kernels,
                    api_calls=calls)
    if markers:
        start = t0
        for (dur, _, _), text in zip(phases, markers, strict=True):
            scen.markers.append(Marker(pid, pid, start, start + dur, text))
            start += dur
    # a marker-free profile still needs its span to run from t0 to the last planted boundary
    scen.markers.append(Marker(pid, pid + 1, t0, t, "capture"))
    return scen, bounds[:-1]


def add_mpi(scen: Scenario, rank: int, calls: list[tuple[int, int, str]], pid: int = PID) -> None:
    """Append MPI calls (start, end, name) as collectives of `rank`."""
    for s, e, name in calls:
        scen.mpi_calls.append(MpiCall(pid, pid, s, e, name, "collective", 8, rank))


def write(scen: Scenario, path: Path) -> Path:
    """Write `scen` as an nsys export."""
    return write_nsys(scen, path)
