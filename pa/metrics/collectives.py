"""NCCL/RCCL collectives as records: what a kernel name says, and the kernels' time per device and type.

Per device and collective type: how long the kernels take, how much of it no compute hides, and how
many are short.

A communication kernel (kernel_classes: communication, pa.metrics.communication) is named by the
library that launched it. The names follow a few generated schemes, read from the libraries' own
generators (NCCL src/device/generate.py, RCCL src/device/generate.py, older NCCL collectives.h):

- NCCL 2.19 on: `ncclDevKernel_<Coll>[_<RedOp>_<type>]_<ALGO>_<PROTO>`, e.g.
  `ncclDevKernel_AllReduce_Sum_bf16_RING_LL`, `ncclDevKernel_AllGather_RING_LL`,
  `ncclDevKernel_SendRecv`, `ncclDevKernel_Generic` (RCCL: `ncclDevKernel_Generic_1/_2/_4`, the
  number an unroll factor). Symmetric-memory kernels: `ncclSymkDevKernel_<Coll>_<variant>_<op>_<type>`.
- NCCL 2.7 to 2.18 and RCCL of that time: `ncclKernel_<Coll>_<ALGO>_<PROTO>_<RedOp>_<ctype>`, e.g.
  `ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t`.
- Older NCCL: `nccl<Coll>[<Algo>][<Proto>]Kernel_<op>_<type>`, e.g. `ncclAllReduceRingLLKernel_sum_f32`,
  `ncclSendRecvKernel_copy_i8`; RCCL's `rcclGenericKernel`.

What a name can and cannot say (CollectiveName): the collective, and for the reducing ones the data
type, are the kernel's own. The algorithm, protocol and reduction op are those the kernel is
*specialised* for: NCCL launches one specialised kernel per collective and type (its `best_kernel`:
Sum, RING or TREE, LL) and runs any other variant through it, so `ncclDevKernel_AllReduce_Sum_bf16_RING_LL`
may have run a SIMPLE-protocol or a Max reduction. They are reported as the name states them.
Non-reducing collectives (AllGather, Broadcast, SendRecv) carry a placeholder op and type in older
names (`_Sum_int8_t`); those are dropped. A Generic kernel runs whatever collective it is handed:
its type is `Generic`. A name no scheme fits is a collective of type `unknown`, never dropped.
NCCL implements AllToAll as grouped send/receive, so an all-to-all is a SendRecv kernel; only RCCL's
AllToAllPivot kernels are named AllToAll.

Per (device, collective type), from the kernel intervals (CollectiveStats):
- busy: the union of the type's kernels; exposed: that union minus the union of the device's compute
  kernels (every kernel not of class communication, as pa.metrics.communication counts it);
- small: the kernels shorter than `collective_latency_ns` (pa.metrics.thresholds), whose time is
  mostly the collective's fixed cost (launch, synchronisation with the peers, protocol start-up)
  rather than moving bytes; their count, time, fastest call, union and exposed union;
- bytes: the message sizes. Nsight Systems records NCCL's own NVTX ranges (domain NCCL: ncclAllReduce,
  ncclSend, ... with a payload schema naming "Message size [bytes]" and "No. of ranks"), but the
  SQLite export keeps the schema and not the payload values (NVTX_EVENTS.binaryData is empty in the
  real exports), and PyTorch's `nccl:all_reduce` / `record_param_comms` range names carry no size.
  So bytes and ranks are unknown (null) here, and with them the achieved bandwidths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.activity import Ops
from pa.metrics.model import CollectiveStats


@dataclass(frozen=True)
class CollectiveName:
    """What a communication kernel's name says (None where it does not say it).

    type: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, AllToAll, Send, Recv,
    Generic (a kernel that runs any collective) or unknown. op: Sum, Prod, MinMax, Min, Max,
    PreMulSum, SumPostDiv, Avg. dtype: NCCL's short names (i8, u8, i32, u32, i64, u64, f16, f32,
    f64, bf16, f8e4m3, f8e5m2). algorithm: TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS,
    NVLS_TREE, PAT (a symmetric kernel's variant, e.g. AGxLL_R). protocol: LL, LL128, SIMPLE.
    family: the naming scheme (dev_kernel, kernel, symmetric, legacy, rccl, unknown).
    """

    type: str
    op: str | None = None
    dtype: str | None = None
    algorithm: str | None = None
    protocol: str | None = None
    family: str = "unknown"


COLLECTIVE_TYPES = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv", "AllToAll",
                    "Send", "Recv", "Generic", "unknown")
# Collectives that reduce: only their names' op and data type mean anything.
REDUCING = frozenset({"AllReduce", "ReduceScatter", "Reduce"})

_COLLS = {"allreduce": "AllReduce", "allgather": "AllGather", "allgatherv": "AllGather",
          "reducescatter": "ReduceScatter", "broadcast": "Broadcast", "bcast": "Broadcast", "reduce": "Reduce",
          "sendrecv": "SendRecv", "send": "Send", "recv": "Recv", "alltoall": "AllToAll",
          "alltoallpivot": "AllToAll", "alltoallv": "AllToAll", "generic": "Generic"}
_OPS = {"sum": "Sum", "prod": "Prod", "minmax": "MinMax", "min": "Min", "max": "Max", "premulsum": "PreMulSum",
        "sumpostdiv": "SumPostDiv", "avg": "Avg"}
_TYPES = {t: t for t in ("i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2")}
_TYPES.update({"b16": "bf16", "int8": "i8", "uint8": "u8", "int32": "i32", "uint32": "u32", "int64": "i64",
               "uint64": "u64", "half": "f16", "float": "f32", "double": "f64", "char": "i8"})
# C type spellings with underscores of their own, replaced before the name is split on "_".
_CTYPES = (("__nv_bfloat16", "bf16"), ("__nv_fp8_e4m3", "f8e4m3"), ("__nv_fp8_e5m2", "f8e5m2"),
           ("hip_bfloat16", "bf16"), ("rccl_bfloat16", "bf16"), ("rccl_float8", "f8e4m3"),
           ("rccl_bfloat8", "f8e5m2"), ("uint8_t", "u8"), ("uint32_t", "u32"), ("uint64_t", "u64"),
           ("int8_t", "i8"), ("int32_t", "i32"), ("int64_t", "i64"))
_ALGOS = ("COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "COLLNET", "NVLS", "TREE", "RING", "PAT")
_PROTOS = {"ll": "LL", "ll128": "LL128", "simple": "SIMPLE"}
# Prefix (lower case) -> naming scheme of the generated kernels that start with it.
_FAMILIES = (("ncclsymkdevkernel_", "symmetric"), ("nccldevkerneldebug_", "dev_kernel"),
             ("nccldevkernel_", "dev_kernel"), ("ncclkerneldebug_", "kernel"), ("ncclkernel_", "kernel"))
# Older NCCL: nccl<Coll>[<Algo>][<Proto>]Kernel_<op>_<type>[_<threads>]; anchored, no nested repetition.
_LEGACY = re.compile(r"nccl(AllReduce|AllGather|ReduceScatter|Reduce|Broadcast|SendRecv|AllToAll)"
                     r"(Ring|Tree|CollNet)?(LL128|LL)?Kernel_([A-Za-z]+)_([A-Za-z0-9]+)", re.IGNORECASE)
_MANGLED = re.compile(r"_Z(\d{1,4})")


def base_name(name: str) -> str:
    """The kernel's identifier: no leading `void `, no parameter or template list; a mangled name decoded.

    `_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE` and
    `ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)` give `ncclDevKernel_SendRecv`.
    """
    s = name.strip()
    if s[:5] == "void ":
        s = s[5:].lstrip()
    m = _MANGLED.match(s)
    if m:
        s = s[m.end():m.end() + int(m.group(1))]
    for stop in ("(", "<", " "):
        cut = s.find(stop)
        if cut >= 0:
            s = s[:cut]
    return s


def parse_collective(name: str) -> CollectiveName:
    """The collective a communication kernel's name states (see the module docstring for the schemes).

    Pure and total: any string gives a CollectiveName; one no scheme fits has type `unknown`.
    """
    base = base_name(name)
    low = base.lower()
    for prefix, family in _FAMILIES:
        if low.startswith(prefix):
            return _generated(base[len(prefix):], family)
    m = _LEGACY.match(base)
    if m:
        coll = _COLLS[m.group(1).lower()]
        algo, proto = m.group(2), m.group(3)
        return _keep(CollectiveName(
            coll, _OPS.get(m.group(4).lower()), _TYPES.get(m.group(5).lower()),
            algo.upper() if algo else None,
            _PROTOS.get(proto.lower()) if proto else None, "legacy"))
    if low.startswith("rcclgenerickernel"):
        return CollectiveName("Generic", family="rccl")
    return CollectiveName("unknown")


def _generated(rest: str, family: str) -> CollectiveName:
    """The fields of a generated name after its prefix: `<Coll>_<token>_<token>...` in any order."""
    for spelled, short in _CTYPES:
        rest = rest.replace(spelled, short)
    tokens = [t for t in rest.split("_") if t]
    if not tokens or tokens[0].lower() not in _COLLS:
        return CollectiveName("unknown", family=family)
    coll = _COLLS[tokens[0].lower()]
    op = dtype = algo = proto = None
    variant: list[str] = []
    i = 1
    while i < len(tokens):
        tok, up = tokens[i].lower(), tokens[i].upper()
        pair = f"{up}_{tokens[i + 1].upper()}" if i + 1 < len(tokens) else ""
        if family != "symmetric" and pair in _ALGOS:
            algo, i = pair, i + 2
            continue
        if family != "symmetric" and up in _ALGOS:
            algo = up
        elif family != "symmetric" and tok in _PROTOS:
            proto = _PROTOS[tok]
        elif tok in _OPS:
            op = _OPS[tok]
        elif tok in _TYPES:
            dtype = _TYPES[tok]
        elif family == "symmetric" and not tok.isdigit():
            variant.append(tokens[i])
        i += 1    # a number (RCCL's unroll factor, a thread count) or an unknown word says nothing
    if family == "symmetric":
        algo = "_".join(variant) or None
    return _keep(CollectiveName(coll, op, dtype, algo, proto, family))


def _keep(c: CollectiveName) -> CollectiveName:
    """Drop the placeholder op and type a non-reducing collective's name carries (`_Sum_int8_t`)."""
    if c.type in REDUCING:
        return c
    return CollectiveName(c.type, None, None, c.algorithm, c.protocol, c.family)


# nccl-tests (doc/PERFORMANCE.md): bus bandwidth = algorithm bandwidth × this factor of the rank count
# n, the share of the bytes each rank's link must carry for the collective to complete.
def bus_factor(collective: str, ranks: int) -> float | None:
    """The nccl-tests bus-bandwidth factor of `collective` on `ranks` ranks; None when it has none."""
    if ranks < 1:
        return None
    if collective == "AllReduce":
        return 2 * (ranks - 1) / ranks
    if collective in ("AllGather", "ReduceScatter", "AllToAll"):
        return (ranks - 1) / ranks
    if collective in ("SendRecv", "Send", "Recv", "Broadcast", "Reduce"):
        return 1.0
    return None


def bandwidths(collective: str, nbytes: int | None, ns: int, ranks: int | None) -> tuple[float | None, float | None]:
    """(algbw, busbw) in bytes/s as nccl-tests defines them: algbw = bytes / time, busbw = algbw × bus_factor.

    `nbytes` is the nccl-tests message size (the per-rank buffer; for AllGather and ReduceScatter the
    whole gathered buffer). Either value is None when what it needs is unknown: no bandwidth is guessed.
    """
    if nbytes is None or ns <= 0:
        return None, None
    alg = nbytes / (ns / 1e9)
    factor = bus_factor(collective, ranks) if ranks is not None else None
    return alg, (alg * factor if factor is not None else None)


def collective_stats(kernels: Ops, name_ids: np.ndarray, is_comm: np.ndarray,
                     names: dict[int, tuple[str | None, str | None]], latency_ns: int) -> list[CollectiveStats]:
    """Per (device, collective type) of the communication kernels: time, exposure and short calls.

    `name_ids` and `is_comm` are per kernel of `kernels`; `names` maps a name id to its (full, short)
    name; kernels shorter than `latency_ns` are small. Ordered by device, then total time (largest first).
    """
    if not is_comm.any():
        return []
    parsed: dict[int, tuple[str, str]] = {}
    for nid in np.unique(name_ids[is_comm]).tolist():
        full, short = names.get(int(nid), (None, None))
        raw = full or short or ""
        parsed[int(nid)] = (parse_collective(raw).type, base_name(raw) or f"<name id {nid}>")
    comm_idx = np.flatnonzero(is_comm)
    types = np.array([parsed[int(n)][0] for n in name_ids[comm_idx].tolist()], dtype=object)
    out: list[CollectiveStats] = []
    dur = kernels.duration
    for dev in np.unique(kernels.device[comm_idx]).tolist():
        on = kernels.device == dev
        compute = on & ~is_comm
        compute_set = iv.merge(kernels.start[compute], kernels.end[compute])
        here = comm_idx[kernels.device[comm_idx] == dev]
        here_types = types[kernels.device[comm_idx] == dev]
        rows = []
        for ctype in sorted(set(here_types.tolist())):
            idx = here[here_types == ctype]
            rows.append(_stats(int(dev), str(ctype), idx, kernels, dur, name_ids, parsed, compute_set, latency_ns))
        out += sorted(rows, key=lambda r: (-r.total_ns, r.type))
    return out


def _stats(dev: int, ctype: str, idx: np.ndarray, kernels: Ops, dur: np.ndarray, name_ids: np.ndarray,
           parsed: dict[int, tuple[str, str]], compute_set: iv.Merged, latency_ns: int) -> CollectiveStats:
    d = dur[idx]
    kset = iv.merge(kernels.start[idx], kernels.end[idx])
    small = idx[d < latency_ns]
    sd = dur[small]
    sset = iv.merge(kernels.start[small], kernels.end[small])
    return CollectiveStats(
        device=dev, type=ctype, count=len(idx), total_ns=int(d.sum()), mean_ns=float(d.mean()),
        median_ns=float(np.median(d)), min_ns=int(d.min()), max_ns=int(d.max()),
        busy_ns=iv.length(kset), exposed_ns=iv.subtract_length(kset, compute_set),
        small_count=len(small), small_time_ns=int(sd.sum()),
        small_min_ns=int(sd.min()) if len(sd) else None,
        small_median_ns=float(np.median(sd)) if len(sd) else None,
        small_busy_ns=iv.length(sset), small_exposed_ns=iv.subtract_length(sset, compute_set),
        bytes=None, ranks=None, algbw_bps=None, busbw_bps=None,
        kernel_names=sorted({parsed[int(n)][1] for n in np.unique(name_ids[idx]).tolist()}))

