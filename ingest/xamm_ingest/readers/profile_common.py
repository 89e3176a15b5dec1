"""Turning one application profile into an ``app_profiles`` row: :func:`whole_program` stores the
profile exactly as ``xamm predict`` reads it (:mod:`xamm_ingest.regions`), its regions
included."""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import datetime
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from xamm_data.tables import counters
from xamm_data.tables.regions import SCHEMA, ProfileMeta, RegionProfile, exact_sum
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import machine_id, source_machine
from xamm_ingest.metadata_map import GPU_MODELS
from xamm_ingest.readers.base import ColumnRows, Source, provenance


class SampleSpec(BaseModel):
    """What the user states about a profiled run (the profile itself rarely says)."""

    # no NaN or infinity anywhere: the parameters are stored as JSON, which has neither
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    app: str = Field(min_length=1)
    machine: str | None = None
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    threads: int | None = Field(default=None, ge=1)
    ranks: int | None = Field(default=None, ge=1)
    gpus: int | None = Field(default=None, ge=0)
    # None: from the profile's programming model (CUDA, HIP, ... run on GPUs), else cpu
    device: str | None = Field(default=None, pattern="^(cpu|gpu)$")
    runtime_s: float | None = Field(default=None, gt=0)
    time_unit: str | None = None

    @field_validator("machine")
    @classmethod
    def _machine(cls, v):
        return machine_id(v) if v else v


class ProfileFields(NamedTuple):
    """A profile's metadata as the ingest path reads it: the fields of
    :class:`~xamm_data.tables.regions.ProfileMeta`, in its order with its defaults, each already of
    its type (the reader builds every value as the model would take it), held without validation:
    one is made per file of an archive, where validating values the reader has already typed is
    work with nothing to find. :meth:`validated` is the model (``xamm predict``'s profile); the
    tests check that it takes every record a reader makes unchanged."""

    path: str
    format: str
    app: str
    source: str | None = None
    source_from: str = "not in the profile"
    cluster: str | None = None
    ranks: int | None = None
    threads: int | None = None
    gpus: int | None = None
    hosts: int | None = None
    programming_model: str | None = None
    variant: str | None = None
    input_size: int | None = None
    input_type: str | None = None
    time_from: str = ""
    run_date: datetime | None = None
    tool_versions: dict[str, str | None] = {}  # noqa: RUF012 - a NamedTuple default, never changed
    extra_metadata: tuple[dict[str, str], ...] = ()

    def validated(self) -> ProfileMeta:
        """The same metadata as the model (validated).

        Returns:
            The :class:`~xamm_data.tables.regions.ProfileMeta`.
        """
        return ProfileMeta(**self._asdict())


_SCHEMA_ORDER = tuple(SCHEMA)


class RegionRows(NamedTuple):
    """A profile read for the store: what :class:`~xamm_data.tables.regions.RegionProfile` holds,
    its regions as the rows ``to_dicts`` would give (no table built per file; the rows held as
    columns). A named tuple: one is made per file."""

    meta: ProfileFields
    rows: ColumnRows
    runtime_s: float | None
    totals: dict[str, float]
    notes: tuple[str, ...] = ()

    @classmethod
    def of_columns(
        cls, meta: ProfileFields, columns: dict[str, list], totals: dict, notes
    ) -> RegionRows:
        """The rows of the region contract's ``columns`` (each value already of its column's
        type), and their time as :attr:`RegionProfile.runtime_s` sums it.

        Args:
            meta: the profile's metadata.
            columns: one list per column of :data:`~xamm_data.tables.regions.SCHEMA`.
            totals: each metric's total.
            notes: what the reader noted.

        Returns:
            The profile's rows.
        """
        if tuple(columns) != _SCHEMA_ORDER:  # the caller's own order, or extra columns
            columns = {c: columns[c] for c in SCHEMA if c in columns}
        # the same summation as the table's (RegionProfile.runtime_s: correctly rounded), so a
        # stored runtime is what predict reads; every column is as long as this one
        runtime = exact_sum(excl) if (excl := columns["exclusive_s"]) else None
        return cls(meta, ColumnRows(columns), runtime, totals, tuple(notes))


def _regions_and_time(
    profile: RegionProfile | RegionRows,
) -> tuple[list[dict] | ColumnRows | None, float | None]:
    if isinstance(profile, RegionRows):
        return profile.rows or None, profile.runtime_s
    return (profile.regions.to_dicts() if profile.regions.height else None), profile.runtime_s


