"""Acceptance certificates: a machine against references, judged by criteria a centre writes.

A centre writes ``criteria.toml`` (:class:`Criteria`, schema in ``schemas/``)::

    schema_version = 1
    name = "newbox acceptance"
    size_ratio = 1.5         # how far apart matched problem sizes may be (optional)

    [[criterion]]
    id = "stream-bandwidth"
    description = "Stream at least 80% of the reference's node bandwidth"
    kind = "throughput"      # the group's speed on NEW >= at_least x the reference's
    groups = ["Stream"]
    at_least = 0.8

    [[criterion]]
    id = "no-slow-group"
    description = "no kernel group slower than the reference by more than 10%"
    kind = "slowdown"        # the group's relR <= 1 + at_most
    groups = ["*"]
    at_most = 0.10

Both kinds read a kernel group's relR from :func:`~xamm_models.compare.compare`: the geometric
mean over its kernels of seconds per iteration on NEW / on the reference, with a 90% bootstrap
interval over kernels, a whole node against a whole node (``basis = "node"``, the default) where
the machines' facts give both nodes, else one rank against one rank (the row says which). A group
passes when its relR is within the limit; ``certain`` says whether the whole interval is on the
same side.

:func:`certify` judges, records the signature versions and data hashes the judgement rests on,
and what changed against the machine's previous certificate. A :class:`CertificateRegistry`
keeps every certificate, immutable, under ``$XAMM_HOME/certificates/<machine>/``; the newest one
that passed is the state ``MACHINE@accepted`` (:mod:`~xamm_models.compare.states`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from xamm_data._version import __version__
from xamm_data.atomic import atomic_path, locked
from xamm_data.paths import xamm_home

__all__ = [
    "CERTIFICATE_SCHEMA_VERSION",
    "CRITERIA_SCHEMA_VERSION",
    "Certificate",
    "CertificateRegistry",
    "Criteria",
    "Criterion",
    "GroupResult",
    "Ground",
    "judge",
    "read_criteria",
    "schema_files",
]

CRITERIA_SCHEMA_VERSION: Literal[1] = 1
CERTIFICATE_SCHEMA_VERSION: Literal[1] = 1


class Criterion(BaseModel):
    """One rule of a centre's acceptance criteria."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="a short name")
    description: str = ""
    kind: Literal["throughput", "slowdown"] = Field(
        description="throughput: group speed >= at_least x the reference's; slowdown: group "
        "relR <= 1 + at_most"
    )
    groups: list[str] = Field(
        default=["*"], min_length=1, description="kernel groups (glob patterns)"
    )
    at_least: float | None = Field(default=None, gt=0, description="throughput: the fraction")
    at_most: float | None = Field(default=None, ge=0, description="slowdown: the allowed excess")
    basis: Literal["node", "rank"] = Field(
        default="node", description="a whole node against a whole node, or one rank against one"
    )

    @model_validator(mode="after")
    def _limit_given(self) -> Criterion:
        need = "at_least" if self.kind == "throughput" else "at_most"
        if getattr(self, need) is None:
            raise ValueError(f"criterion {self.id!r} of kind {self.kind} needs {need}")
        return self

    @property
    def limit(self) -> float:
        """The largest relR that passes."""
        if self.kind == "throughput":
            assert self.at_least is not None
            return 1 / self.at_least
        assert self.at_most is not None
        return 1 + self.at_most


