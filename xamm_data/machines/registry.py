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

import contextlib
import contextvars
import logging
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from xamm_data.atomic import atomic_path, locked
from xamm_data.errors import XammError
from xamm_data.identifiers import NAME, check_alias
from xamm_data.machines.facts import NODE_FACTS
from xamm_data.machines.names import SHIPPED, USER_FILE, user_file_path
from xamm_data.machines.targets import Target
from xamm_data.paths import xamm_home
from xamm_data.plugins import load
from xamm_data.registry import Registry, UnknownNameError

_ID = NAME  # xamm_data.identifiers: one rule for every name that becomes a path or a key
log = logging.getLogger(__name__)

# a count or a figure of a node: a number (never a bool, a string or a float for a count), finite
Count = Annotated[int, Field(ge=1, le=10**7, strict=True)]
Figure = Annotated[float, Field(gt=0, lt=1e12, allow_inf_nan=False, strict=True)]
Text = Annotated[str, Field(max_length=500, strict=True)]

# the node facts, in the order a table prints them: (field, what it is)


class MachineFactsError(XammError, ValueError):
    """A registry file or a fact that cannot be taken: names the file, the machine and the field."""


def silicon_key(text: str) -> str:
    """A processor's name as the registry compares it: what parentheses say (a partition mode, the
    cores of an APU, a memory size written there) left out, case and spacing ignored. Two machines
    whose device has the same key share their silicon (``AMD MI300A (CDNA 3, CPX mode)`` and
    ``AMD MI300A``); a name written differently (``NVIDIA Tesla V100``, ``NVIDIA V100``) does not
    match, so a key never claims more than the registry says.

    Args:
        text: a registry ``cpu`` or ``gpu`` field.

    Returns:
        The key.
    """
    return " ".join(re.sub(r"\([^)]*\)", " ", text).lower().replace(",", " ").split())


def same_silicon(target: str, among) -> list[str]:
    """The ``machine:device`` names of ``among`` of ``target``'s device kind whose device is the
    same processor as ``target``'s (:meth:`Machine.silicon`), in the order given; names the registry
    does not hold share nothing.

    Args:
        target: a ``machine:device`` name.
        among: ``machine:device`` names to look in.

    Returns:
        The ones on the same silicon, ``target`` itself left out.
    """
    key, device = _silicon_of(target), target.rpartition(":")[2]
    if key is None:
        return []
    # an APU's cores and its GPU share a name, not a device: only the same device kind counts
    return [
        e for e in among if e != target and e.rpartition(":")[2] == device and _silicon_of(e) == key
    ]


def _silicon_of(end: str) -> str | None:
    machine, _, device = end.rpartition(":")
    mid = canonical_id(machine) if machine else None
    return None if mid is None else get(mid).silicon(device)


