"""Machine ids for ingested data: the registry id when the name is known, else a normalised name."""

from __future__ import annotations

import contextlib
import contextvars
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from xamm_data.identifiers import is_name
from xamm_data.machines import names as registry_names
from xamm_ingest.errors import IngestError

if TYPE_CHECKING:
    from xamm_ingest.run_config import RunDirConfig

CONFIG_NAME = "xamm.toml"
# Registry aliases resolved in this process since the last take_aliases() (``M1`` -> ``quartz``):
# the ingest
# summary shows each one, so a name never lands in another machine's partition without a word.
_RESOLVED: dict[str, str] = {}
# node facts of the xamm.toml files read since the last record_node_facts(): file -> (machine,
# facts); recorded in the user's machine registry once the ingest has written its rows
_NODE_FACTS: dict[str, tuple[str, dict]] = {}


# names that are no machine or alias of the registry, since the last take_unknown(): name -> id;
# stored as given, and the ingest summary says so
_UNKNOWN: dict[str, str] = {}
# a name is data, never a path: these characters make it one
_PATH_LIKE = re.compile(r"[/\\\x00-\x1f]|\.\.")
# how names are looked up while a chunk of sources is read (names_pinned)
_PINNED: contextvars.ContextVar[Callable[[str], str | None] | None] = contextvars.ContextVar(
    "xamm_ingest_machine_names_pinned", default=None
)


def _unpinned() -> tuple[Callable[[str], str | None], Callable | None]:
    """(what tells a name's registry id as the files say now, what pins the registry where that
    is the registry): the shipped registry's names where the user has no registry file, else the
    registry, which checks the user's records first."""
    if not registry_names.user_registry_exists():
        return registry_names.shipped_canonical_id, None
    # pydantic: the records of the user's registry file are checked before a name is believed
    from xamm_data.machines.registry import canonical_id, pinned

    return canonical_id, pinned


def registry_id(name: str) -> str | None:
    """The machine registry's id for an id or alias (case-insensitive), else ``None``; the same
    answer as :func:`xamm_data.machines.registry.canonical_id`, without building the registry's
    records where every name is the shipped file's."""
    lookup = _PINNED.get()
    return (lookup or _unpinned()[0])(name)


@contextlib.contextmanager
def names_pinned():
    """Names looked up as the registry files say on entry, for everything inside (in this thread
    or task): a chunk of sources is read against one registry, without asking the file system
    again for each source."""
    lookup, pin_registry = _unpinned()
    with pin_registry() if pin_registry else contextlib.nullcontext():
        token = _PINNED.set(lookup)
        try:
            yield
        finally:
            _PINNED.reset(token)


def machine_id(name: str) -> str:
    """``"Quartz"`` -> ``"quartz"``; unknown names are lower-cased with other characters turned into
    ``-``.

    A registry alias that is more than another spelling of the id (``M1`` -> ``quartz``) is recorded
    for :func:`take_aliases`."""
    if _PATH_LIKE.search(name):
        raise ValueError(
            f"machine name {name!r} holds path or control characters; expected a name such as "
            "quartz or my-cluster (pass --machine NAME)"
        )
    known = registry_id(name.strip())
    if known:
        if re.sub(r"[^a-z0-9]", "", name.lower()) != re.sub(r"[^a-z0-9]", "", known):
            _RESOLVED[name.strip()] = known
        return known
    mid = re.sub(r"[^a-z0-9._-]+", "-", name.strip().lower()).strip("-._")
    mid = mid[:100].strip("-._")  # the one rule: 100 characters at most ('..' refused above)
    if not is_name(mid):
        raise ValueError(f"machine name {name!r} has no usable characters")
    _UNKNOWN[name.strip()] = mid
    return mid


def source_machine(name: str, path: Path, where: str) -> str:
    """:func:`machine_id` of a name a source states (its ``cluster``, a column, a path), refused
    as an :class:`IngestError` naming the file and where the name came from.

    Parameters:
        name: the name as written.
        path: the source file.
        where: where in it the name is (``"the cluster metadata"``).
    """
    try:
        return machine_id(name)
    except ValueError as e:
        raise IngestError(path, f"{where}: {e}") from None


def take_unknown() -> list[str]:
    """One note per name :func:`machine_id` met since the last call that no machine or alias of
    the registry knows (and forget them): such data is stored under the name as given."""
    if not _UNKNOWN:  # nearly every call: a reading names no new machine
        return []
    out = [
        f"machine {mid!r}"
        + (f" (from {name!r})" if name != mid else "")
        + " is not a known machine or alias (xamm machines list); stored under that name: "
        f"xamm machines add {mid} ... records its node"
        for name, mid in sorted(_UNKNOWN.items())
    ]
    _UNKNOWN.clear()
    return out


