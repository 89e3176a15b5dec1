"""Versioned AMM signatures: one immutable file per ``machine:device@version``.

A :class:`Signature` records the AMM vector and everything it was built from: the aggregation
option and normalisation of Algorithm 1, the embedder id and revision, the content hash of the
benchmark samples, the kernel list, the xamm version and the date. The registry lives in
``$XAMM_HOME/signatures/<machine>/<device>@<version>.json``.

Two kinds share the registry and its rules: ``attention`` (the paper's AMM, Algorithm 1 over
attention embeddings) and ``physics`` (:class:`~xamm_models.machines.physics.PhysicsSignature`:
sustained bandwidth over working sets, flop rate, launch overhead; its ``vector`` is
:meth:`PhysicsSignature.vector` at :data:`~xamm_models.machines.physics.SIMILARITY_WS`), filed as
``<device>.physics@<version>.json``.

Rules: a written version is never changed (:class:`ImmutableSignatureError`); adding a signature
whose inputs equal an existing version's returns that version; other inputs make version max+1.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import date
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from xamm_data._version import __version__
from xamm_data.atomic import atomic_path, locked
from xamm_data.hashing import frame_sha256
from xamm_data.hub import snapshot
from xamm_data.identifiers import NAME, NAME_BODY, check_name
from xamm_data.machines import registry as machines
from xamm_data.machines.targets import Target
from xamm_data.paths import xamm_home
from xamm_models.errors import ImmutableSignatureError
from xamm_models.machines.physics import (
    OVERHEAD_FLOOR_S,
    SIMILARITY_WS,
    PhysicsSignature,
    physics_signature,
)
from xamm_models.machines.specifications import Calibration, peaks, specification_signature

_REF = re.compile(f"^(?P<machine>{NAME_BODY})" + r"(:(?P<device>cpu|gpu))?(@(?P<version>\d+))?$")
INPUT_FIELDS = (
    "kind",
    "aggregation",
    "normalise",
    "embedder_id",
    "embedder_revision",
    "data_sha256",
    "kernels",
)
KINDS = ("attention", "physics")


class Signature(BaseModel):
    """An Abstract Machine Model vector and its provenance."""

    model_config = ConfigDict(frozen=True)

    machine: str = Field(pattern=NAME.pattern, max_length=100)
    device: str = Field(pattern="^(cpu|gpu)$")
    kind: str = Field(default="attention", pattern="^(attention|physics)$")
    version: int | None = Field(default=None, ge=1)
    vector: list[float]
    physics: PhysicsSignature | None = None  # the interpretable parts of a physics signature
    data_version: int | None = Field(
        default=None,
        description="the store's benchmark_runs table version the samples "
        "were read at: load_dataset(machine, version=...) gives them back",
    )
    aggregation: str
    normalise: str
    embedder_id: str
    embedder_revision: str
    data_sha256: str
    kernels: list[str]
    coverage: float = Field(
        ge=0, le=1, description="fraction of the kernels the machine's samples have"
    )
    n_samples: int = Field(ge=0, description="benchmark samples (0: from specifications)")
    basis: Literal["runs", "specifications"] = Field(
        default="runs",
        description="runs: measured from the machine's benchmark runs; specifications: its "
        "registry peaks times the efficiencies measured machines sustain (no run of it)",
    )
    configuration: str = Field(
        default="",
        max_length=500,
        description="the runs it is measured from (family, variants, ranks and threads); "
        "empty where unrecorded",
    )
    xamm_version: str
    created: str = Field(default_factory=lambda: date.today().isoformat())

    @model_validator(mode="after")
    def _basis_agrees(self):
        """A signature says one thing of where it comes from: from specifications it is a physics
        signature of no samples whose figures are from specifications; from runs, none is."""
        spec = self.physics is not None and self.physics.flop_rate_from == "specifications"
        if self.basis == "specifications" and not (
            self.kind == "physics" and spec and self.n_samples == 0
        ):
            raise ValueError(
                "basis 'specifications' needs kind 'physics', no samples and figures from "
                "specifications (physics.flop_rate_from)"
            )
        if self.basis == "runs" and (spec or self.n_samples < 1):
            raise ValueError("a signature from runs has samples and figures from them")
        return self

    @model_serializer(mode="wrap")
    def _compact(self, handler):
        """A signature from runs is the default and its file does not say so: only one from
        specifications carries ``basis``, and a file without it reads as from runs."""
        out = handler(self)
        if isinstance(out, dict) and out.get("basis") == "runs":
            out.pop("basis")
        return out

    @property
    def target(self) -> str:
        return str(Target(self.machine, self.device))

    @property
    def ref(self) -> str:
        what = self.kind if self.basis == "runs" else f"{self.kind}, from {self.basis}"
        return f"{self.target}@{self.version}" + ("" if self.kind == "attention" else f" ({what})")

    def inputs(self) -> dict:
        """What identifies the signature's inputs (everything but version and date): two
        signatures with equal inputs are the same version.

        Returns:
            The fields.
        """
        return {k: getattr(self, k) for k in INPUT_FIELDS}


def parse_ref(ref: str) -> tuple[str, str | None, int | None]:
    """``"quartz:cpu@2"`` -> ``("quartz", "cpu", 2)``; device and version optional."""
    m = _REF.match(ref)
    if not m:
        raise ValueError(
            f"bad signature reference {ref!r}: expected "
            "MACHINE[:cpu|:gpu][@VERSION], e.g. quartz:cpu@1"
        )
    return m["machine"], m["device"], int(m["version"]) if m["version"] else None


class SignatureRegistry:
    """A registry of signature files under ``root``, and the embedders they were built with under
    ``embedders_dir`` (beside it). No default location: the caller says where (:meth:`default` is
    ``$XAMM_HOME/signatures``, for entry points)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @classmethod
    def default(cls) -> SignatureRegistry:
        """The registry under ``$XAMM_HOME`` (the command line's and ``Machine.signature()``'s).

        Returns:
            The registry.
        """
        return cls(xamm_home() / "signatures")

    @classmethod
    def for_reading(cls) -> SignatureRegistry | LayeredRegistry:
        """The registry to read from: ``$XAMM_HOME``'s, with the embedded snapshot's signatures
        for every machine, device and kind built nowhere here.

        Returns:
            A registry, or a layered one over ``$XAMM_HOME``'s and the snapshot's.
        """
        home = cls.default()
        embedded = snapshot.signatures_root()
        return home if embedded is None else LayeredRegistry([home, cls(embedded)])

    @property
    def embedders_dir(self) -> Path:
        """Where the embedders of this registry's signatures are kept: ``<root>/../embedders``."""
        return self.root.parent / "embedders"

    def newest_embedder(self) -> Path:
        """The embedder saved last under :attr:`embedders_dir`.

        Returns:
            Its folder; a ``FileNotFoundError`` says how to make one when there is none.
        """
        found = sorted(
            self.embedders_dir.glob("*/model.safetensors"), key=lambda p: p.stat().st_mtime
        )
        if not found:
            raise FileNotFoundError(
                "no embedder yet: run `xamm amm build` first or pass --embedder"
            )
        return found[-1].parent

    def path(self, machine: str, device: str, version: int, kind: str = "attention") -> Path:
        """Where a signature file lives.

        Args:
            machine: a machine id.
            device: ``cpu`` or ``gpu``.
            version: the version.
            kind: ``attention`` or ``physics``.

        Returns:
            ``<root>/<machine>/<device>[.physics]@<version>.json``.
        """
        stem = device if kind == "attention" else f"{device}.{kind}"
        return self.root / check_name(machine) / f"{stem}@{int(version)}.json"

    def versions(self, machine: str, device: str, kind: str = "attention") -> list[int]:
        """The versions a machine's device has of a kind.

        Args:
            machine: a machine id.
            device: ``cpu`` or ``gpu``.
            kind: ``attention`` or ``physics``.

        Returns:
            The versions, sorted.
        """
        d = self.root / machine
        stem = device if kind == "attention" else f"{device}.{kind}"
        return (
            sorted(int(p.stem.split("@")[1]) for p in d.glob(f"{stem}@*.json"))
            if d.is_dir()
            else []
        )

    def all(self) -> list[Signature]:
        """Every signature in the registry.

        Returns:
            Sorted by machine, device and version.
        """
        out = []
        for p in sorted(self.root.glob("*/*@*.json")):
            out.append(Signature.model_validate_json(p.read_text()))
        return sorted(out, key=lambda s: (s.machine, s.device, s.version))

    def get(self, ref: str, version: int | None = None, kind: str = "attention") -> Signature:
        """A signature by reference and kind; the latest version by default.

        Args:
            ref: ``quartz``, ``quartz:cpu`` or ``quartz:cpu@2``.
            version: a version, overriding the one in ``ref``.
            kind: ``attention`` or ``physics``.

        Returns:
            The signature.

        Raises:
            KeyError: no such signature; the message says which exist and how to build one.
        """
        if kind not in KINDS:
            raise ValueError(f"unknown signature kind {kind!r}; expected one of {', '.join(KINDS)}")
        machine, device, v = parse_ref(ref)
        v = v if version is None else version
        if v is not None and v < 1:
            raise KeyError(f"{ref}: signature versions start at 1, not {v}")
        devices = (
            [device] if device else [d for d in ("cpu", "gpu") if self.versions(machine, d, kind)]
        )
        if not devices:
            known = sorted({s.target for s in self.all() if s.kind == kind})
            raise KeyError(
                f"no {kind} signature for {machine!r} yet; {kind} signatures exist for: "
                f"{', '.join(known) or 'none'}. Build one with `xamm amm build "
                f"--kind {kind}` after "
                "ingesting its RAJAPerf runs"
            )
        if len(devices) > 1:
            raise KeyError(
                f"{machine!r} has signatures for {' and '.join(devices)}: say "
                f"{machine}:cpu or {machine}:gpu"
            )
        dev = devices[0]
        have = self.versions(machine, dev, kind)
        if not have:
            raise KeyError(f"no {kind} signature for {machine}:{dev} yet")
        if v is None:
            v = have[-1]
        if v not in have:
            raise KeyError(
                f"{machine}:{dev} has no {kind} version {v}; versions: {', '.join(map(str, have))}"
            )
        return Signature.model_validate_json(self.path(machine, dev, v, kind).read_text())

    def add(self, sig: Signature) -> Signature:
        """Register a signature: the existing version if its inputs are identical, else a new
        version. A signature pulled from the Hub keeps its version, written if free, identical if
        taken.

        Args:
            sig: the signature.

        Returns:
            The registered signature, with its version.

        Raises:
            ImmutableSignatureError: a taken version with other inputs.
        """
        with locked(self.root / ".lock"):
            existing = [
                Signature.model_validate_json(
                    self.path(sig.machine, sig.device, v, sig.kind).read_text()
                )
                for v in self.versions(sig.machine, sig.device, sig.kind)
            ]
            if sig.version is not None:
                same = next((e for e in existing if e.version == sig.version), None)
                if same is not None:
                    if same.model_dump(exclude={"created"}) != sig.model_dump(exclude={"created"}):
                        raise ImmutableSignatureError(
                            f"{sig.ref} is published and differs from the one given; "
                            "published versions never change"
                        )
                    return same
                return self._write(sig)
            for e in existing:
                if e.inputs() == sig.inputs():
                    return e
            # stored signatures always hold their version (written by _write, read by versions())
            last = max((e.version or 0 for e in existing), default=0)
            return self._write(sig.model_copy(update={"version": last + 1}))

    def _write(self, sig: Signature) -> Signature:
        if sig.version is None:
            raise ValueError(f"{sig.target}: a signature is written with its version")
        path = self.path(sig.machine, sig.device, sig.version, sig.kind)
        if path.exists():
            raise ImmutableSignatureError(f"{sig.ref} exists; published versions never change")
        with atomic_path(path) as tmp:
            tmp.write_text(sig.model_dump_json(indent=2) + "\n")
        os.chmod(path, 0o444)
        return sig

    def frame(self) -> pl.DataFrame:
        """One row per registry machine and device.

        Returns:
            Its latest attention and physics versions, or 'no signature yet'.
        """
        latest: dict[tuple, Signature] = {}
        for sig in self.all():
            latest[(sig.machine, sig.device, sig.kind)] = sig
        known = [(m.id, d) for m in machines.MACHINES for d in m.devices]
        extra = sorted({(mid, d) for mid, d, _ in latest} - set(known))
        rows = []
        for mid, d in [*known, *extra]:
            s, p = latest.get((mid, d, "attention")), latest.get((mid, d, "physics"))
            rows.append(
                {
                    "target": str(Target(mid, d)),
                    "latest": s.ref if s else "no signature yet",
                    "versions": len(self.versions(mid, d)),
                    "aggregation": s.aggregation if s else None,
                    "kernels": len(s.kernels) if s else None,
                    "coverage": s.coverage if s else None,
                    "physics": p.ref if p else None,
                    "created": s.created if s else (p.created if p else None),
                }
            )
        return pl.DataFrame(rows)


