"""Input facts stated inline in a rule case, turned into a `Scenario` the writers can write.

Why: a rule case that names a Python scenario does not show the input it tests. A case can instead
carry its input as data (as sqlfluff's YAML cases carry their SQL): one process on one GPU whose
host thread runs a list of blocks, each a list of steps repeated `repeat` times, optionally inside
an NVTX range. Times are µs, sizes MiB (or `bytes`). Every step starts when the previous one ends
on the host; GPU work queues on its stream behind earlier work, as on a real device.

    input:
      - repeat: 100            # the block's steps, 100 times
        marker: solve          # an NVTX range around the whole block (optional)
        steps:
          - launch: gemm_kernel   # cudaLaunchKernel (api_us, default 5) and a kernel of `us` µs
            us: 200               # optional: grid (blocks, default 1024), stream (default 7)
          - graph: [k1, k2, k3]   # cudaGraphLaunch (api_us, default 10) and the graph's kernels, `us` µs
            us: 2                 # each, one after the other, traced at node granularity (stream)
          - sync: stream          # stream | device | event: blocks until the stream drains
          - host: 50              # host work, no API call
          - copy: HtoD            # HtoD | DtoH | DtoD; mib or bytes; gbps; mem: pageable | pinned;
            mib: 8                # async: true queues it (cudaMemcpyAsync) instead of blocking
            mem: pageable
            gbps: 6
          - memset: 4             # MiB, taking `us` µs on the device
            us: 100
          - malloc: 300           # a cudaMalloc call of 300 µs (free: likewise)
          - mpi: MPI_Allreduce    # an MPI call of `us` µs carrying `bytes` (rank 0 of one process)
            us: 2000
          - call: stream_sync     # a bare API call of `us` µs with no GPU record (an ApiKind:
            us: 2000              # launch, stream_sync, ...): a capture whose GPU side is missing
          - migrate: DtoH         # a unified-memory page-fault migration of `kib` KiB taking `us` µs
            kib: 64               # on the device, no API call; the host touching the pages waits
            us: 12

A step's first key names it; unknown keys are an error, so a typo never silently changes the input.
"""

from __future__ import annotations

from typing import Any

from testkit.scenario import Copy, Device, Process, Scenario
from testkit.scenarios import MIB, PID, T0, US, _Builder

_MPI_KIND = {"MPI_Wait": "wait", "MPI_Waitall": "wait", "MPI_Send": "p2p", "MPI_Recv": "p2p",
             "MPI_Isend": "p2p", "MPI_Irecv": "p2p", "MPI_Sendrecv": "p2p"}
_SYNC_CALL = {"stream": "stream_sync", "device": "device_sync", "event": "event_sync"}
_STEP_KEYS = {
    "launch": {"us", "api_us", "grid", "stream"},
    "graph": {"us", "api_us", "stream"},
    "sync": {"stream"},
    "host": set(),
    "copy": {"mib", "bytes", "gbps", "mem", "async", "stream"},
    "memset": {"us", "stream"},
    "malloc": set(),
    "free": set(),
    "mpi": {"us", "bytes"},
    "call": {"us"},
    "migrate": {"kib", "us"},
}


def _us(value: Any) -> int:
    return round(float(value) * US)


def _step(b: _Builder, t: int, step: dict[str, Any], rank: int | None) -> int:
    """Run one step at host time `t`; returns the host time when it returns."""
    action = next(iter(step))
    extra = set(step) - {action} - _STEP_KEYS.get(action, set())
    if action not in _STEP_KEYS or extra:
        raise ValueError(f"input step {step}: unknown {'keys ' + str(sorted(extra)) if extra else 'step'}")
    arg = step[action]
    if action == "launch":
        end, _ = b.launch(t, _us(step.get("api_us", 5)), _us(step["us"]), str(arg),
                          grid=(int(step.get("grid", 1024)), 1, 1), stream=int(step.get("stream", 7)))
        return end
    if action == "graph":
        names = [str(n) for n in arg]
        end, _ = b.graph_launch(t, _us(step.get("api_us", 10)), [_us(step["us"])] * len(names), names,
                                stream=int(step.get("stream", 7)))
        return end
    if action == "sync":
        return b.sync(t, _SYNC_CALL[arg], stream=int(step.get("stream", 7)))  # type: ignore[arg-type]
    if action == "host":
        return t + _us(arg)
    if action == "copy":
        nbytes = int(step["bytes"]) if "bytes" in step else int(float(step["mib"]) * MIB)
        host = step.get("mem", "pinned")
        src, dst = {"HtoD": (host, "device"), "DtoH": ("device", host), "DtoD": ("device", "device")}[arg]
        end, _ = b.copy(t, nbytes, float(step["gbps"]) * 1e9, arg, src, dst,
                        sync_api=not step.get("async", False), stream=int(step.get("stream", 7)))
        return end
    if action == "memset":
        end, _ = b.memset(t, int(float(arg) * MIB), _us(step["us"]), stream=int(step.get("stream", 7)))
        return end
    if action in ("malloc", "free"):
        return b.api(t, _us(arg), action)
    if action == "call":
        return b.api(t, _us(step["us"]), arg, corr=b.corr() if arg == "launch" else 0)
    if action == "migrate":
        end = t + _us(step["us"])
        b.s.copies.append(Copy(PID, 0, 0, t, end, int(step["kib"]) * 1024, arg, "managed", "managed",
                               migration="page_fault"))
        return end
    assert rank is not None
    end = t + _us(step["us"])
    kind = _MPI_KIND.get(arg, "collective")
    b.mpi(t, end, arg, kind, rank, PID, int(step.get("bytes", 0)))  # type: ignore[arg-type]
    return end


def scenario_from_facts(blocks: list[dict[str, Any]], name: str = "inline") -> Scenario:
    """The Scenario that the inline input `blocks` of a rule case describes (see the module docstring)."""
    uses_mpi = any("mpi" in step for block in blocks for step in block["steps"])
    rank = 0 if uses_mpi else None
    b = _Builder(name, "inline rule-case input", devices=[Device(id=0)],
                 processes=[Process(PID, "app", {PID: "app"}, rank=rank)])
    t = T0
    for block in blocks:
        unknown = set(block) - {"repeat", "marker", "steps"}
        if unknown:
            raise ValueError(f"input block: unknown keys {sorted(unknown)}")
        start = t
        for _ in range(int(block.get("repeat", 1))):
            for step in block["steps"]:
                t = _step(b, t, step, rank)
        if "marker" in block:
            b.marker(start, t, str(block["marker"]))
    return b.done([], "inline rule-case input")
