"""Turning one application profile's metrics into an ``app_profiles`` row."""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, ConfigDict, Field, field_validator
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import machine_id
from xamm_ingest.readers.base import Source, provenance

from xamm_data import counters


class SampleSpec(BaseModel):
    """What the user states about a profiled run (the profile itself rarely says)."""

    model_config = ConfigDict(extra="forbid")

    app: str = Field(min_length=1)
    machine: str | None = None
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    threads: int | None = Field(default=None, ge=1)
    ranks: int | None = Field(default=None, ge=1)
    gpus: int | None = Field(default=None, ge=0)
    device: str = Field(default="cpu", pattern="^(cpu|gpu)$")
    runtime_s: float | None = Field(default=None, gt=0)
    time_unit: str | None = None

    @field_validator("machine")
    @classmethod
    def _machine(cls, v):
        return machine_id(v) if v else v


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
    tool_versions: dict | None = None,
    run_date=None,
) -> dict:
    """One ``app_profiles`` row (features are added later, over the whole frame)."""
    mach = spec.machine or (machine_id(machine) if machine else None)
    if not mach:
        raise IngestError(
            src.path, "no machine: the profile does not name one; pass --machine NAME"
        )
    if spec.runtime_s is not None:
        runtime_s, aggregation = spec.runtime_s, "given on the command line"
    if runtime_s is not None and not (math.isfinite(runtime_s) and runtime_s > 0):
        raise IngestError(
            src.path, f"root inclusive time is {runtime_s!r} s; expected a finite time > 0"
        )
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
    row = {
        "app": spec.app,
        "app_params": json.dumps(spec.params, sort_keys=True, separators=(",", ":")),
        "machine": mach,
        "device": spec.device,
        "threads": spec.threads or threads,
        "ranks": spec.ranks or ranks,
        "gpus": spec.gpus,
        "trial": 0,
        "runtime_s": runtime_s,
        "runtime_aggregation": aggregation,
        **{f"ctr_{k}": v for k, v in canon.items()},
        "counters_present": sorted(canon),
        "extra_counters": extra,
        **provenance(src, fmt, reader, tool_versions, run_date),
    }
    return row
