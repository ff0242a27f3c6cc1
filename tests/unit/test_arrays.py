"""The integer-set helpers answer exactly what numpy's set routines answer, on every dtype the house uses."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esdedup.util.arrays import member_of, union_sorted, unique_sorted

DTYPES = [np.int64, np.uint64, np.uint32, np.int32]


def _array(values: list[int], dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.array([info.min + v % (int(info.max) - int(info.min) + 1) for v in values], dtype=dtype)


small = st.lists(st.integers(min_value=0, max_value=40), max_size=60)  # many repeats
wide = st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=60)  # the extremes of each dtype


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=60, deadline=None)
@given(values=st.one_of(small, wide))
def test_unique_sorted_is_numpy_unique(dtype: type, values: list[int]) -> None:
    arr = _array(values, dtype)
    got = unique_sorted(arr)
    assert got.dtype == arr.dtype
    assert got.tolist() == np.unique(arr).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=60, deadline=None)
@given(first=st.one_of(small, wide), second=st.one_of(small, wide))
def test_union_sorted_is_union1d(dtype: type, first: list[int], second: list[int]) -> None:
    a, b = np.unique(_array(first, dtype)), np.unique(_array(second, dtype))
    assert union_sorted(a, b).tolist() == np.union1d(a, b).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=60, deadline=None)
@given(values=st.one_of(small, wide), members=st.one_of(small, wide))
def test_member_of_is_isin(dtype: type, values: list[int], members: list[int]) -> None:
    v, m = _array(values, dtype), _array(members, dtype)
    got = member_of(v, m)
    assert got.dtype == bool and got.shape == v.shape
    assert got.tolist() == np.isin(v, m).tolist()


def test_the_largest_value_is_found_and_a_value_past_every_member_is_not() -> None:
    top = np.iinfo(np.uint64).max
    members = np.array([3, top], dtype=np.uint64)
    assert member_of(np.array([top, top - 1, 4, 3], dtype=np.uint64), members).tolist() == [True, False, False, True]
    assert member_of(np.array([1, 2], dtype=np.uint64), np.zeros(0, dtype=np.uint64)).tolist() == [False, False]
