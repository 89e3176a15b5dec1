"""The search of 128-bit source keys (two 64-bit halves) that resumes and counts lean on, held
to a plain dictionary lookup on keys drawn to share their first halves."""

import numpy as np
import pytest

from xamm_data.store.counts import find_keys


@pytest.mark.parametrize("seed", range(20))
def test_find_keys_answers_what_a_dictionary_answers_with_tied_first_halves(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    # few distinct first halves: many keys tie on them, as only the second half tells them apart
    h0 = rng.integers(0, 8, n).astype(np.uint64)
    h1 = rng.integers(0, 2**63, n, dtype=np.uint64)
    order = np.lexsort((h1, h0))
    h0, h1 = h0[order], h1[order]
    m = int(rng.integers(0, 40))
    pick = rng.integers(0, max(n, 1), m)
    stored = rng.random(m) < 0.5
    q0 = np.where(stored & (n > 0), h0[pick] if n else 0, rng.integers(0, 10, m)).astype(np.uint64)
    q1 = np.where(
        stored & (n > 0), h1[pick] if n else 0, rng.integers(0, 2**63, m, dtype=np.uint64)
    ).astype(np.uint64)
    index = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(h0, h1))}
    want = [index.get((int(a), int(b)), -1) for a, b in zip(q0, q1)]
    got = find_keys(h0, h1, q0, q1)
    assert got.dtype == np.int64
    assert [int(i) >= 0 for i in got] == [w >= 0 for w in want]
    # a found index points at the very key asked for
    for i, a, b in zip(got, q0, q1):
        if i >= 0:
            assert (int(h0[i]), int(h1[i])) == (int(a), int(b))


def test_find_keys_on_no_keys_or_no_queries_finds_nothing():
    empty = np.array([], dtype=np.uint64)
    one = np.array([5], dtype=np.uint64)
    assert find_keys(empty, empty, one, one).tolist() == [-1]
    assert find_keys(one, one, empty, empty).tolist() == []
    # past the last key
    assert find_keys(one, one, np.array([9], np.uint64), one).tolist() == [-1]
