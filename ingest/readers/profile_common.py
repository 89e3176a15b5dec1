"""Turning one application profile into an ``app_profiles`` row: :func:`whole_program` stores the
profile exactly as ``xamm predict`` reads it (:mod:`xamm_ingest.readers.regions`), its regions
included."""

from __future__ import annotations

import json
import math
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import machine_id
from xamm_ingest.metadata_map import GPU_MODELS
from xamm_ingest.readers.base import Source, provenance

from xamm_data import counters
from xamm_data.regions import RegionProfile


class SampleSpec(BaseModel):
    """What the user states about a profiled run (the profile itself rarely says)."""

    model_config = ConfigDict(extra="forbid")

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


def whole_program(profile: RegionProfile, spec: SampleSpec, src: Source, reader: str) -> dict:
    """The ``app_profiles`` row of a profile read once (:mod:`xamm_ingest.readers.regions`): its
    runtime is the sum of its regions' exclusive times, the regions themselves are kept, its
    metric totals become counters, its metadata the configuration columns.

    Args:
        profile: the profile as the region reader returned it.
        spec: what the user states of the run (wins over the profile's own metadata).
        src: the source file.
        reader: the dotted name recorded as the row's reader.

    Returns:
        The row (features are added later, over the whole frame).
    """
    m = profile.meta
    regions = profile.regions.to_dicts() if profile.regions.height else None
    return profile_row(
        spec,
        src,
        m.format,
        reader,
        runtime_s=profile.runtime_s,
        aggregation=m.time_from,
        metrics=profile.totals,
        machine=m.cluster,
        ranks=m.ranks,
        threads=m.threads,
        gpus=m.gpus,
        hosts=m.hosts,
        tool_versions=m.tool_versions,
        run_date=m.run_date,
        described={
            "variant": m.variant,
            "input_size": m.input_size,
            "input_type": m.input_type,
            "programming_model": m.programming_model,
        },
        extra_metadata=list(m.extra_metadata) or None,
        regions=regions,
        device=m.source.rsplit(":", 1)[-1] if m.source else None,
    )


def profile_row(
    spec: SampleSpec,
    src: Source,
    fmt: str,
    reader: str,
    *,
    runtime_s: float | None,
    aggregation: str,
    metrics: dict[str, float],
    machine: str | None = None,
    ranks: int | None = None,
    threads: int | None = None,
    gpus: int | None = None,
    hosts: int | None = None,
    tool_versions: dict | None = None,
    run_date=None,
    described: dict | None = None,
    extra_metadata: list[dict] | None = None,
    regions: list[dict] | None = None,
    device: str | None = None,
) -> dict:
    """One ``app_profiles`` row (features are added later, over the whole frame).

    ``described`` holds what the profile's metadata says (``variant``, ``input_size``,
    ``input_type``, ``programming_model``); ``extra_metadata`` the (name, value) pairs no mapping
    took; ``regions`` the profile's regions (:data:`xamm_data.regions.SCHEMA` rows). What ``spec``
    states wins over all of them; a runtime it states replaces the regions' sum, and the regions are
    then not kept (they would no longer add up to it).
    """
    described = described or {}
    mach = spec.machine or (machine_id(machine) if machine else None)
    if not mach:
        raise IngestError(
            src.path, "no machine: the profile does not name one; pass --machine NAME"
        )
    if spec.runtime_s is not None:
        runtime_s, aggregation, regions = spec.runtime_s, "given on the command line", None
    if runtime_s is not None and not (math.isfinite(runtime_s) and runtime_s > 0):
        raise IngestError(
            src.path, f"root inclusive time is {runtime_s!r} s; expected a finite time > 0"
        )
    canon, extra = _split_metrics(metrics, src)
    row = {
        "app": spec.app,
        "app_params": json.dumps(spec.params, sort_keys=True, separators=(",", ":")),
        "machine": mach,
        "variant": described.get("variant"),
        "input_size": described.get("input_size"),
        "input_type": described.get("input_type"),
        "programming_model": described.get("programming_model"),
        "device": spec.device or device or _device_of(described.get("programming_model")),
        "threads": spec.threads or threads,
        "ranks": spec.ranks or ranks,
        "gpus": spec.gpus if spec.gpus is not None else gpus,
        "hosts": hosts,
        "trial": 0,
        "runtime_s": runtime_s,
        "runtime_aggregation": aggregation,
        **{f"ctr_{k}": v for k, v in canon.items()},
        "counters_present": sorted(canon),
        "extra_counters": extra,
        "extra_metadata": extra_metadata,
        "regions": regions,
        **provenance(src, fmt, reader, tool_versions, run_date),
    }
    return row


def _split_metrics(metrics: dict[str, float], src: Source) -> tuple[dict[str, float], list]:
    """(canonical counters by name, the other metrics as (name, value)); a metric that is not a
    finite number, or a negative counter, refuses the source."""
    canon: dict[str, float] = {}
    extra: list[dict] = []
    for raw in sorted(metrics):
        value = metrics[raw]
        if value is None or not math.isfinite(value):
            raise IngestError(
                src.path, f"metric {raw!r} is {value!r}; expected a finite number", record=raw
            )
        name = counters.resolve(raw)
        if name is not None and name not in canon:
            if value < 0:
                raise IngestError(src.path, f"counter {raw!r} is negative ({value})", record=raw)
            canon[name] = float(value)
        else:  # unknown, or a second spelling of a counter already taken: keep it raw
            extra.append({"name": raw, "value": float(value)})
    return canon, extra


def _device_of(programming_model: str | None) -> str:
    """``gpu`` for a GPU programming model (CUDA, HIP, SYCL, ...), else ``cpu``."""
    words = set(re.split(r"[^a-z0-9]+", (programming_model or "").lower()))
    return "gpu" if words & GPU_MODELS else "cpu"
