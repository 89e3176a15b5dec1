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
that passed is the state ``MACHINE@accepted`` (:mod:`~xamm_models.compare.history.states`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import logging
import os
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from xamm_data._version import __version__
from xamm_data.atomic import atomic_path, locked
from xamm_data.errors import TamperedError
from xamm_data.identifiers import NAME, check_name
from xamm_data.machines.targets import Target
from xamm_data.paths import xamm_home
from xamm_models.benchmark.spec import MAX_SIZE_RATIO
from xamm_models.compare.certificates import evidence

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
CERTIFICATE_SCHEMA_VERSION: Literal[2] = 2
#: the largest limits a criterion takes: a group 10x as fast as the reference, or 6x as slow
MAX_LIMIT = 10.0
MAX_EXCESS = 5.0
#: a kernel group's name or glob pattern as a criterion names it
GroupPattern = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f]+$")]


class Criterion(BaseModel):
    """One rule of a centre's acceptance criteria."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="a short name")
    description: str = ""
    kind: Literal["throughput", "slowdown"] = Field(
        description="throughput: group speed >= at_least x the reference's; slowdown: group "
        "relR <= 1 + at_most"
    )
    groups: list[GroupPattern] = Field(
        default=["*"], min_length=1, description="kernel groups (glob patterns)"
    )
    at_least: float | None = Field(
        default=None, gt=0, le=MAX_LIMIT, allow_inf_nan=False, strict=True,
        description="throughput: the fraction of the reference's speed (0.8 for 80%)",
    )  # fmt: skip
    at_most: float | None = Field(
        default=None, ge=0, le=MAX_EXCESS, allow_inf_nan=False, strict=True,
        description="slowdown: the allowed excess as a fraction (0.10 for 10%)",
    )  # fmt: skip
    basis: Literal["node", "rank"] = Field(
        default="node", description="a whole node against a whole node, or one rank against one"
    )

    @field_validator("at_least", "at_most", mode="before")
    @classmethod
    def _a_fraction(cls, v, info):
        if isinstance(v, bool):
            raise ValueError("expected a number, not true or false")
        top = MAX_LIMIT if info.field_name == "at_least" else MAX_EXCESS
        if isinstance(v, int | float) and top < v <= 100:
            raise ValueError(f"{v} looks like a percent: limits are fractions, write {v / 100:g} "
                             f"for {v:g}%")  # fmt: skip
        return v

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
        le=MAX_SIZE_RATIO,
        allow_inf_nan=False,
        strict=True,
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
    # RecursionError: arrays nested past the parser (a valid TOML file nests a few deep)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{p}: not TOML: {e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(top level)"
        raise ValueError(f"{p}: {where}: {first['msg']} (schema_version "
                         f"{CRITERIA_SCHEMA_VERSION}; its JSON Schema: `xamm schemas export "
                         "--dir DIR` writes acceptance_criteria.schema.json)"
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
    state_sources: list[str] = Field(
        default_factory=list,
        description="the source-file hashes of every run of the target the state rests on: "
        "MACHINE@accepted is exactly these runs",
    )
    state_sha256: str | None = Field(default=None, description="hash of the sorted state_sources")


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
    verdict: Literal["pass", "fail", "not judged"]
    certain: bool = Field(description="the whole 90% interval is on the verdict's side")
    before: str | None = Field(default=None, description="the previous certificate's verdict")
    why: str | None = Field(
        default=None,
        description="why a group is not judged, or why a verdict is not certain",
    )
    regime: Literal["same", "across", "unknown"] | None = Field(
        default=None,
        description="whether the group's matched sizes sit in the same cache level on both "
        "nodes (working set against the registry's last-level cache), across levels, or unknown",
    )


class Certificate(BaseModel):
    """An acceptance certificate (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    schema_version: Literal[2] = CERTIFICATE_SCHEMA_VERSION
    number: int | None = Field(default=None, ge=1, description="its number in the registry")
    machine: str = Field(pattern=NAME.pattern, max_length=100)
    new: str
    refs: list[str]
    family: str
    verdict: Literal["pass", "fail"]
    criteria: Criteria
    criteria_sha256: str
    grounds: list[Ground]
    results: list[GroupResult]
    changed: list[str] = Field(default_factory=list, description="verdicts that changed")
    previous: int | None = Field(default=None, description="the same target's certificate "
                                 "before it, which `changed` is against")  # fmt: skip
    size_ratio: float | None = Field(default=None, description="matched sizes within this ratio")
    xamm_version: str = __version__
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    predecessor_sha256: str | None = Field(
        default=None, description="the sha256 of the machine's certificate before this one"
    )
    sha256: str | None = Field(default=None, description="SHA-256 of its canonical content")

    @field_validator("new", "refs")
    @classmethod
    def _targets(cls, v):
        for t in [v] if isinstance(v, str) else v:
            Target.parse(t)  # a name that becomes a path is checked where it enters
        return v

    @model_validator(mode="after")
    def _own_machine(self) -> Certificate:
        if Target.parse(self.new).machine != self.machine:
            raise ValueError(f"certificate of {self.machine!r} accepts {self.new!r}")
        return self

    def ground(self, target: str | None = None) -> Ground | None:
        """What it rests on for ``target`` (default: the machine accepted)."""
        return next((g for g in self.grounds if g.target == (target or self.new)), None)

    @property
    def data_version(self) -> int | None:
        """The store version of the certified machine's runs (``MACHINE@accepted``)."""
        return next((g.data_version for g in self.grounds if g.target == self.new), None)

    def frame(self) -> pl.DataFrame:
        """The results as a table."""
        return pl.DataFrame([r.model_dump() for r in self.results])


def _verdict(v: float, lo, hi, limit: float) -> tuple[str, bool]:
    ok = v <= limit
    sure = (hi is not None and hi <= limit) if ok else (lo is not None and lo > limit)
    return ("pass" if ok else "fail"), bool(sure)


def _group_rows(c, crit: Criterion, ref: str) -> list[dict]:
    """One result per kernel group of ``ref`` the criterion names, and one "not judged" per
    pattern that names no compared group (or a group without a relR on the basis asked)."""
    g = c.groups.filter(pl.col("ref") == ref)
    node = crit.basis == "node" and c.node_view
    col = "relR_node" if node else "relR"
    basis = "node" if node else ("rank" if crit.basis == "rank" else "rank (node unknown)")
    out, have = [], g.get_column("group").to_list()
    for pattern in crit.groups:
        hits = [r for r in g.iter_rows(named=True) if fnmatch.fnmatchcase(r["group"], pattern)]
        if not hits:
            out.append(
                _not_judged(
                    crit,
                    ref,
                    pattern,
                    basis,
                    f"no kernel group compared against {ref} is named "
                    f"{pattern!r} (compared: {', '.join(have) or 'none'})",
                )
            )
        for r in hits:
            if any(o["group"] == r["group"] for o in out):
                continue  # two patterns naming one group judge it once
            v, lo, hi = r[col], r[f"{col}_lo"], r[f"{col}_hi"]
            if v is None:
                out.append(_not_judged(crit, ref, r["group"], basis, f"no {col} for this group"))
                continue
            verdict, sure = _verdict(v, lo, hi, crit.limit)
            why = None
            if r.get("regime") == "across":  # a cache level against another: never certain
                sure, why = False, r.get("regime_why")
            elif not sure:
                why = "the 90% interval crosses the limit"
            out.append(
                {
                    "criterion": crit.id,
                    "ref": ref,
                    "group": r["group"],
                    "kernels": r["kernels"],
                    "basis": basis,
                    "relR": v,
                    "lo": lo,
                    "hi": hi,
                    "limit": crit.limit,
                    "verdict": verdict,
                    "certain": sure,
                    "why": why,
                    "regime": r.get("regime"),
                }
            )
    return out


def _not_judged(crit: Criterion, ref: str, group: str, basis: str, why: str) -> dict:
    return {"criterion": crit.id, "ref": ref, "group": group, "kernels": 0, "basis": basis,
            "relR": None, "lo": None, "hi": None, "limit": crit.limit, "verdict": "not judged",
            "certain": False, "why": why}  # fmt: skip


def judge(c, criteria: Criteria) -> list[GroupResult]:
    """Every criterion on every kernel group it names against every reference; a group it names
    that is not compared is "not judged", beside the others' verdicts.

    Args:
        c: a :class:`~xamm_models.compare.Comparison`.
        criteria: the criteria.

    Returns:
        One result per criterion, reference and group.

    Raises:
        ValueError: nothing at all could be judged (no group compared).
    """
    out = [GroupResult(**r) for crit in criteria.criterion for ref in c.refs
           for r in _group_rows(c, crit, ref)]  # fmt: skip
    if not any(r.verdict != "not judged" for r in out):
        have = sorted(set(c.groups.get_column("group")))
        raise ValueError(
            "no criterion could be judged: "
            + (f"the compared kernel groups are {', '.join(have)}" if have else
               f"no kernel of {c.new} was matched with a reference's (see xamm compare)")
        )  # fmt: skip
    return out


def overall(results: list[GroupResult]) -> Literal["pass", "fail"]:
    """A certificate passes when every group judged passes (groups not judged are listed)."""
    return "fail" if any(r.verdict == "fail" for r in results) else "pass"


log = logging.getLogger(__name__)
_REPORTED: set[str] = set()  # problems already warned about in this process


class CertificateRegistry:
    """Certificates under ``root/<machine>/certificate@<n>.json``, each written once, chained by
    hashes (:mod:`~xamm_models.compare.certificates.evidence`) and verified on every read: a
    certificate that does not agree with its record is reported naming its file and left out,
    the others stay usable; numbers are never reused."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._held: set[str] = set()

    @classmethod
    def default(cls) -> CertificateRegistry:
        """The registry under ``$XAMM_HOME/certificates``."""
        return cls(xamm_home() / "certificates")

    def folder(self, machine: str) -> Path:
        """The folder of ``machine``'s certificates (the name checked: never outside ``root``)."""
        return self.root / check_name(machine, "certificate machine")

    def path(self, machine: str, number: int) -> Path:
        """Where certificate ``number`` of ``machine`` lives."""
        return self.folder(machine) / f"certificate@{int(number)}.json"

    def signature_path(self, machine: str, number: int) -> Path:
        """Where the centre's signature of certificate ``number`` lives (``xamm accept --sign``)."""
        return self.folder(machine) / f"certificate@{int(number)}.sig"

    def machines(self) -> list[str]:
        """The machines with a certificate, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(d.name for d in self.root.iterdir()
                      if d.is_dir() and NAME.match(d.name) and self.numbers(d.name))  # fmt: skip

    def verify(self, machine: str, public_key=None) -> evidence.ChainReport:
        """Check ``machine``'s certificates (see :func:`~xamm_models.compare.certificates.evidence.
        verify_folder`); with ``public_key``, each must also carry a signature by that key.

        Returns:
            The report: the certificates that hold, and each problem naming its file.
        """
        report = evidence.verify_folder(self.folder(machine), machine)
        for n, doc in sorted(report.good.items()):  # what agrees with its hash is still checked
            try:
                ok = Certificate.model_validate(doc).machine == machine
                why = f"is a certificate of {doc.get('machine')!r}, not of {machine}"
            except ValidationError as e:
                ok, why = False, f"not a certificate xamm can read ({e.errors()[0]['msg']})"
            if not ok:
                report.problems.append(evidence.Problem(self.path(machine, n), why))
                del report.good[n]
        if public_key is not None:
            for n, doc in sorted(report.good.items()):
                sig = self.signature_path(machine, n)
                try:
                    data = sig.read_bytes() if sig.is_file() else None
                    evidence.check_signature(doc, data, public_key, self.path(machine, n))
                except TamperedError as e:
                    report.problems.append(
                        evidence.Problem(self.path(machine, n), str(e).split(": ", 1)[1])
                    )
                    del report.good[n]
        return report

    def _good(self, machine: str) -> dict[int, dict]:
        report = self.verify(machine)
        for p in report.problems:  # said once per problem and process, on the command's stderr
            if str(p) not in _REPORTED:
                _REPORTED.add(str(p))
                log.warning("certificate not used: %s", p)
        return report.good

    def numbers(self, machine: str) -> list[int]:
        """The numbers of ``machine``'s certificates that verify, sorted."""
        return sorted(self._good(machine))

    def get(self, machine: str, number: int) -> Certificate:
        """One certificate, verified.

        Raises:
            KeyError: no such certificate, or it does not verify (the message says why).
        """
        good = self._good(machine)
        if number not in good:
            bad = [str(p) for p in self.verify(machine).problems
                   if p.path.name == f"certificate@{number}.json"]  # fmt: skip
            have = ", ".join(map(str, sorted(good))) or "none"
            raise KeyError(
                bad[0] if bad else f"{machine} has no certificate {number} (certificates: {have})"
            )
        return Certificate.model_validate(good[number])

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
            failed = ", ".join(str(c.number) for c in mine) or "none"
            raise ValueError(
                f"{machine} has no passing acceptance certificate in {self.root} (certificates: "
                f"{failed}): run `xamm accept {machine} --against REF --criteria criteria.toml`"
            )
        return passed[-1]

    def all(self, machine: str) -> list[Certificate]:
        """Every certificate of ``machine`` that verifies, oldest first."""
        good = self._good(machine)
        return [Certificate.model_validate(good[n]) for n in sorted(good)]

    @contextlib.contextmanager
    def writing(self, machine: str) -> Iterator[None]:
        """Hold ``machine``'s lock: what is read in it (the previous certificate) is still the
        newest when the certificate is added
        (:func:`~xamm_models.compare.certificates.acceptance.accept`)."""
        if machine in self._held:
            yield
            return
        with locked(self.folder(machine) / ".lock"):
            self._held.add(machine)
            try:
                yield
            finally:
                self._held.discard(machine)

    def add(self, cert: Certificate, signature: bytes | None = None, sign_key=None) -> Certificate:
        """Register a certificate: a numbered one (pulled) is kept if free and it follows the
        chain, or if identical to the one held; an unnumbered one gets the next number, which is
        never one issued before. Its hashes are set here, and the index's head moves to it.

        Args:
            cert: the certificate.
            signature: a pulled certificate's ``.sig`` bytes, kept beside it.
            sign_key: an Ed25519 private key to sign a new certificate with.

        Raises:
            ValueError: a taken number with other content, or a pulled certificate that does not
                follow the chain held here.
        """
        with self.writing(cert.machine):
            report = self.verify(cert.machine)
            if cert.number is not None and cert.number in report.good:
                kept = Certificate.model_validate(report.good[cert.number])
                if kept != cert:
                    raise ValueError(f"{cert.machine} certificate {cert.number} exists and "
                                     "differs; certificates never change")  # fmt: skip
                return kept
            if cert.number is None:
                cert = self._chained(cert, report)
            else:
                self._check_pulled(cert, report)
            doc = cert.model_dump(mode="json")
            self._write(cert.machine, cert.number, doc, report, signature, sign_key)
            return cert

    def check_add(self, cert: Certificate) -> None:
        """Raise what :meth:`add` would raise for a numbered (pulled) certificate, writing
        nothing: a pull checks every certificate before it registers any."""
        report = self.verify(cert.machine)
        if cert.number is not None and cert.number in report.good:
            if Certificate.model_validate(report.good[cert.number]) != cert:
                raise ValueError(f"{cert.machine} certificate {cert.number} exists here and "
                                 "differs; nothing was pulled")  # fmt: skip
            return
        self._check_pulled(cert, report)

    def _chained(self, cert: Certificate, report: evidence.ChainReport) -> Certificate:
        n = report.head + 1
        before = report.hashes.get(n - 1) or (report.good.get(n - 1) or {}).get("sha256")
        doc = cert.model_copy(update={"number": n, "predecessor_sha256": before,
                                      "sha256": None}).model_dump(mode="json")  # fmt: skip
        return Certificate.model_validate({**doc, "sha256": evidence.content_sha256(doc)})

    def _check_pulled(self, cert: Certificate, report: evidence.ChainReport) -> None:
        doc = cert.model_dump(mode="json")
        if cert.sha256 != evidence.content_sha256(doc):
            raise TamperedError(f"{cert.machine} certificate {cert.number}: its content does not "
                                "hash to the sha256 it records")  # fmt: skip
        assert cert.number is not None
        before = report.hashes.get(cert.number - 1)
        if cert.number > 1 and before is not None and cert.predecessor_sha256 != before:
            raise TamperedError(f"{cert.machine} certificate {cert.number} does not follow "
                                f"certificate {cert.number - 1} held here")  # fmt: skip

    def _write(self, machine: str, n, doc: dict, report, signature, sign_key) -> None:
        path = self.path(machine, n)
        if sign_key is not None:
            signature = evidence.sign(doc, sign_key)
        if signature is not None:
            with atomic_path(self.signature_path(machine, n)) as tmp:
                tmp.write_bytes(signature)
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(doc, indent=2) + "\n")
        os.chmod(path, 0o444)
        hashes = {**report.hashes, **{k: d["sha256"] for k, d in report.good.items()},
                  n: doc["sha256"]}  # fmt: skip
        index = {"machine": machine, "head": max(report.head, n),
                 "certificates": {str(k): hashes[k] for k in sorted(hashes)}}  # fmt: skip
        with atomic_path(self.folder(machine) / evidence.INDEX) as tmp:
            tmp.write_text(json.dumps(index, indent=1) + "\n")


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