class LayeredRegistry:
    """Read-only registries in order: a signature comes from the first that has its machine,
    device and kind (``$XAMM_HOME``'s, then the embedded snapshot's)."""

    def __init__(self, layers: list[SignatureRegistry]):
        self.layers = layers

    @property
    def root(self) -> Path:
        """The first layer's root (where signatures built here go)."""
        return self.layers[0].root

    def get(self, ref: str, version: int | None = None, kind: str = "attention") -> Signature:
        """As :meth:`SignatureRegistry.get`, from the first layer that has the signature.

        Args:
            ref: ``machine``, ``machine:device`` or ``machine:device@version``.
            version: a version, overriding the one in ``ref``.
            kind: ``attention`` or ``physics``.

        Returns:
            The signature.
        """
        first: KeyError | None = None
        for reg in self.layers:
            try:
                return reg.get(ref, version, kind)
            except KeyError as e:
                first = first or e
        assert first is not None
        raise first

    def all(self) -> list[Signature]:
        """Every signature of the first layer, and of later layers for what earlier ones lack."""
        seen: set[tuple[str, str, str]] = set()
        out = []
        for reg in self.layers:
            mine = reg.all()
            out += [s for s in mine if (s.machine, s.device, s.kind) not in seen]
            seen |= {(s.machine, s.device, s.kind) for s in mine}
        return sorted(out, key=lambda s: (s.machine, s.device, s.version))

    def frame(self) -> pl.DataFrame:
        """One row per registry machine and device, each from the first layer that has one."""
        frames = [reg.frame() for reg in self.layers]
        out = frames[0]
        for later in frames[1:]:
            empty = (out["latest"] == "no signature yet") & out["physics"].is_null()
            keep = out.filter(~empty)
            rest = later.filter(~pl.col("target").is_in(keep["target"].implode()))
            out = pl.concat([keep, rest], how="vertical_relaxed")
        return out.sort("target")