class Criteria(BaseModel):
    """A centre's acceptance criteria (``criteria.toml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = CRITERIA_SCHEMA_VERSION
    name: str = "acceptance"
    size_ratio: float = Field(
        default=1.5,
        ge=1,
        description="how far apart matched problem sizes may be (xamm compare --size-ratio)",
    )
    criterion: list[Criterion] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Criteria:
        ids = [c.id for c in self.criterion]
        if len(ids) != len(set(ids)):
            raise ValueError(f"criterion ids repeat: {sorted(i for i in ids if ids.count(i) > 1)}")
        return self


def read_criteria(path: str | Path) -> tuple[Criteria, str]:
    """Read and validate ``criteria.toml``.

    Args:
        path: the file.

    Returns:
        (the criteria, the file's SHA-256).

    Raises:
        ValueError: not TOML, or not the schema; the message names the file and the field.
    """
    p = Path(path)
    raw = p.read_bytes()
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
        return Criteria.model_validate(doc), hashlib.sha256(raw).hexdigest()
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{p}: not TOML: {e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top level)"
        raise ValueError(f"{p}: {where}: {first['msg']} (schema_version "
                         f"{CRITERIA_SCHEMA_VERSION}; see schemas/acceptance_criteria.schema.json)"
                         ) from None  # fmt: skip


class Ground(BaseModel):
    """What a certificate rests on, per target."""

    model_config = ConfigDict(frozen=True)

    target: str
    data_version: int | None = Field(description="the store's benchmark_runs version read")
    signature: str | None = Field(description="the physics signature version, machine:device@N")
    data_sha256: str | None = Field(description="the signature's hash of its benchmark samples")
    runs_sha256: str = Field(description="hash of the sorted source-file hashes of the runs read")
    sources: int
    rows: int
    judged: str = Field(
        default="all runs",
        description="which runs: all, or the runs added since the previous certificate",
    )
    first_run: str | None = None
    last_run: str | None = None


class GroupResult(BaseModel):
    """One criterion's verdict on one kernel group against one reference."""

    model_config = ConfigDict(frozen=True)

    criterion: str
    ref: str
    group: str
    kernels: int
    basis: str = Field(description="node, or rank where a node is not known for both")
    relR: float | None
    lo: float | None
    hi: float | None
    limit: float
    verdict: Literal["pass", "fail"]
    certain: bool = Field(description="the whole 90% interval is on the verdict's side")
    before: str | None = Field(default=None, description="the previous certificate's verdict")


class Certificate(BaseModel):
    """An acceptance certificate (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[1] = CERTIFICATE_SCHEMA_VERSION
    number: int | None = Field(default=None, ge=1, description="its number in the registry")
    machine: str
    new: str
    refs: list[str]
    family: str
    verdict: Literal["pass", "fail"]
    criteria: Criteria
    criteria_sha256: str
    grounds: list[Ground]
    results: list[GroupResult]
    changed: list[str] = Field(default_factory=list, description="verdicts that changed")
    previous: int | None = None
    xamm_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def data_version(self) -> int | None:
        """The store version of the certified machine's runs (``MACHINE@accepted``)."""
        return next((g.data_version for g in self.grounds if g.target == self.new), None)

    def frame(self) -> pl.DataFrame:
        """The results as a table."""
        return pl.DataFrame([r.model_dump() for r in self.results])


def _group_rows(c, crit: Criterion, ref: str) -> list[dict]:
    g = c.groups.filter(pl.col("ref") == ref)
    g = g.filter(
        pl.col("group").map_elements(
            lambda x: any(fnmatch.fnmatchcase(x, p) for p in crit.groups), return_dtype=pl.Boolean
        )
    )
    node = crit.basis == "node" and c.node_view
    col = "relR_node" if node else "relR"
    out = []
    for r in g.iter_rows(named=True):
        v, lo, hi = r[col], r[f"{col}_lo"], r[f"{col}_hi"]
        if v is None:
            continue
        ok = v <= crit.limit
        sure = (hi is not None and hi <= crit.limit) if ok else (lo is not None and lo > crit.limit)
        out.append(
            {
                "criterion": crit.id,
                "ref": ref,
                "group": r["group"],
                "kernels": r["kernels"],
                "basis": "node"
                if node
                else ("rank" if crit.basis == "rank" else "rank (node unknown)"),
                "relR": v,
                "lo": lo,
                "hi": hi,
                "limit": crit.limit,
                "verdict": "pass" if ok else "fail",
                "certain": bool(sure),
            }
        )
    return out


def judge(c, criteria: Criteria) -> list[GroupResult]:
    """Every criterion on every matching kernel group against every reference.

    Args:
        c: a :class:`~xamm_models.compare.Comparison`.
        criteria: the criteria.

    Returns:
        One result per criterion, reference and group.

    Raises:
        ValueError: a criterion matches no group the comparison has.
    """
    out = []
    for crit in criteria.criterion:
        rows = [row for ref in c.refs for row in _group_rows(c, crit, ref)]
        if not rows:
            have = sorted(set(c.groups.get_column("group")))
            raise ValueError(
                f"criterion {crit.id!r}: no compared kernel group matches {crit.groups}; "
                f"the groups are {', '.join(have)}"
            )
        out += [GroupResult(**r) for r in rows]
    return out


class CertificateRegistry:
    """Certificates under ``root/<machine>/certificate@<n>.json``, each written once."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @classmethod
    def default(cls) -> CertificateRegistry:
        """The registry under ``$XAMM_HOME/certificates``."""
        return cls(xamm_home() / "certificates")

    def path(self, machine: str, number: int) -> Path:
        """Where certificate ``number`` of ``machine`` lives."""
        return self.root / machine / f"certificate@{number}.json"

    def machines(self) -> list[str]:
        """The machines with a certificate, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(d.name for d in self.root.iterdir() if d.is_dir() and self.numbers(d.name))

    def numbers(self, machine: str) -> list[int]:
        """The machine's certificate numbers, sorted."""
        d = self.root / machine
        return sorted(int(p.stem.split("@")[1]) for p in d.glob("certificate@*.json"))

    def get(self, machine: str, number: int) -> Certificate:
        """One certificate."""
        p = self.path(machine, number)
        if not p.is_file():
            have = ", ".join(map(str, self.numbers(machine))) or "none"
            raise KeyError(f"{machine} has no certificate {number} (certificates: {have})")
        return Certificate.model_validate_json(p.read_text())

    def latest(self, machine: str, target: str | None = None) -> Certificate | None:
        """The newest certificate of ``machine`` (of its ``target``, ``machine:device``, when
        given: a node's CPU and GPU are accepted apart); None before the first."""
        mine = [c for c in self.all(machine) if target is None or c.new == target]
        return mine[-1] if mine else None

    def accepted(self, machine: str, target: str | None = None) -> Certificate:
        """The newest certificate of ``machine`` (of ``target`` when given) that passed: the
        state ``MACHINE@accepted``.

        Raises:
            ValueError: none passed yet, naming the failed ones.
        """
        mine = [c for c in self.all(machine) if target is None or c.new == target]
        passed = [c for c in mine if c.verdict == "pass"]
        if not passed:
            failed = ", ".join(str(n) for n in self.numbers(machine)) or "none"
            raise ValueError(
                f"{machine} has no passing acceptance certificate in {self.root} (certificates: "
                f"{failed}): run `xamm accept {machine} --against REF --criteria criteria.toml`"
            )
        return passed[-1]

    def all(self, machine: str) -> list[Certificate]:
        """Every certificate of ``machine``, oldest first."""
        return [self.get(machine, n) for n in self.numbers(machine)]

    def add(self, cert: Certificate) -> Certificate:
        """Register a certificate: a numbered one (pulled) is kept if free or identical, an
        unnumbered one gets the next number.

        Raises:
            ValueError: a taken number with other content.
        """
        with locked(self.root / ".lock"):
            if cert.number is not None and self.path(cert.machine, cert.number).is_file():
                kept = self.get(cert.machine, cert.number)
                if kept != cert:
                    raise ValueError(f"{cert.machine} certificate {cert.number} exists and "
                                     "differs; certificates never change")  # fmt: skip
                return kept
            if cert.number is None:
                numbers = self.numbers(cert.machine)
                cert = cert.model_copy(update={"number": (numbers[-1] if numbers else 0) + 1})
            assert cert.number is not None
            path = self.path(cert.machine, cert.number)
            with atomic_path(path) as tmp:
                tmp.write_text(cert.model_dump_json(indent=2) + "\n")
            os.chmod(path, 0o444)
            return cert


def schema_files() -> dict[str, str]:
    """The JSON Schemas of the criteria file and of a certificate, for ``schemas/`` (the
    ``xamm.schemas`` entry point; ``xamm schemas export`` writes them).

    Returns:
        File name -> text.
    """
    return {
        f"acceptance_{name}.schema.json": json.dumps(model.model_json_schema(), indent=2) + "\n"
        for name, model in (("criteria", Criteria), ("certificate", Certificate))
    }
