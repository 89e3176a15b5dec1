"""The machine registry: one table of the machines xamm knows, and the public facts of their nodes.

The table is a data file, ``machines.toml`` beside this module: the 16 platforms of the xAMM
paper (Section V-E and Table III), the machines the public data in xamm's tests covers, and the
platforms of the UoB performance-portability study. Facts carry their source; machines the sources
do not name get an id derived from the processor, never an invented name; a fact nobody published
is left out.

A user extends or corrects it without editing code: ``$XAMM_HOME/machines.toml`` holds tables in the
same layout, and its fields win over the shipped ones (:func:`add_facts` writes it; ``xamm machines
add`` and a ``[node]`` table in an ``xamm.toml`` beside the runs call it).

A CPU and a GPU of the same node are different prediction targets: they are addressed as
``<machine>:cpu`` and ``<machine>:gpu`` (:func:`split_target`); benchmark rows carry a ``device``
column (``cpu`` for Seq/OpenMP variants, ``gpu`` for CUDA/HIP/SYCL/OpenMPTarget variants) that
selects the rows of each target.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xamm_data.atomic import locked, write_text_atomic
from xamm_data.paths import xamm_home
from xamm_data.plugins import load
from xamm_data.registry import Registry, UnknownNameError
from xamm_data.targets import Target

SHIPPED = Path(__file__).with_name("machines.toml")
USER_FILE = "machines.toml"
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

# the node facts, in the order a table prints them: (field, what it is)
NODE_FACTS: tuple[tuple[str, str], ...] = (
    ("sockets", "CPU sockets (or APU packages) a node"),
    ("cores_per_node", "CPU cores a node"),
    ("memory_gib", "CPU memory a node, GiB"),
    ("memory_bandwidth_gbs", "peak CPU memory bandwidth a node, GB/s"),
    ("cache_mib", "last-level cache of all sockets, MiB"),
    ("peak_gflops", "peak double-precision CPU rate a node, GFLOP/s"),
    ("gpus_per_node", "GPUs a node"),
    ("gpu_memory_gib", "memory a GPU, GiB"),
    ("gpu_memory_bandwidth_gbs", "peak memory bandwidth a GPU, GB/s"),
    ("gpu_cache_mib", "last-level cache a GPU, MiB"),
    ("gpu_peak_gflops", "peak double-precision rate a GPU, GFLOP/s"),
)


class MachineFactsError(ValueError):
    """A registry file or a fact that cannot be taken: names the file, the machine and the field."""


class Machine(BaseModel):
    """A registry record: what the machine is, its node facts, and where the facts come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID.pattern)
    aliases: tuple[str, ...] = ()
    cpu: str | None = None
    gpu: str | None = None
    sockets: int | None = Field(default=None, ge=1)
    cores_per_node: int | None = Field(default=None, ge=1)
    memory_gib: float | None = Field(default=None, gt=0)
    memory_bandwidth_gbs: float | None = Field(default=None, gt=0)
    cache_mib: float | None = Field(default=None, gt=0)
    peak_gflops: float | None = Field(default=None, gt=0)
    gpus_per_node: int | None = Field(default=None, ge=1)
    gpu_memory_gib: float | None = Field(default=None, gt=0)
    gpu_memory_bandwidth_gbs: float | None = Field(default=None, gt=0)
    gpu_cache_mib: float | None = Field(default=None, gt=0)
    gpu_peak_gflops: float | None = Field(default=None, gt=0)
    in_paper: bool = False
    source: str
    notes: str = ""
    # a platform of a performance-portability study: one device is measured, the other not
    only: Literal["cpu", "gpu"] | None = None
    # where the record was read: the shipped file, or the user's (its fields won)
    origin: str = "shipped"

    @property
    def devices(self) -> tuple[str, ...]:
        if self.only:
            return (self.only,)
        return ("cpu", "gpu") if self.gpu or self.gpus_per_node else ("cpu",)

    def units_per_node(self, device: str) -> int | None:
        """What a node has of ``device``: its CPU cores, or its GPUs; None where unrecorded."""
        return self.gpus_per_node if device == "gpu" else self.cores_per_node

    def memory_bandwidth(self, device: str) -> float | None:
        """Peak memory bandwidth in B/s: a node's CPU memory, or one GPU's; None if unrecorded."""
        gbs = self.gpu_memory_bandwidth_gbs if device == "gpu" else self.memory_bandwidth_gbs
        return None if gbs is None else gbs * 1e9

    def peak_flop_rate(self, device: str) -> float | None:
        """Peak double-precision flop/s: a node's CPUs, or one GPU; None where unrecorded."""
        gf = self.gpu_peak_gflops if device == "gpu" else self.peak_gflops
        return None if gf is None else gf * 1e9

    def cache_bytes(self, device: str) -> float | None:
        """Last-level cache in bytes: a node's CPU sockets together, or one GPU's."""
        mib = self.gpu_cache_mib if device == "gpu" else self.cache_mib
        return None if mib is None else mib * 2.0**20

    def facts(self) -> dict[str, float | int | None]:
        """The node facts (:data:`NODE_FACTS`), None where unrecorded."""
        return {k: getattr(self, k) for k, _ in NODE_FACTS}

    def signature(self, version: int | None = None, device: str | None = None, registry=None):
        """This machine's AMM signature (latest version unless ``version``); ``device`` when it has
        two.

        Signatures are model-side (:mod:`xamm_models.machines.signatures`), found through the
        ``xamm.signatures`` hook.
        """
        lookup = load("xamm.signatures", "lookup", "AMM signatures")
        return lookup(self.id + (f":{device}" if device else ""), version, registry)