class Machine(BaseModel):
    """A registry record: what the machine is, its node facts, and where the facts come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID.pattern, max_length=100)
    aliases: tuple[str, ...] = ()
    cpu: Text | None = None
    gpu: Text | None = None
    sockets: Count | None = None
    cores_per_node: Count | None = None
    memory_gib: Figure | None = None
    memory_bandwidth_gbs: Figure | None = None
    cache_mib: Figure | None = None
    peak_gflops: Figure | None = None
    gpus_per_node: Count | None = None
    gpu_memory_gib: Figure | None = None
    gpu_memory_bandwidth_gbs: Figure | None = None
    gpu_cache_mib: Figure | None = None
    gpu_peak_gflops: Figure | None = None
    # one processor's figures, for a platform named by its processor alone (no node known)
    processor_cores: Count | None = None
    processor_memory_bandwidth_gbs: Figure | None = None
    processor_cache_mib: Figure | None = None
    processor_peak_gflops: Figure | None = None
    in_paper: bool = Field(default=False, strict=True)
    source: Annotated[str, Field(max_length=2000, strict=True)]
    notes: Annotated[str, Field(max_length=4000, strict=True)] = ""
    # a platform of a performance-portability study: one device is measured, the other not
    only: Literal["cpu", "gpu"] | None = None
    # where the record was read: the shipped file, or the user's (its fields won)
    origin: str = "shipped"

    @field_validator("aliases", mode="before")
    @classmethod
    def _aliases_are_text(cls, v):
        if isinstance(v, str) or not isinstance(v, list | tuple):
            raise ValueError('expected a list of names, e.g. aliases = ["Dane"]')
        return tuple(check_alias(a) for a in v)

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

    def per_unit(self, device: str) -> dict[str, float | None]:
        """Peak memory bandwidth (B/s) and peak flop rate (flop/s) of one unit of ``device``: a CPU
        core (the node's figures over its cores, else one processor's over its cores) or one GPU;
        None where a figure or the count is unrecorded.

        Args:
            device: ``cpu`` or ``gpu``.
        """
        none: dict[str, float | None] = {"bandwidth": None, "flop_rate": None}
        if device not in self.devices:
            return none
        if device == "gpu":
            return {
                "bandwidth": self.memory_bandwidth("gpu"),
                "flop_rate": self.peak_flop_rate("gpu"),
            }
        node = (self.cores_per_node, self.memory_bandwidth_gbs, self.peak_gflops)
        chip = (
            self.processor_cores,
            self.processor_memory_bandwidth_gbs,
            self.processor_peak_gflops,
        )
        # a node's figures where it has them (one source for a figure and its count), else one
        # processor's: the two are never mixed
        cores, bw, flops = node if node[0] and (node[1] or node[2]) else chip
        if not cores:
            return none
        return {
            "bandwidth": None if bw is None else bw * 1e9 / cores,
            "flop_rate": None if flops is None else flops * 1e9 / cores,
        }

    def silicon(self, device: str) -> str | None:
        """The processor of ``device`` as :func:`silicon_key` writes it; None where unrecorded."""
        if device not in self.devices:
            return None
        text = self.gpu if device == "gpu" else self.cpu
        return silicon_key(text) if text else None

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
    # RecursionError: arrays nested past the parser (a valid TOML file nests a few deep)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError, RecursionError) as e:
        raise MachineFactsError(f"{path}: not valid TOML ({e})") from None
    tables = data.get("machines", {})
    extra = sorted(set(data) - {"machines"})
    if extra or not isinstance(tables, dict):
        raise MachineFactsError(
            f"{path}: expected only [machines.<id>] tables, found {extra or 'machines = ...'}"
        )
    bad = next((k for k, v in tables.items() if not isinstance(v, dict)), None)
    if bad is not None:
        raise MachineFactsError(f"{path}: machines.{bad} is not a table of facts")
    return tables


def _record(mid: str, shipped: dict | None, user: dict | None, where: Path) -> Machine:
    """One machine from its shipped fields with the user's over them (aliases are added to the
    shipped ones, never replace them); a bad field names the file, the machine and the field."""
    fields = {**(shipped or {}), **(user or {})}
    if user is not None:
        fields["origin"] = "yours" if shipped is None else "shipped, with your facts"
        fields.setdefault("source", f"added by the user ({where})")
        if shipped and isinstance(user.get("aliases"), list | tuple):
            fields["aliases"] = [*shipped.get("aliases", []), *user["aliases"]]
    try:
        return Machine(id=mid, **fields)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "(record)"
        raise MachineFactsError(
            f"{where if user is not None else SHIPPED}: machine {mid!r}, field {field!r}: "
            f"{err['msg']} (given {err.get('input')!r})"
        ) from None


def _records(shipped: dict[str, dict], user: dict[str, dict], where: Path) -> list[Machine]:
    """Every machine of both files; raises on the first bad record (for what is about to be
    written)."""
    return [
        _record(mid, shipped.get(mid), user.get(mid), where)
        for mid in list(shipped) + [m for m in user if m not in shipped]
    ]


def _user_records(shipped: dict[str, dict], path: Path) -> dict[str, Machine]:
    """The user's records that can be taken; a file or record that cannot is warned about, naming
    it, and left out: the shipped registry and the user's other machines keep working."""
    if not path.is_file():
        return {}
    try:
        user = _read_tables(path)
    except MachineFactsError as e:
        log.warning("%s; the file is ignored until it is mended (xamm machines add rewrites it)", e)
        return {}
    out = {}
    for mid, fields in user.items():
        m = _user_record(mid, fields, shipped.get(mid), path, "this machine's facts are ignored")
        if m is not None:
            out[mid] = m
    return out


def _register_aliases(reg: Registry[Machine], m: Machine, where: str) -> Machine:
    """Register ``m``'s aliases that name no other machine; one that does is refused with a
    warning: an alias never redirects another machine's data."""
    kept = []
    for a in m.aliases:
        owner = reg.canonical(a)
        if owner not in (None, m.id):
            log.warning("%s: alias %r of %s is already a name of %s; ignored (an alias never "
                        "redirects another machine's data)", where, a, m.id, owner)  # fmt: skip
            continue
        reg.add_alias(m.id, a)
        kept.append(a)
    return m if tuple(kept) == m.aliases else m.model_copy(update={"aliases": tuple(kept)})


def _load() -> tuple[tuple[Machine, ...], Registry[Machine]]:
    shipped = _read_tables(SHIPPED)
    path = user_file()
    user = _user_records(shipped, path)
    base = {mid: _record(mid, fields, None, SHIPPED) for mid, fields in shipped.items()}
    reg: Registry[Machine] = Registry("machine", error=UnknownMachineError)
    for m in base.values():  # every shipped id and alias first: the user's cannot shadow them
        reg.add(m.id, m, aliases=m.aliases)
    for mid, m in user.items():
        if mid not in base:
            reg.add(mid, m)
    records = []
    for mid in list(base) + [m for m in user if m not in base]:
        m = user[mid] if mid in user else base[mid]
        if mid in user:
            m = _register_aliases(reg, m, str(path))
            reg.replace(mid, m)
        records.append(m)
    return tuple(records), reg


class UnknownMachineError(UnknownNameError):
    """A machine name that is in no registry; the message lists the known ids and the closest
    one."""


