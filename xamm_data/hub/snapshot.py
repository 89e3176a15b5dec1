"""The embedded snapshot: a small derived copy of xamm's public artefacts, shipped in the package.

With no network and no local data, the snapshot still answers: ``load_dataset("quartz")`` (the
derived ``benchmark_runs`` rows of the public RAJAPerf runs), the machines' signatures and the
default predictor (``xamm/default``). ``xamm zoo build --snapshot`` regenerates it from the public
data, reproducibly.

Layout (``xamm_data/hub/snapshot/``)::

    MANIFEST.json               what is here, from which sources under which licences,
                                file checksums
    <kind>/machine=<m>.parquet  derived rows, exactly what a store built from the sources
                                reads back
    signatures/...              a signature registry (xamm_models.machines.signatures layout)
    models/<name>/...           saved predictors, by zoo name (``xamm/<name>``)

Resolution order everywhere: the local store (or folder), then the Hub at a pinned revision, then
this snapshot. A file whose bytes differ from the manifest is refused (:class:`CorruptDataError`).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict

from xamm_data.hashing import file_sha256
from xamm_data.store.files import CorruptDataError
from xamm_data.store.parquet_depth import read_parquet
from xamm_data.tables.schema import TABLES
from xamm_data.tables.validate import conform

ROOT = Path(__file__).parent / "snapshot"
MANIFEST = "MANIFEST.json"
ZOO_ORG = "xamm"  # the snapshot's models answer to "xamm/<name>"
PINNED_MODELS: dict[str, str] = {}  # "xamm/<name>" -> a published Hub commit; none published yet


class SnapshotSource(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    origin: str
    license: str  # SPDX


class SnapshotFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    path: str  # relative to the snapshot root
    sha256: str
    kind: str  # "benchmark_runs", "signature", "model"
    machine: str | None = None
    rows: int | None = None


class Manifest(BaseModel):
    """What the snapshot holds and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    xamm_version: str
    dataset: str  # e.g. "xplat-rajaperf@482daa697a38919e"
    store_version: int | None  # the benchmark_runs table version it was read at
    sources: list[SnapshotSource]
    files: list[SnapshotFile]
    models: list[str]


def manifest(root: Path = ROOT) -> Manifest | None:
    """The snapshot's manifest, or None when the package carries no snapshot."""
    p = Path(root) / MANIFEST
    return Manifest.model_validate_json(p.read_text()) if p.is_file() else None


def machines(kind: str = "benchmark_runs", root: Path = ROOT) -> list[str]:
    """Machines the snapshot holds ``kind`` rows for."""
    m = manifest(root)
    return sorted(f.machine for f in m.files if f.kind == kind and f.machine) if m else []


def has(kind: str, machine: str, root: Path = ROOT) -> bool:
    return machine in machines(kind, root)


def read(kind: str, machine: str, root: Path = ROOT) -> pl.DataFrame:
    """The snapshot's ``kind`` rows of ``machine``, after checking their bytes against the
    manifest."""
    m = manifest(root)
    entry = next(
        (f for f in (m.files if m else []) if f.kind == kind and f.machine == machine), None
    )
    if entry is None:
        raise FileNotFoundError(
            f"the embedded snapshot has no {kind} for {machine!r}; it has: "
            f"{', '.join(machines(kind, root)) or 'nothing'}"
        )
    path = Path(root) / entry.path
    if file_sha256(path) != entry.sha256:
        raise CorruptDataError(
            f"{path}: its bytes do not match the snapshot manifest (sha256 "
            f"{entry.sha256[:12]}...); "
            "reinstall xamm"
        )
    df = read_parquet(path)
    # a snapshot written under an older schema reads in the current one (new columns null)
    return conform(df, TABLES[kind]) if kind in TABLES else df


def model_dir(model_id: str, root: Path = ROOT) -> Path | None:
    """The snapshot's folder of ``xamm/<name>``, or None."""
    org, _, name = model_id.partition("/")
    m = manifest(root)
    if org != ZOO_ORG or not m or name not in m.models:
        return None
    for f in m.files:  # the package's own copy, checked like a pulled one
        if (
            f.kind == "model"
            and f.path.startswith(f"models/{name}/")
            and file_sha256(Path(root) / f.path) != f.sha256
        ):
            raise CorruptDataError(
                f"{Path(root) / f.path}: its bytes do not match the snapshot "
                "manifest "
                f"(sha256 {f.sha256[:12]}...); reinstall xamm"
            )
    return Path(root) / "models" / name


def signatures_root(root: Path = ROOT) -> Path | None:
    """The snapshot's signature registry folder, or None."""
    p = Path(root) / "signatures"
    return p if p.is_dir() else None


def write_manifest(root: Path, info: dict) -> Manifest:
    """Checksum every file under ``root`` listed in ``info["files"]`` (paths and kinds) and write
    the manifest."""
    files = [
        SnapshotFile(**{**f, "sha256": file_sha256(Path(root) / f["path"])}) for f in info["files"]
    ]
    m = Manifest(**{**info, "files": files})
    (Path(root) / MANIFEST).write_text(json.dumps(m.model_dump(), indent=1, sort_keys=True) + "\n")
    return m