def whole_program(
    profile: RegionProfile | RegionRows, spec: SampleSpec, src: Source, reader: str
) -> dict:
    """The ``app_profiles`` row of a profile read once (:mod:`xamm_ingest.regions`): its
    runtime is the sum of its regions' exclusive times, the regions themselves are kept, its
    metric totals become counters, its metadata the configuration columns. What ``spec`` states
    wins over the profile's own metadata; a runtime it states replaces the regions' sum, and the
    regions are then not kept (they would no longer add up to it).

    Args:
        profile: the profile as the region reader returned it.
        spec: what the user states of the run.
        src: the source file.
        reader: the dotted name recorded as the row's reader.

    Returns:
        The row (features are added later, over the whole frame).
    """
    m = profile.meta
    mach = spec.machine or (
        source_machine(m.cluster, src.path, "the cluster metadata") if m.cluster else None
    )
    if not mach:
        raise IngestError(
            src.path, "no machine: the profile does not name one; pass --machine NAME"
        )
    regions, runtime_s = _regions_and_time(profile)
    aggregation = m.time_from
    if spec.runtime_s is not None:
        runtime_s, aggregation, regions = spec.runtime_s, "given on the command line", None
    if runtime_s is not None and not (math.isfinite(runtime_s) and runtime_s > 0):
        raise IngestError(
            src.path, f"root inclusive time is {runtime_s!r} s; expected a finite time > 0"
        )
    canon, extra = _split_metrics(profile.totals, src)
    measured = m.source.rsplit(":", 1)[-1] if m.source else "cpu"
    device = "gpu" if "gpu" in (measured, _device_of(m.programming_model)) else "cpu"
    return {
        "app": spec.app,
        "app_params": _params_of(spec.params),
        "machine": mach,
        "variant": m.variant,
        "input_size": m.input_size,
        "input_type": m.input_type,
        "programming_model": m.programming_model,
        "device": spec.device or device,
        "threads": spec.threads or m.threads,
        "ranks": spec.ranks or m.ranks,
        "gpus": spec.gpus if spec.gpus is not None else m.gpus,
        "hosts": m.hosts,
        "trial": 0,
        "runtime_s": runtime_s,
        "runtime_aggregation": aggregation,
        **{f"ctr_{k}": v for k, v in canon.items()},
        "counters_present": sorted(canon),
        "extra_counters": extra,
        "extra_metadata": list(m.extra_metadata) or None,
        "regions": regions,
        **provenance(src, m.format, reader, m.tool_versions, m.run_date),
    }


def _split_metrics(metrics: dict[str, float], src: Source) -> tuple[dict[str, float], list]:
    """(canonical counters by name, the other metrics as (name, value)); a metric that is not a
    finite number, or a negative counter, refuses the source."""
    canon: dict[str, float] = {}
    extra: list[dict] = []
    for raw, name in _metric_names(tuple(metrics)):
        value = metrics[raw]
        if value is None or not math.isfinite(value):
            raise IngestError(
                src.path, f"metric {raw!r} is {value!r}; expected a finite number", record=raw
            )
        if name is not None:
            if value < 0:
                raise IngestError(src.path, f"counter {raw!r} is negative ({value})", record=raw)
            canon[name] = float(value)
        else:
            extra.append({"name": raw, "value": float(value)})
    return canon, extra


@functools.lru_cache(maxsize=256)
def _metric_names(raws: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    """Each metric, sorted, with the canonical counter it fills: None where it stays raw (unknown,
    or a second spelling of a counter an earlier one fills). Cached: a corpus names the same
    metrics in every profile."""
    taken: set[str] = set()
    out: list[tuple[str, str | None]] = []
    for raw in sorted(raws):
        name = counters.resolve(raw)
        if name is not None and name not in taken:
            taken.add(name)
            out.append((raw, name))
        else:
            out.append((raw, None))
    return tuple(out)


def _params_of(params: dict) -> str:
    """The run's parameters as stored: JSON, keys sorted (``{}`` for none, nearly every
    command)."""
    if not params:
        return "{}"
    return _params_text(tuple((k, type(v), v) for k, v in sorted(params.items())))


@functools.lru_cache(maxsize=64)
def _params_text(params: tuple[tuple[str, type, object], ...]) -> str:
    # one text per command line, not per profile; each value's type is in the key, as True, 1 and
    # 1.0 are equal keys that JSON writes apart
    return json.dumps({k: v for k, _, v in params}, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=256)
def _device_of(programming_model: str | None) -> str:
    """``gpu`` for a GPU programming model (CUDA, HIP, SYCL, ...), else ``cpu``."""
    words = set(re.split(r"[^a-z0-9]+", (programming_model or "").lower()))
    return "gpu" if words & GPU_MODELS else "cpu"