def lookup(
    ref: str, version: int | None = None, registry: SignatureRegistry | None = None
) -> Signature:
    """The signature of ``ref``: the ``xamm.signatures`` hook behind
    :meth:`xamm_data.machines.registry.Machine.signature`.

    Args:
        ref: ``machine[:device]``.
        version: a version (default: the latest).
        registry: the registry (default: the one under ``$XAMM_HOME``, else the embedded
            snapshot's).

    Returns:
        The signature.
    """
    if registry is not None:
        return registry.get(ref, version)
    try:
        # the public API's edge: Machine.signature()
        return SignatureRegistry.default().get(ref, version)
    except KeyError:
        embedded = snapshot.signatures_root()
        if embedded is None:
            raise
        # nothing built here: the package's own copy
        return SignatureRegistry(embedded).get(ref, version)


# bump when physics_signature's statistics change: signatures built before keep their versions
PHYSICS_METHOD = "physics-1"


def physics_vector(sig: PhysicsSignature) -> list[float]:
    """A physics signature's registry vector: log10 bandwidth at the similarity working sets,
    then log10 of the flop rate and of the launch overhead.

    Args:
        sig: the signature.
    """
    return [float(x) for x in np.ravel(sig.vector(SIMILARITY_WS)[:, 0])] + [
        float(np.log10(sig.flop_rate)),
        float(np.log10(max(sig.overhead_s, OVERHEAD_FLOOR_S))),
    ]


