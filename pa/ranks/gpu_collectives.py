"""One rank's NCCL/RCCL collective kernels as instances to match across ranks (pa.ranks.cross).

A collective on GPUs runs as one communication kernel per rank. Every rank launches its kernel
when its stream reaches it; the kernel then waits inside for the last peer before moving data, so
all the ranks' kernels of one collective end together and the early ones last longer by their
wait. The start of a rank's kernel is its arrival, exactly as the start of an MPI collective call
is on the host: wait(rank, k) = latest start of instance k − this rank's start.

Instances are keyed by collective type and communication stream (GpuCollectives); what a rank did
before each arrival is measured over the segment since its previous instance of the same key
ended: its length and the time a compute kernel ran on the rank's devices in it. Over the
instances a late rank arrived last at, more compute than the others in those segments says it is
late because it computes more; more idle says its host (or data loading, or a sync) held it back.
"""

from __future__ import annotations

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.collectives import parse_collective
from pa.profile.relations import VALID, Relations
from pa.ranks.model import GpuCollectives


def gpu_collective_calls(rel: Relations) -> GpuCollectives:
    """The communication kernels of the relations' process(es), keyed and measured (module docs)."""
    if not (rel.available("kernels") and rel.available("kernel_classes")):
        return GpuCollectives()
    ids = [int(r[0]) for r in rel.query("SELECT name_id FROM pa_kernel_classes WHERE class = 'communication' "
                                        "AND name_id IS NOT NULL")]
    if not ids:
        return GpuCollectives()
    id_list = ",".join(str(i) for i in ids)
    rows = rel.query(
        "SELECT k.start, k.\"end\", k.device, k.stream, n.short_name, n.name FROM "
        f"(SELECT * FROM pa_kernels WHERE name_id IN ({id_list}) AND {VALID}) k "
        "LEFT JOIN pa_kernel_names n ON n.name_id = k.name_id ORDER BY k.start, k.\"end\"")
    if not rows:
        return GpuCollectives()
    devices = sorted({int(r[2]) for r in rows if r[2] is not None})
    where = f"name_id NOT IN ({id_list})" + (f" AND device IN ({','.join(map(str, devices))})" if devices else "")
    compute, _ = rel.intervals("kernels", where=where)
    busy = iv.merge(compute["start"], compute["end"])
    first = min(int(rows[0][0]), int(busy[0][0]) if len(busy[0]) else int(rows[0][0]))
    # (device, stream) of each kernel, NULL as -1, numbered by first use
    where_run = [(-1 if r[2] is None else int(r[2]), -1 if r[3] is None else int(r[3])) for r in rows]
    streams: dict[tuple[int, int], int] = {}
    for ds in where_run:
        streams.setdefault(ds, len(streams) + 1)
    grouped: dict[str, list[tuple[int, int]]] = {}
    for (start, end, _, _, short, name), ds in zip(rows, where_run, strict=True):
        kind = parse_collective(str(short or name or "")).type
        key = kind if len(streams) == 1 else f"{kind} (stream {streams[ds]})"
        grouped.setdefault(key, []).append((int(start), int(end)))
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, pairs in grouped.items():
        starts = np.array([p[0] for p in pairs], dtype=np.int64)
        ends = np.array([p[1] for p in pairs], dtype=np.int64)
        seg_lo = np.concatenate([[first], ends[:-1]]).astype(np.int64)
        seg_lo = np.minimum(seg_lo, starts)
        out[key] = {"start": starts, "end": ends, "before_ns": starts - seg_lo,
                    "before_compute_ns": iv.covered_many(busy, seg_lo, starts)}
    return GpuCollectives(out)
