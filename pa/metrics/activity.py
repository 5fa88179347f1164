"""GPU activity per device: busy time, utilisation and streams (idle gaps: pa.metrics.gaps).

busy(device) = |union of kernel, copy and memset intervals on that device|. Devices are never
merged into one timeline, and stream ids are keyed together with their device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.grouping import unique_inverse
from pa.metrics.model import StreamStats


@dataclass
class Ops:
    """One kind of GPU operation: integer columns fetched from a canonical relation."""

    start: np.ndarray
    end: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    pid: np.ndarray

    @classmethod
    def empty(cls) -> Ops:
        """No operations."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, z, z)

    @property
    def duration(self) -> np.ndarray:
        """End − start per operation."""
        return self.end - self.start

    def on(self, device: int) -> iv.Merged:
        """Merged intervals of this kind on one device."""
        mask = self.device == device
        if mask.all():   # one device (the usual case): no copy of every operation
            return iv.merge(self.start, self.end)
        return iv.merge(self.start[mask], self.end[mask])


@dataclass
class DeviceActivity:
    """Merged interval sets of one device."""

    device: int
    kernels: iv.Merged
    copies: iv.Merged
    memsets: iv.Merged
    busy: iv.Merged


def device_activity(kernels: Ops, copies: Ops, memsets: Ops) -> dict[int, DeviceActivity]:
    """Merged kernel/copy/memset/busy sets for each device that has any GPU operation."""
    # A NULL device (read as -1) is a host-to-host copy that involves no GPU: no device's activity.
    devices = sorted(d for d in set(np.unique(kernels.device)) | set(np.unique(copies.device))
                     | set(np.unique(memsets.device)) if d >= 0)
    out: dict[int, DeviceActivity] = {}
    for d in devices:
        k, c, m = kernels.on(d), copies.on(d), memsets.on(d)
        out[int(d)] = DeviceActivity(int(d), k, c, m, iv.union_of([k, c, m]))
    return out


def stream_stats(ops: Ops, counts: tuple[int, int, int], span_ns: int) -> list[StreamStats]:
    """Busy time per (device, stream) with counts by operation kind.

    `ops` holds every GPU operation, kernels first, then copies, then memsets (`counts` of each),
    the same concatenation launch overhead uses, so it is built once.
    """
    dev, stream, start, end = ops.device, ops.stream, ops.start, ops.end
    if len(dev) == 0:
        return []
    kind = np.repeat(np.arange(3, dtype=np.int8), counts)
    # (device, stream) as one int64 key: stream ids are only unique together with the device
    keys, inverse = unique_inverse((dev << 32) | (stream & 0xFFFFFFFF))
    pairs = [(int(k >> 32), int(np.int64(k & 0xFFFFFFFF).astype(np.int32))) for k in keys]
    busy = iv.grouped_union_length(inverse, start, end)
    per_kind = np.bincount(inverse * 3 + kind, minlength=3 * len(pairs)).reshape(-1, 3)
    out = []
    for i, (d, s) in enumerate(pairs):
        b = busy.get(i, 0)
        out.append(StreamStats(device=int(d), stream=int(s), kernel_count=int(per_kind[i, 0]),
                               copy_count=int(per_kind[i, 1]), memset_count=int(per_kind[i, 2]),
                               busy_ns=b, share_of_span_pct=(100.0 * b / span_ns) if span_ns else None))
    out.sort(key=lambda x: (-x.busy_ns, x.device, x.stream))
    return out