def _physics_record(
    t: Target, sig: PhysicsSignature, method: tuple[str, str], **fields
) -> Signature:
    """A physics-kind registry record of ``sig``; ``method``: what derived it and its revision
    (``aggregation`` and ``embedder_id`` name it), ``fields`` the rest."""
    return Signature(
        machine=t.machine,
        device=t.device,
        kind="physics",
        vector=physics_vector(sig),
        physics=sig,
        aggregation=method[0],
        normalise="none",
        embedder_id=method[0],
        embedder_revision=method[1],
        xamm_version=__version__,
        **fields,
    )


def physics_record(target: str, samples: pl.DataFrame) -> Signature:
    """The registry record of a target's physics signature.

    Args:
        target: ``machine:device``.
        samples: its benchmark samples.

    Returns:
        The signature record (not registered).
    """
    sig: PhysicsSignature = physics_signature(target, samples)
    t = Target.parse(target)
    keep = samples.select(
        "app", "size_bucket", "time_per_rep_s", "bytes_per_rep", "flops_per_rep", "kernels_per_rep"
    )
    return _physics_record(
        t,
        sig,
        ("physics", PHYSICS_METHOD),
        data_sha256=frame_sha256(keep.sort("app", "size_bucket")),
        kernels=sorted(set(samples.get_column("app"))),
        coverage=1.0,
        n_samples=samples.height,
    )


# bump when a signature from specifications is derived otherwise
SPECIFICATIONS_METHOD = "specifications-1"


def specification_record(target: str, calibration: Calibration) -> Signature | None:
    """The registry record of a target's physics signature from its specifications
    (:mod:`xamm_models.machines.specifications`); None without both peaks or its kind calibrated.

    Args:
        target: ``machine:device``.
        calibration: the efficiencies (a
            :class:`~xamm_models.machines.specifications.Calibration`).

    Returns:
        The signature record (not registered).
    """
    sig = specification_signature(target, calibration)
    if sig is None:
        return None
    t = Target.parse(target)
    eff = calibration.efficiencies[t.device or "cpu"]
    inputs = {
        "peaks": peaks(target),
        "efficiency": eff.model_dump(),
        "method": SPECIFICATIONS_METHOD,
    }
    return _physics_record(
        t,
        sig,
        ("specifications", SPECIFICATIONS_METHOD),
        basis="specifications",
        data_sha256=hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest(),
        kernels=[],
        coverage=0.0,
        n_samples=0,
        configuration=(
            f"one rank on one {'GPU' if t.device == 'gpu' else 'core'}: the registry's peaks x the "
            f"efficiencies of {', '.join(eff.machines)}"
        )[:500],
    )
