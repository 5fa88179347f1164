"""GPU activity per device: busy time, utilisation, streams, idle gaps and what the host did in them.

busy(device) = |union of kernel, copy and memset intervals on that device|. Devices are never
merged into one timeline, and stream ids are keyed together with their device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.metrics import intervals as iv
from engine.metrics.model import DeviceGaps, Gap, GapBucket, StreamStats

# Idle-gap histogram buckets, ns: <10 µs, 10–100 µs, 100 µs–1 ms, 1–10 ms, 10–100 ms, >100 ms.
GAP_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("<10us", 0, 10_000),
    ("10-100us", 10_000, 100_000),
    ("100us-1ms", 100_000, 1_000_000),
    ("1-10ms", 1_000_000, 10_000_000),
    ("10-100ms", 10_000_000, 100_000_000),
    (">100ms", 100_000_000, None),
)
LARGEST_GAPS = 10
# A gap is attributed to a host activity when GPU API calls cover at least half of it (named by the
# kind covering most); otherwise the host was mostly outside any GPU API: a CPU-side stall.
HOST_COVER_THRESHOLD = 0.5


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
    keys, inverse = np.unique((dev << 32) | (stream & 0xFFFFFFFF), return_inverse=True)
    inverse = inverse.reshape(-1)
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


@dataclass(frozen=True)
class HostActivity:
    """Host API calls of the processes using one device, labelled by activity (sync, copy, launch).

    The calls stay in the caller's arrays; each label is a boolean mask over them. Only the calls
    overlapping a gap are ever copied out, so tens of millions of rocpd calls are never duplicated
    per device and per label.
    """

    start: np.ndarray
    end: np.ndarray
    labels: dict[str, np.ndarray]

    def overlapping(self, lo: int, hi: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per label, the (start, end) arrays of the calls overlapping [lo, hi)."""
        inside = (self.start < hi) & (self.end > lo)
        return {label: (self.start[inside & m], self.end[inside & m]) for label, m in self.labels.items()}


def idle_gaps(act: DeviceActivity, span_start: int, span_end: int, host: HostActivity | None) -> DeviceGaps:
    """Gaps of the device's busy set inside its active window, with a histogram and the largest gaps.

    `host` holds the API calls on the threads of the processes using this device (None: no API
    calls were captured, so every gap is unexplained by the host).
    """
    busy = act.busy
    g_start, g_end = iv.gaps(busy)
    durations = g_end - g_start
    window = int(busy[1][-1] - busy[0][0]) if len(busy[0]) else 0
    busy_len = iv.length(busy)
    hist = []
    for label, lo, hi in GAP_BUCKETS:
        mask = (durations >= lo) if hi is None else ((durations >= lo) & (durations < hi))
        hist.append(GapBucket(label=label, lower_ns=lo, upper_ns=hi, count=int(mask.sum()),
                              total_ns=int(durations[mask].sum())))
    order = np.argsort(-durations, kind="stable")[:LARGEST_GAPS]
    largest = [_classify_gap(act.device, int(g_start[i]), int(g_end[i]), span_start, host) for i in order]
    return DeviceGaps(
        device=act.device, window_ns=window, busy_ns=busy_len, idle_ns=window - busy_len,
        gap_count=len(durations),
        leading_idle_ns=int(busy[0][0] - span_start) if len(busy[0]) else 0,
        trailing_idle_ns=int(span_end - busy[1][-1]) if len(busy[0]) else 0,
        histogram=hist, largest=largest)


def _classify_gap(device: int, lo: int, hi: int, span_start: int, host: HostActivity | None) -> Gap:
    length = hi - lo
    cover: dict[str, float] = {}
    if length and host is not None:
        # only the calls overlapping this gap are merged
        for kind, (starts, ends) in host.overlapping(lo, hi).items():
            cover[kind] = iv.coverage(iv.merge(starts, ends), lo, hi) / length
    best = max(cover, key=lambda k: cover[k], default=None)
    # The host was inside GPU API calls for most of the gap: name the call kind it spent most time
    # in (a sync-after-launch round trip is part sync, part launch). Otherwise: a CPU-side stall.
    label = best if best is not None and sum(cover.values()) >= HOST_COVER_THRESHOLD else "cpu_stall"
    return Gap(device=device, start_ns=lo - span_start, duration_ns=length, host_activity=label,
               host_cover_pct={k: round(100.0 * v, 3) for k, v in cover.items()})
