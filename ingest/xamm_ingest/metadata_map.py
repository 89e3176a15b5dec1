"""What a profile's own metadata says of its run: Adiak keys and Caliper globals onto columns.

Application teams name the same fact differently (``algorithm``, ``Algorithm``; ``input_size``,
``InputSize``; ``ProgrammingModel``, ``Programming_Model``). A :class:`MetadataMap` lists, for each
``app_profiles`` column it fills, the keys that may carry it, first match wins. Keys are compared
without case and without the characters other than letters and digits, so ``InputSize``,
``input_size`` and ``input-size`` are one key. Everything the map does not take stays in the row's
``extra_metadata`` as written; nothing is dropped but Caliper's own bookkeeping (``cali.*``,
``spot.*``, ``spot:*``) and the keys other columns already hold (``cluster``, a parsed
``launchdate``).

A user extends the defaults in an ``xamm.toml`` beside the profiles::

    [metadata]
    variant = ["implementation"]          # tried before the default keys
    input_type = ["distribution"]
    [metadata.values.input_type]          # spellings of one value, onto one name
    "1% Perturbed" = "perturbed"
    "1%perturbed" = "perturbed"

or on the command line (``--map input_type=distribution``).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from sys import intern
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "FIELDS",
    "GPU_MODELS",
    "HELD_ELSEWHERE",
    "MappedMetadata",
    "MetadataMap",
    "default_map",
    "metadata_text",
    "norm_key",
]

# The columns a map fills, and the default keys tried for each, in order.
_DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    "variant": ("variant", "algorithm"),
    "input_size": ("input_size", "problem_size"),
    "input_type": ("input_type",),
    "programming_model": ("programming_model",),
    # Caliper's own count of ranks first: it is measured, the Adiak key is typed by the team
    "ranks": ("mpi.world.size", "num_procs", "nprocs", "num_ranks", "jobsize", "ranks"),
    # threads the run used before the most it could have used (omp_max_threads)
    "threads": (
        "omp.num.threads", "omp_num_threads", "num_threads", "nthreads", "threads",
        "omp_max_threads",
    ),
    "gpus": ("num_gpus", "ngpus", "gpus"),
    "hosts": ("numhosts", "num_hosts", "num_nodes", "nnodes", "nodes"),
}  # fmt: skip
FIELDS: tuple[str, ...] = tuple(_DEFAULT_KEYS)
_INT_FIELDS = {"input_size", "ranks", "threads", "gpus", "hosts"}
# Values that say "no value"; the key still counts as present (kept in extra_metadata)
_EMPTY = {"", "n/a", "na", "none", "null", "nan", "-", "unknown"}
# Caliper's bookkeeping, and keys the reader maps elsewhere (machine from ``cluster``)
_OWN_PREFIXES = ("cali.", "spot.", "spot:")
HELD_ELSEWHERE = frozenset({"cluster"})
GPU_MODELS = {"cuda", "hip", "sycl", "openacc", "opencl", "rocm"}


@functools.lru_cache(maxsize=4096)
def norm_key(name: str) -> str:
    """A key as the map compares it: lower case, letters and digits only (cached: a corpus repeats
    its keys in every profile).

    Args:
        name: a metadata key as written.

    Returns:
        The key normalised.
    """
    return re.sub(r"[^a-z0-9]", "", name.lower())


@functools.lru_cache(maxsize=256)
def _tried(user: tuple[str, ...], column: str) -> tuple[str, ...]:
    out: list[str] = []
    for k in (*user, *_DEFAULT_KEYS[column]):
        if norm_key(k) not in out:
            out.append(norm_key(k))
    return tuple(out)


# plans by (map id, keys, held): the map itself is kept beside its plan, so its id is not reused
# (and so beside what a column took of a text value: MetadataMap._cell)
_PLANS: dict[tuple, tuple[MetadataMap, tuple[list[str], list[tuple[str, list[str]]]]]] = {}
_CELLS: dict[tuple[int, str, str], tuple[MetadataMap, str | int | None]] = {}


@dataclass
class MappedMetadata:
    """What a map took from one profile: the columns, the rest, and notes on values it refused
    (a plain record: one is made per profile, from values the map has already checked)."""

    columns: dict[str, str | int] = field(default_factory=dict)
    extra: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class MetadataMap(BaseModel):
    """Which metadata keys fill which ``app_profiles`` columns (the defaults extended by the user).

    Each field lists keys tried before the defaults; ``values`` maps spellings of a column's
    value onto one name (``{"input_type": {"1% Perturbed": "perturbed"}}``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    DEFAULTS: ClassVar[dict[str, tuple[str, ...]]] = _DEFAULT_KEYS

    variant: tuple[str, ...] = ()
    input_size: tuple[str, ...] = ()
    input_type: tuple[str, ...] = ()
    programming_model: tuple[str, ...] = ()
    ranks: tuple[str, ...] = ()
    threads: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    values: dict[str, dict[str, str]] = Field(default_factory=dict)

    @field_validator(*FIELDS)
    @classmethod
    def _keys(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        # an empty key is never a profile's: it would be tried and match nothing, unseen
        if any(not k.strip() for k in keys):
            raise ValueError("an empty metadata key; name the key the profiles write")
        return keys

    @field_validator("values")
    @classmethod
    def _spellings(cls, values: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        # spellings of a column no map fills (a misspelt column) would never be applied
        if other := sorted(set(values) - set(FIELDS)):
            raise ValueError(f"{other[0]!r} is no column; the columns are {', '.join(FIELDS)}")
        for column, spellings in values.items():
            if any(not k.strip() for k in spellings):
                raise ValueError(f"{column}: an empty spelling; name the value as written")
        return values

    def keys_for(self, column: str) -> tuple[str, ...]:
        """The keys tried for ``column``, the user's first, each once (compared normalised).

        Args:
            column: one of :data:`FIELDS`.

        Returns:
            The normalised keys in the order they are tried.
        """
        return _tried(tuple(getattr(self, column)), column)

    def merged(self, other: MetadataMap | None) -> MetadataMap:
        """This map with ``other``'s keys tried first and its value maps laid over this one's.

        Args:
            other: the more specific map (a directory's ``xamm.toml`` over the command line's).

        Returns:
            The combined map.
        """
        if other is None:
            return self
        fields = {f: (*getattr(other, f), *getattr(self, f)) for f in FIELDS}
        values = {k: dict(v) for k, v in self.values.items()}
        for col, spellings in other.values.items():
            values.setdefault(col, {}).update(spellings)
        return MetadataMap(**fields, values=values)

    def apply(
        self, meta: dict[str, object], held: frozenset[str] = HELD_ELSEWHERE
    ) -> MappedMetadata:
        """Split one profile's metadata into the mapped columns and the rest.

        Args:
            meta: the profile's globals (Adiak keys and Caliper's own), values as written.
            held: keys the reader has put in other columns (left out of the rest).

        Returns:
            The columns found (integers parsed), the rest as ``extra_metadata`` entries, and a
            note for each value a column could not take (that value stays in the rest).
        """
        own, tries = self._plan(tuple(meta), held)
        out, taken = MappedMetadata({}, [], []), set()
        cells, me = _CELLS, id(self)
        for column, raws in tries:
            for raw in raws:
                v = meta[raw]
                got = cells.get((me, column, v)) if type(v) is str else None
                if got is None or got[0] is not self:
                    got = (self, self._cell(column, raw, v, out))
                value = got[1]
                if value is not None:
                    out.columns[column] = value
                    taken.add(raw)
                    break
        entries = _ENTRIES
        try:  # an entry a corpus has seen is looked up here, not made by a call per key
            out.extra = [
                entries.get((k, meta[k])) or _entry(k, meta[k]) for k in own if k not in taken
            ]
        except TypeError:  # a value that is no key (a list): each entry made by _entry
            out.extra = [_entry(k, meta[k]) for k in own if k not in taken]
        return out

    def _cell(self, column: str, key: str, raw: object, out: MappedMetadata) -> str | int | None:
        """What ``column`` takes of the value ``raw`` of ``key``: the column's value, or None for a
        value that says "no value" or one it refuses (with a note in ``out``). A text value's
        answer is kept for the next profile, but a refusal, whose note names the key."""
        blank = str(raw).strip().lower() in _EMPTY
        value = None if blank else self._value(column, key, raw, out)
        if type(raw) is str and (blank or value is not None):
            if len(_CELLS) >= 4096:
                _CELLS.clear()
            _CELLS[(id(self), column, raw)] = (self, value)  # the map kept: its id names no other
        return value

    def _plan(
        self, keys: tuple[str, ...], held: frozenset[str]
    ) -> tuple[list[str], list[tuple[str, list[str]]]]:
        """(the profile's own keys, sorted; per column, the keys it tries that are present, in
        order): what depends on the keys alone, worked out once per key list (a corpus writes
        the same keys in every profile)."""
        at = (id(self), keys, held)
        if (got := _PLANS.get(at)) is not None and got[0] is self:
            return got[1]
        own = sorted(k for k in keys if not k.startswith(_OWN_PREFIXES) and k not in held)
        mine = set(own)
        by_norm: dict[str, str] = {}
        for k in keys:  # the first spelling of a key in the profile's order wins
            if k in mine:
                by_norm.setdefault(norm_key(k), k)
        tries = [
            (column, [raw for key in self.keys_for(column) if (raw := by_norm.get(key))])
            for column in FIELDS
        ]
        tries = [(column, raws) for column, raws in tries if raws]  # a column no key fills: none
        if len(_PLANS) >= 256:
            _PLANS.clear()
        _PLANS[at] = (self, (own, tries))  # the map is held: its id names no other map
        return own, tries

    def _value(self, column: str, key: str, raw: object, out: MappedMetadata) -> str | int | None:
        text = metadata_text(raw).strip()
        text = self.values.get(column, {}).get(text, text)
        if column not in _INT_FIELDS:
            return text
        number = _integer(text)
        least = 0 if column == "input_size" else 1
        if number is None or number < least:
            out.notes.append(
                f"metadata {key}={text!r} is not a whole number >= {least} for {column}; "
                "kept in extra_metadata"
            )
            return None
        return number


# the extra_metadata entry of each (key, text value) seen, read only: a corpus repeats its keys
# and most values (a library list of kilobytes) in every profile; as one object each, a worker's
# chunk pickles them once and a batch waiting to be committed holds one copy
_ENTRIES: dict[tuple[str, object], dict[str, str]] = {}


def _entry(key: str, value: object) -> dict[str, str]:
    """The ``extra_metadata`` entry of one key and its value as written (text: one object per
    pair, shared and never changed; another value: its own)."""
    if type(value) is not str:
        return {"name": intern(key), "value": intern(metadata_text(value))}
    got = _ENTRIES.get((key, value))
    if got is None:
        if len(_ENTRIES) >= 4096:
            _ENTRIES.clear()
        got = _ENTRIES[(key, value)] = {"name": intern(key), "value": intern(value)}
    return got


def metadata_text(v: object) -> str:
    """A metadata value as text, as ``extra_metadata`` stores it (a repeated attribute's list as
    ``[a,b]``).

    Args:
        v: the value as the profile writes it.
    """
    if isinstance(v, list):
        return "[" + ",".join(map(str, v)) + "]"
    return str(v)


_POWER = re.compile(r"\s*(\d+)\s*\^\s*(\d+)\s*")


@functools.lru_cache(maxsize=4096)
def _integer(text: str) -> int | None:
    """``"65536"``, ``"65536.0"``, ``"2^16"``, ``"1e6"`` as an integer; None otherwise (cached: a
    corpus repeats its sizes and counts in every profile)."""
    m = _POWER.fullmatch(text)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    try:
        x = float(text)
    except ValueError:
        return None
    return int(x) if math.isfinite(x) and x == int(x) else None


@functools.cache
def default_map() -> MetadataMap:
    """The defaults alone (one frozen map shared: a reader without a map asks for it per file)."""
    return MetadataMap()
