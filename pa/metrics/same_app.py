"""Whether two captures look like the same application: the kernels they share, by time.

Two captures run the same application when at least SAME_APP_MIN_SHARED of either side's kernel time
is in kernels (by full name) that the other side also ran. One measure, read by `pa compare` (the
"different applications" warning) and by `pa summary` / `pa analyze` of several files (which are the
ranks of one run only when they are one: the same application, rank metadata, or --rank-set).
"""

from __future__ import annotations

from pa.metrics.model import ProfileSummary

SAME_APP_MIN_SHARED = 0.2


def shared_kernel_fractions(a: ProfileSummary, b: ProfileSummary) -> tuple[float, float] | None:
    """(share of A's kernel time in kernels B also ran, the same for B); None when either has no kernel time."""
    ak = {k.name: k.total_ns for k in a.kernels}
    bk = {k.name: k.total_ns for k in b.kernels}
    ta, tb = sum(ak.values()), sum(bk.values())
    if ta <= 0 or tb <= 0:
        return None
    return (sum(t for n, t in ak.items() if n in bk) / ta, sum(t for n, t in bk.items() if n in ak) / tb)


def same_application(a: ProfileSummary, b: ProfileSummary) -> bool | None:
    """True / False by the shared kernel time (module docs); None when either side has no kernel time."""
    shares = shared_kernel_fractions(a, b)
    return None if shares is None else min(shares) >= SAME_APP_MIN_SHARED
