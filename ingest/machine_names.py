"""Machine ids for ingested data: the registry id when the name is known, else a normalised name."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from xamm_ingest.errors import IngestError
from xamm_ingest.metadata_map import MetadataMap

from xamm_data import machines

CONFIG_NAME = "xamm.toml"
# Registry aliases resolved in this process since the last take_aliases() (``M1`` -> ``quartz``):
# the ingest
# summary shows each one, so a name never lands in another machine's partition without a word.
_RESOLVED: dict[str, str] = {}


def machine_id(name: str) -> str:
    """``"Quartz"`` -> ``"quartz"``; unknown names are lower-cased with other characters turned into
    ``-``.

    A registry alias that is more than another spelling of the id (``M1`` -> ``quartz``) is recorded
    for :func:`take_aliases`."""
    known = machines.canonical_id(name.strip())
    if known:
        if re.sub(r"[^a-z0-9]", "", name.lower()) != re.sub(r"[^a-z0-9]", "", known):
            _RESOLVED[name.strip()] = known
        return known
    mid = re.sub(r"[^a-z0-9._-]+", "-", name.strip().lower()).strip("-._")
    if not mid:
        raise ValueError(f"machine name {name!r} has no usable characters")
    return mid


def take_aliases() -> dict[str, str]:
    """The aliases :func:`machine_id` resolved since the last call (and forget them)."""
    out = dict(_RESOLVED)
    _RESOLVED.clear()
    return out


class RunDirConfig(BaseModel):
    """``xamm.toml`` beside a set of runs: what the files themselves do not say.

    ``machine`` names the machine; ``compiler``, ``compiler_flags`` and ``omp_max_threads`` describe
    the build and run of RAJAPerf CSV outputs, which record none of them (Caliper files do, and
    their own metadata wins).
    """

    model_config = ConfigDict(extra="forbid")

    machine: str | None = None
    compiler: str | None = None
    compiler_flags: str | None = None
    omp_max_threads: int | None = Field(default=None, ge=1)
    device: Literal["cpu", "gpu"] | None = None  # for outputs that do not name it (BabelStream)
    # which profile metadata keys fill which app_profiles columns (Caliper profiles)
    metadata: MetadataMap | None = None

    @field_validator("machine")
    @classmethod
    def _normalise(cls, v: str | None) -> str | None:
        return machine_id(v) if v else v

    def run_defaults(self) -> dict:
        return {
            k: v
            for k in ("compiler", "compiler_flags", "omp_max_threads")
            if (v := getattr(self, k)) is not None
        }


def find_config(start: Path, stop: Path) -> Path | None:
    """The nearest ``xamm.toml`` in ``start`` or its parents, not above ``stop``."""
    start, stop = start.resolve(), stop.resolve()
    d = start if start.is_dir() else start.parent
    while True:
        cand = d / CONFIG_NAME
        if cand.is_file():
            return cand
        if d == stop or d.parent == d or stop not in d.parents:
            return None
        d = d.parent


def load_config(path: Path) -> RunDirConfig:
    """Parse and validate an ``xamm.toml``; errors name the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise IngestError(path, f"not valid TOML: {e}") from None
    try:
        return RunDirConfig(**data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "(file)"
        raise IngestError(
            path, f'field {field!r}: {err["msg"]}; expected e.g. machine = "quartz"'
        ) from None