_LOADED: dict[tuple, tuple[tuple[Machine, ...], Registry[Machine]]] = {}


_PINNED: contextvars.ContextVar[tuple[tuple[Machine, ...], Registry[Machine]] | None] = (
    contextvars.ContextVar("xamm_registry_pinned", default=None)
)


@contextlib.contextmanager
def pinned():
    """The registry as the files say on entry, for everything inside (in this thread or task): a
    batch of sources is read against one registry, without asking the file system again for each
    source."""
    token = _PINNED.set(_current())
    try:
        yield
    finally:
        _PINNED.reset(token)


def _current() -> tuple[tuple[Machine, ...], Registry[Machine]]:
    """The registry as the files say now: read again when the user's file moved (another
    ``$XAMM_HOME``) or changed (unless :func:`pinned`)."""
    if (pin := _PINNED.get()) is not None:
        return pin
    path = user_file_path()
    stamp: tuple[str, int | None, int | None]
    try:
        st = os.stat(path)
        stamp = (path, st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (path, None, None)
    if stamp not in _LOADED:
        _LOADED.clear()
        _LOADED[stamp] = _load()
    return _LOADED[stamp]


def reload() -> None:
    """Read the registry files again on next use (a :func:`pinned` registry included: a write
    inside it is seen)."""
    _LOADED.clear()
    _PINNED.set(None)


def __getattr__(name: str):
    """``MACHINES`` (every record) and ``REGISTRY`` (the :class:`Registry`), as the files say
    now."""
    if name == "MACHINES":
        return _current()[0]
    if name == "REGISTRY":
        return _current()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _toml(tables: dict[str, dict]) -> str:
    """The user's registry file: written by a TOML writer (keys quoted, strings escaped)."""
    body = tomli_w.dumps({"machines": {m: tables[m] for m in sorted(tables)}})
    head = "# Machines and node facts the user added (xamm machines add); layout as xamm's own\n\n"
    return head + body


def _write_checked(path: Path, tables: dict[str, dict]) -> None:
    """Write the user's registry atomically, once the text read back gives the same tables and
    every record of them is taken: a bad file never replaces a good one."""
    text = _toml(tables)
    shipped = _read_tables(SHIPPED)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        if _read_tables(tmp) != tables:
            raise MachineFactsError(f"{path}: the facts did not read back as written; not saved")
        _records({m: shipped[m] for m in tables if m in shipped}, tables, path)


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
        try:
            tables = _read_tables(path) if path.is_file() else {}
        except MachineFactsError as e:  # kept beside, never lost: a new file starts
            path.replace(kept := path.with_name(f"{USER_FILE}.unreadable"))
            log.warning("%s; moved to %s, a new file is started", e, kept)
            tables = {}
        merged = {**tables.get(mid, {}), **given}
        if "aliases" in given:  # added to the ones recorded, never replacing them
            old = list(tables.get(mid, {}).get("aliases", []))
            merged["aliases"] = old + [a for a in given["aliases"] if a not in old]
        # a record the file already holds that cannot be taken is dropped, not carried over
        shipped = _read_tables(SHIPPED)
        keep = {m: t for m, t in tables.items() if m == mid or
                _user_record(m, t, shipped.get(m), path, "dropped from the file")}  # fmt: skip
        _write_checked(path, {**keep, mid: merged})
    reload()
    return get(mid)


def checked_facts(machine_id: str, where: Path | None = None, **facts) -> tuple[str, dict]:
    """(the registry id, the facts given) once every fact is known and in range for that machine.

    Args:
        machine_id: a registry id or alias, or a new id.
        where: the file the facts come from, for messages (default: the user's registry file).
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
    current = _user_tables().get(mid, {})
    shipped = _read_tables(SHIPPED).get(mid)
    _record(mid, shipped, {"source": "given", **current, **given}, where or user_file())
    for a in given.get("aliases", ()):
        owner = canonical_id(a) if isinstance(a, str) else None
        if owner not in (None, mid):
            raise MachineFactsError(f"machine {mid}: alias {a!r} is already a name of {owner}; "
                                    "an alias never redirects another machine's data")  # fmt: skip
    return mid, given


def _user_tables() -> dict[str, dict]:
    """The user's file as tables; {} when absent or unreadable (warned about when loaded)."""
    try:
        return _read_tables(user_file()) if user_file().is_file() else {}
    except MachineFactsError:
        return {}


def _user_record(mid: str, fields, shipped: dict | None, path: Path, then: str) -> Machine | None:
    """A record of the user's file as a machine; one that cannot be taken is warned about, naming
    the file, the machine and the field, and what ``then`` happens to it, and gives None."""
    try:
        if not _ID.match(mid):
            raise MachineFactsError(f"{path}: machine id {mid!r} is not a name xamm keeps")
        return _record(mid, shipped, fields, path)
    except MachineFactsError as e:
        log.warning("%s; %s", e, then)
        return None


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
    "pinned",
    "reload",
    "same_silicon",
    "silicon_key",
    "split_target",
    "user_file",
]
