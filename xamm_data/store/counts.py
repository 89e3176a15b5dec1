"""Rows held per configuration of a table's partitions, kept between a store's own appends so
that numbering a batch's trials needs no scan of the rows already there (:class:`ConfigCounts`).

Its own module: the store's log keeps one, and the appending code reads it, so neither imports
the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:  # numpy is imported where counts are kept: an ingest into a new store needs none
    import numpy as np

__all__ = ["MERGE_AT", "ConfigCounts", "find_keys"]


def _numpy():
    import numpy  # a fifth of an ingest's start-up: only once there are counts to keep

    return numpy


_SEEDS = (11, 53)  # two hashes of a configuration: 128 bits
MERGE_AT = 4096  # configurations first seen in a run, kept apart until there are this many


def _config_hashes(key: list[str]) -> list[pl.Expr]:
    return [pl.struct(key).hash(seed).alias(f"_h{i}") for i, seed in enumerate(_SEEDS)]


@dataclass
class _Counts:
    """Rows held per configuration hash, sorted by (``h0``, ``h1``)."""

    h0: np.ndarray
    h1: np.ndarray
    n: np.ndarray

    @classmethod
    def of(cls, frame: pl.DataFrame) -> _Counts:
        frame = frame.sort("_h0", "_h1")
        return cls(*(frame[c].to_numpy().copy() for c in ("_h0", "_h1", "_n")))

    @classmethod
    def empty(cls) -> _Counts:
        np = _numpy()
        return cls(*(np.empty(0, dtype=t) for t in (np.uint64, np.uint64, np.int64)))

    def __len__(self) -> int:
        return len(self.h0)

    def merged(self, other: _Counts) -> _Counts:
        """Both (their configurations disjoint), sorted."""
        np = _numpy()
        h0, h1 = np.concatenate([self.h0, other.h0]), np.concatenate([self.h1, other.h1])
        order = np.lexsort((h1, h0))
        return _Counts(h0[order], h1[order], np.concatenate([self.n, other.n])[order])


def _hash_counts(frame: pl.DataFrame | pl.LazyFrame, key: list[str]):
    return (
        frame.select(_config_hashes(key))
        .group_by("_h0", "_h1")
        .agg(pl.len().cast(pl.Int64).alias("_n"))
    )


class ConfigCounts:
    """Rows held per configuration of each partition, as of a table version, kept by a
    :class:`Store` between its own appends: while no other writer commits, numbering a batch's
    trials needs no scan of the rows already held, so a commit costs about the same at 10^4 and
    10^6 rows. A configuration is known by 128 bits of hash (24 bytes a configuration), looked up
    by binary search in sorted arrays: the counts read at the run's first append, and a small
    sorted set of configurations first seen since, merged in when it outgrows an eighth of them
    (so no commit copies all the counts). The first append of a run, or one after another
    writer's commit, reads the partition once."""

    def __init__(self) -> None:
        # (kind, machine) -> (version, the counts read, the configurations first seen since)
        self._by: dict[tuple[str, str], tuple[int, _Counts, _Counts]] = {}

    def held(
        self, kind: str, machine: str, version: int, lf: pl.LazyFrame, part, key
    ) -> pl.DataFrame:
        """Rows held per configuration of ``part`` (``key`` columns and ``_held``) at
        ``version``: from the counts kept since that version, else one scan of ``lf``."""
        np = _numpy()
        cached = self._by.get((kind, machine))
        if cached is None or cached[0] != version:
            read = _Counts.of(_hash_counts(lf, key).collect(engine="streaming"))
            cached = (version, read, _Counts.empty())
            self._by[(kind, machine)] = cached
        wanted = part.select(key).unique().with_columns(_config_hashes(key))
        q0, q1 = wanted["_h0"].to_numpy(), wanted["_h1"].to_numpy()
        held = np.zeros(len(q0), dtype=np.int64)
        for counts in cached[1:]:  # a configuration is in one of the two
            at = find_keys(counts.h0, counts.h1, q0, q1)
            held[at >= 0] += counts.n[at[at >= 0]]
        return wanted.select(key).with_columns(pl.Series("_held", held, dtype=pl.Int64))

    def committed(self, kind: str, machine: str, before: int, after: int, part, key) -> None:
        """``part`` was committed as version ``after`` on ``before``: the kept counts follow,
        or are dropped when they described another version."""
        cached = self._by.pop((kind, machine), None)
        if cached is None or cached[0] != before:
            return
        np = _numpy()
        _, read, recent = cached
        added = _Counts.of(_hash_counts(part, key))
        unseen = np.ones(len(added), dtype=bool)
        for counts in (read, recent):
            at = find_keys(counts.h0, counts.h1, added.h0, added.h1)
            np.add.at(counts.n, at[at >= 0], added.n[at >= 0])
            unseen &= at < 0
        recent = recent.merged(_Counts(added.h0[unseen], added.h1[unseen], added.n[unseen]))
        if len(recent) > max(MERGE_AT, len(read) // 8):
            read, recent = read.merged(recent), _Counts.empty()
        self._by[(kind, machine)] = (after, read, recent)


def find_keys(h0: np.ndarray, h1: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """Index of each (``q0``, ``q1``) among the sorted keys (``h0`` sorted, ties by ``h1``), -1
    where it is not there."""
    np = _numpy()
    out = np.full(len(q0), -1, dtype=np.int64)
    if len(h0) == 0 or len(q0) == 0:
        return out
    at = np.searchsorted(h0, q0, side="left")
    first = np.minimum(at, len(h0) - 1)
    lead = (at < len(h0)) & (h0[first] == q0)
    hit = lead & (h1[first] == q1)
    out[hit] = at[hit]
    # the same first half, another second: the keys tied on it are walked (rare, kept exact)
    for i in np.flatnonzero(lead & ~hit):
        j = int(at[i]) + 1
        while j < len(h0) and h0[j] == q0[i]:
            if h1[j] == q1[i]:
                out[i] = j
                break
            j += 1
    return out
