"""A run directory's ``xamm.toml``: what the files themselves do not say, checked by pydantic.

Imported only where an ingest finds such a file (:func:`xamm_ingest.machine_names.load_config`):
most ingests find none, and start without the validation library.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from xamm_ingest.metadata_map import MetadataMap

__all__ = ["RunDirConfig", "checked_config"]


class RunDirConfig(BaseModel):
    """``xamm.toml`` beside a set of runs: what the files themselves do not say.

    ``machine`` names the machine; ``compiler``, ``compiler_flags`` and ``omp_max_threads`` describe
    the build and run of RAJAPerf CSV outputs, which record none of them (Caliper files do, and
    their own metadata wins).
    """

    # built when first used: most commands find no run directory's xamm.toml
    model_config = ConfigDict(extra="forbid", defer_build=True)

    machine: str | None = None
    compiler: str | None = None
    compiler_flags: str | None = None
    # strict: ``omp_max_threads = true`` is no thread count
    omp_max_threads: int | None = Field(default=None, ge=1, strict=True)
    device: Literal["cpu", "gpu"] | None = None  # for outputs that do not name it (BabelStream)
    # which profile metadata keys fill which app_profiles columns (Caliper profiles)
    metadata: MetadataMap | None = None
    # the public facts of the machine's node (xamm_data.machines.NODE_FACTS, cpu, gpu, source):
    # recorded in the user's machine registry, as `xamm machines add` does
    node: dict[str, Any] | None = None  # checked strictly as the registry checks its own

    @field_validator("machine", "compiler", "compiler_flags")
    @classmethod
    def _not_blank(cls, v: str | None) -> str | None:
        # an empty value would read as not given: the files' own cluster, no compiler
        if v is not None and not v.strip():
            raise ValueError("empty; give a value or leave the field out")
        return v

    def run_defaults(self) -> dict:
        return {
            k: v
            for k in ("compiler", "compiler_flags", "omp_max_threads")
            if (v := getattr(self, k)) is not None
        }


def checked_config(data: dict) -> RunDirConfig:
    """``data`` (a parsed ``xamm.toml``) as a :class:`RunDirConfig`.

    Raises:
        ValueError: with args (the field's dotted name, pydantic's message) of the first error.
    """
    try:
        return RunDirConfig(**data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ValueError(".".join(str(x) for x in err["loc"]) or "(file)", err["msg"]) from None