def take_aliases() -> dict[str, str]:
    """The aliases :func:`machine_id` resolved since the last call (and forget them)."""
    if not _RESOLVED:
        return {}
    out = dict(_RESOLVED)
    _RESOLVED.clear()
    return out


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
    """Parse and validate an ``xamm.toml``; errors name the file and the field. Its ``[node]``
    facts are checked here and recorded by :func:`record_node_facts` once the ingest has
    written."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    # RecursionError: arrays nested past the parser (a valid TOML file nests a few deep)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise IngestError(path, f"not valid TOML: {e}") from None
    # pydantic: a run directory's xamm.toml, checked only where one is found
    from xamm_ingest.run_config import checked_config

    try:
        cfg = checked_config(data)
        if cfg.machine:  # the registry's id, as every other name a source states
            cfg = cfg.model_copy(update={"machine": _config_machine(cfg.machine)})
    except ValueError as e:
        field, problem = e.args if len(e.args) == 2 else ("(file)", str(e))
        raise IngestError(
            path, f'field {field!r}: {problem}; expected e.g. machine = "quartz"'
        ) from None
    if cfg.node:
        # pydantic: a [node] table's facts are checked as the registry checks its own records
        from xamm_data.machines.registry import MachineFactsError, checked_facts

        if not cfg.machine:
            raise IngestError(path, "a [node] table needs machine = NAME: whose node it describes")
        try:  # every fact checked before any is recorded
            checked_facts(cfg.machine, where=path, **cfg.node)
        except MachineFactsError as e:
            raise IngestError(path, f"[node]: {str(e).removeprefix(f'{path}: ')}") from None
        _NODE_FACTS[str(path)] = (cfg.machine, dict(cfg.node))
    return cfg


def _config_machine(name: str) -> str:
    """:func:`machine_id` of an ``xamm.toml``'s machine; refused as (field, problem)."""
    try:
        return machine_id(name)
    except ValueError as e:
        raise ValueError("machine", f"Value error, {e}") from None


def forget_node_facts() -> None:
    """Forget the ``[node]`` facts read so far (an ingest starts afresh)."""
    _NODE_FACTS.clear()


def record_node_facts(update_machines: bool = False) -> list[str]:
    """Record the ``[node]`` facts of the ``xamm.toml`` files read since the last call, and forget
    them.

    A machine no registry knows yet takes its folder's facts into the user's registry
    (``$XAMM_HOME/machines.toml``). A shipped machine, or one the user already described, is
    never changed by a data folder unless ``update_machines``: its facts that differ are named in
    a note instead.

    Args:
        update_machines: let a data folder's ``[node]`` change a known machine's facts
            (``xamm-ingest ... --update-machine``).

    Returns:
        One note per machine, naming the file the facts came from and what was done.
    """
    if not _NODE_FACTS:
        return []
    # pydantic: facts are recorded as the registry's checked records
    from xamm_data.machines.registry import add_facts, canonical_id, user_file

    out = []
    for path, (machine, facts) in sorted(_NODE_FACTS.items()):
        known = canonical_id(machine)
        differ = _differing(known, facts) if known else facts
        if known and not differ:
            continue
        if known and not update_machines:
            out.append(f"{path}: [node] facts of {known} differ from the registry's "
                       f"({', '.join(differ)}); not recorded: a data folder never changes a known "
                       "machine (pass --update-machine to record them)")  # fmt: skip
            continue
        m = add_facts(machine, **{"source": f"xamm.toml ({path})", **facts})
        what = "updated" if known else "recorded"
        out.append(f"node facts of {m.id} from {path} {what} in {user_file()}")
    _NODE_FACTS.clear()
    return out


def _differing(machine: str, facts: dict) -> list[str]:
    """``field: registry -> file`` for each fact of ``facts`` the registry holds otherwise."""
    # pydantic: the registry's records, to compare the file's facts with
    from xamm_data.machines.registry import get

    m = get(machine)
    out = []
    for k, v in facts.items():
        have = getattr(m, k, None)
        if k == "aliases":
            if set(v) - set(have or ()):
                out.append(f"aliases {sorted(set(v) - set(have or ()))}")
        elif k != "source" and have != v:
            out.append(f"{k}: {have!r} -> {v!r}")
    return out
