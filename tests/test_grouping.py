"""The grouping helpers give exactly what the plain numpy calls give (pa.metrics.grouping)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from pa.metrics.grouping import stable_order, unique_inverse

dtypes = st.sampled_from([np.int64, np.int32, np.uint32, np.int16, np.uint8])


def _keys(values: list[int], dtype: type, shift: int) -> np.ndarray:
    keys = np.array([v >> shift for v in values], dtype=np.int64)
    if np.dtype(dtype).kind == "u" and len(keys):
        keys = keys - keys.min()
    info = np.iinfo(dtype)
    return np.clip(keys, info.min, info.max).astype(dtype)


@given(st.lists(st.integers(-40_000, 40_000), max_size=300), dtypes, st.integers(0, 3))
def test_stable_order_is_numpys_stable_argsort(values, dtype, shift):
    # small keys take the 16-bit radix path, wider ones the merge sort: the order must be identical
    keys = _keys(values, dtype, shift)
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))


@given(st.lists(st.integers(-(1 << 62), 1 << 62) | st.integers(-5, 5), max_size=300), dtypes)
def test_unique_inverse_is_numpys(values, dtype):
    keys = _keys(values, dtype, 0)
    uniq, inverse = unique_inverse(keys)
    want_uniq, want_inverse = np.unique(keys, return_inverse=True)
    assert np.array_equal(uniq, want_uniq) and uniq.dtype == want_uniq.dtype
    assert np.array_equal(inverse, want_inverse.reshape(-1)) and inverse.shape == (len(keys),)
    assert np.array_equal(uniq[inverse], keys)


def test_unique_inverse_of_floats_falls_back_to_numpy():
    keys = np.array([2.5, np.nan, 1.0, 2.5])
    uniq, inverse = unique_inverse(keys)
    assert uniq[:2].tolist() == [1.0, 2.5] and np.isnan(uniq[2]) and inverse.tolist() == [1, 2, 0, 1]