def user_file() -> Path:
    """The user's registry file: ``$XAMM_HOME/machines.toml``."""
    return xamm_home() / USER_FILE


def _read_tables(path: Path) -> dict[str, dict]:
    """``{id: fields}`` of a registry file; one that is not names itself and what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise MachineFactsError(f"{path}: not valid TOML ({e})") from None
    tables = data.get("machines", {})
    extra = sorted(set(data) - {"machines"})
    if extra or not isinstance(tables, dict):
        raise MachineFactsError(
            f"{path}: expected only [machines.<id>] tables, found {extra or 'machines = ...'}"
        )
    return tables


def _records(shipped: dict[str, dict], user: dict[str, dict], where: Path) -> list[Machine]:
    out = []
    for mid in list(shipped) + [m for m in user if m not in shipped]:
        fields = {**shipped.get(mid, {}), **user.get(mid, {})}
        if mid in user:
            fields["origin"] = "yours" if mid not in shipped else "shipped, with your facts"
            fields.setdefault("source", f"added by the user ({where})")
        try:
            out.append(Machine(id=mid, **fields))
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "(record)"
            raise MachineFactsError(
                f"{where if mid in user else SHIPPED}: machine {mid!r}, field {field!r}: "
                f"{err['msg']} (given {err.get('input')!r})"
            ) from None
    return out


def _load() -> tuple[tuple[Machine, ...], Registry[Machine]]:
    shipped = _read_tables(SHIPPED)
    path = user_file()
    user = _read_tables(path) if path.is_file() else {}
    records = tuple(_records(shipped, user, path))
    reg: Registry[Machine] = Registry("machine", error=UnknownMachineError)
    for m in records:
        reg.add(m.id, m, aliases=m.aliases)
    return records, reg


class UnknownMachineError(UnknownNameError):
    """A machine name that is in no registry; the message lists the known ids and the closest
    one."""


_LOADED: dict[tuple, tuple[tuple[Machine, ...], Registry[Machine]]] = {}


def _current() -> tuple[tuple[Machine, ...], Registry[Machine]]:
    """The registry as the files say now: read again when the user's file moved (another
    ``$XAMM_HOME``) or changed."""
    path = user_file()
    stamp: tuple[str, int | None, int | None]
    try:
        stamp = (str(path), path.stat().st_mtime_ns, path.stat().st_size)
    except OSError:
        stamp = (str(path), None, None)
    if stamp not in _LOADED:
        _LOADED.clear()
        _LOADED[stamp] = _load()
    return _LOADED[stamp]


def reload() -> None:
    """Read the registry files again on next use."""
    _LOADED.clear()


def __getattr__(name: str):
    """``MACHINES`` (every record) and ``REGISTRY`` (the :class:`Registry`), as the files say
    now."""
    if name == "MACHINES":
        return _current()[0]
    if name == "REGISTRY":
        return _current()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        if isinstance(v, float) and not math.isfinite(v):
            raise MachineFactsError(f"{v!r} is not a finite number")
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml(tables: dict[str, dict]) -> str:
    parts = ["# Machines and node facts the user added (xamm machines add); layout as xamm's own\n"]
    for mid in sorted(tables):
        parts.append(f"\n[machines.{mid}]\n")
        parts += [f"{k} = {_toml_value(v)}\n" for k, v in tables[mid].items() if v is not None]
    return "".join(parts)


def add_facts(machine_id: str, **facts) -> Machine:
    """Record facts of a machine in the user's registry file (created when absent; a field given
    again is replaced), and reload the registry.

    Args:
        machine_id: a registry id or alias (its facts are added to that machine), or a new id.
        **facts: :class:`Machine` fields (``cores_per_node=112``, ``gpu="NVIDIA H100"``,
            ``source="..."``); None leaves a field as it is.

    Returns:
        The machine as the registry now holds it.

    Raises:
        MachineFactsError: an unknown field, a value out of range, or a bad id.
    """
    mid, given = checked_facts(machine_id, **facts)
    path = user_file()
    with locked(path.with_name(f".{USER_FILE}.lock")):
        tables = _read_tables(path) if path.is_file() else {}
        merged = {**tables.get(mid, {}), **given}
        # checked before it is written: a bad fact never reaches the file
        _records({mid: _read_tables(SHIPPED).get(mid, {})}, {mid: merged}, path)
        write_text_atomic(path, _toml({**tables, mid: merged}))
    reload()
    return get(mid)


def checked_facts(machine_id: str, **facts) -> tuple[str, dict]:
    """(the registry id, the facts given) once every fact is known and in range for that machine.

    Args:
        machine_id: a registry id or alias, or a new id.
        **facts: :class:`Machine` fields; None are left out.

    Returns:
        The id and the facts.

    Raises:
        MachineFactsError: an unknown field, a value out of range, or a bad id.
    """
    mid = canonical_id(machine_id) or machine_id
    if not _ID.match(mid):
        raise MachineFactsError(
            f"machine id {machine_id!r}: expected lower-case letters, digits, '.', '_' or '-'"
        )
    given = {k: v for k, v in facts.items() if v is not None}
    unknown = sorted(set(given) - (set(Machine.model_fields) - {"id", "origin"}))
    if unknown:
        raise MachineFactsError(
            f"machine {mid}: unknown field(s) {unknown}; expected some of "
            f"{', '.join(k for k, _ in NODE_FACTS)}, cpu, gpu, aliases, source, notes"
        )
    current = _read_tables(user_file()).get(mid, {}) if user_file().is_file() else {}
    shipped = _read_tables(SHIPPED).get(mid, {})
    _records({mid: shipped}, {mid: {"source": "given", **current, **given}}, user_file())
    return mid, given


def list_machines(pattern: str = "*") -> list[str]:
    """Registry ids matching a shell-style ``pattern`` (e.g. ``"xeon*"``), sorted."""
    return _current()[1].list(pattern)


def canonical_id(name: str) -> str | None:
    """The registry id for an id or alias (case-insensitive), else ``None``."""
    return _current()[1].canonical(name)


def get(name: str) -> Machine:
    """The registry record for ``name`` (id or alias); raises :class:`UnknownMachineError` listing
    valid ids."""
    return _current()[1].get(name)


def split_target(target: str) -> tuple[str, str | None]:
    """Split ``"lassen:gpu"`` into ``("lassen", "gpu")``; a bare name gives device ``None`` (see
    :class:`Target`)."""
    t = Target.parse(target)
    return t.machine, t.device


__all__ = [  # and MACHINES, REGISTRY: the registry as the files say now (module __getattr__)
    "NODE_FACTS",
    "SHIPPED",
    "Machine",
    "MachineFactsError",
    "UnknownMachineError",
    "add_facts",
    "canonical_id",
    "checked_facts",
    "get",
    "list_machines",
    "reload",
    "split_target",
    "user_file",
]
