"""A machine at a point of its history: ``MACHINE[:DEVICE]@STATE``.

``STATE`` is one of

* ``now``: the local store's newest version;
* ``accepted``: the store version the machine's newest passing acceptance certificate rests on
  (:mod:`~xamm_models.compare.certificates.records`);
* ``N`` (a number): version N of the machine's physics signature (``xamm amm history``), i.e. the
  store version it was built at;
* ``YYYY-MM-DD``: the store as it was at the end of that day (UTC).

Each resolves to a version of the store's ``benchmark_runs`` table (Delta time travel), so the
rows are exactly the ones that state held. :func:`drift_sides` turns two states into the runs
each side contributes: the older state's rows, and the rows the newer one added (by source
file hash), so that "now against accepted" compares the runs since the acceptance with the
accepted ones, never a mixture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

import polars as pl

from xamm_data.machines.targets import Target
from xamm_data.store.store import Store, as_store
from xamm_models.compare.certificates.evidence import sources_sha256
from xamm_models.compare.certificates.records import CertificateRegistry
from xamm_models.machines.signatures import SignatureRegistry

__all__ = ["State", "drift_sides", "is_state_ref", "parse_state_ref", "resolve", "split_by_date"]

_STATE = re.compile(r"^(?P<target>[A-Za-z0-9][A-Za-z0-9._-]*(:(cpu|gpu))?)@(?P<state>[^@]+)$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TABLE = "benchmark_runs"


@dataclass(frozen=True)
class State:
    """One machine's runs at one store version."""

    target: str  # machine:device
    state: str  # as written: now, accepted, 3, 2026-01-31
    version: int  # the store's benchmark_runs version
    rows: pl.DataFrame

    @property
    def label(self) -> str:
        """``dane:cpu@accepted`` (store version 4)."""
        return f"{self.target}@{self.state}"


def is_state_ref(text: str) -> bool:
    """Whether ``text`` names a machine at a state (``dane@now``) rather than a machine."""
    return bool(_STATE.match(text))


def parse_state_ref(text: str) -> tuple[str, str]:
    """``"dane:cpu@accepted"`` -> ``("dane:cpu", "accepted")``.

    Raises:
        ValueError: not ``MACHINE[:DEVICE]@STATE`` with a known kind of state.
    """
    m = _STATE.match(text)
    state = m["state"] if m else ""
    number = state.isdigit() and not state.startswith("0")  # @N exactly: versions start at 1
    if not m or not (state in ("now", "accepted") or number or _DATE.match(state)):
        raise ValueError(
            f"bad state {text!r}: expected MACHINE[:DEVICE]@STATE with STATE now, accepted, a "
            "signature version from 1 (3) or a date (2026-01-31), e.g. dane:cpu@accepted"
        )
    return m["target"], state


def _version_on(st: Store, day: str) -> int:
    end = datetime.combine(date.fromisoformat(day), time.max).replace(tzinfo=UTC)
    # the store's history gives local times without a zone: read them as this machine's
    versions = [
        v
        for v, ts in st.history(TABLE).select("version", "timestamp").iter_rows()
        if datetime.fromisoformat(ts).astimezone(UTC) <= end
    ]
    if not versions:
        raise ValueError(f"the store held no benchmark runs by the end of {day}")
    return max(versions)


def _version_of(st: Store, target: str, state: str, registry=None) -> int:
    if state == "now":
        v = st.version(TABLE)
        if v is None:
            raise ValueError(f"the store at {st.root} holds no benchmark runs")
        return v
    if _DATE.match(state):
        return _version_on(st, state)
    sig = (registry or SignatureRegistry.default()).get(target, int(state), kind="physics")
    if sig.data_version is None:
        raise ValueError(f"{sig.ref} records no store version; rebuild it with `xamm amm build`")
    return sig.data_version


def _accepted(text: str, target: str, st: Store, certificates=None) -> State:
    """The runs the newest passing certificate names (by their source hashes), read from the
    store version it records when that version holds exactly them, else from the newest."""
    t = Target.parse(target)
    certs = certificates or CertificateRegistry.default()
    cert = certs.accepted(t.machine, target if t.device else None)
    g = cert.ground()
    if g is None or not g.state_sources:
        raise ValueError(f"{t.machine}'s certificate {cert.number} names no runs: re-run xamm "
                         "accept")  # fmt: skip
    want, device = set(g.state_sources), Target.parse(cert.new).device
    newest = st.version(TABLE)
    got: set[str] = set()
    for v in dict.fromkeys(x for x in (g.data_version, newest) if x is not None and
                           newest is not None and x <= newest):  # fmt: skip
        if t.machine not in st.machines(TABLE, version=v):
            continue
        rows = st.read(TABLE, t.machine, version=v).filter(
            pl.col("source_sha256").is_in(pl.Series(sorted(want)).implode()),
            pl.col("device") == device,
        )
        got = set(rows.get_column("source_sha256").unique().to_list())
        if got == want:
            return State(cert.new, "accepted", v, rows)
    raise ValueError(
        f"{text}: certificate {cert.number} rests on {len(want)} run(s), hash "
        f"{g.state_sha256 or sources_sha256(want)}; the store at {st.root} holds {len(got)} of "
        f"them, hash {sources_sha256(got)}: ingest the missing runs, or compare in the store "
        "the certificate was issued from"
    )


def resolve(text: str, *, store=None, registry=None, certificates=None) -> State:
    """A machine's runs at a state.

    Args:
        text: ``MACHINE[:DEVICE]@STATE``.
        store: the local store (default ``$XAMM_HOME/store``).
        registry: the signature registry numbered states come from (default ``$XAMM_HOME``'s).
        certificates: the certificate registry ``@accepted`` comes from (default
            ``$XAMM_HOME``'s).

    Returns:
        The :class:`State`; a machine with runs on both devices must name one.

    Raises:
        ValueError: an unknown state, or no runs of the machine at that version.
    """
    target, state = parse_state_ref(text)
    st = as_store(store)
    if state == "accepted":
        return _accepted(text, target, st, certificates)
    version = _version_of(st, target, state, registry)
    t = Target.parse(target)
    if t.machine not in st.machines(TABLE, version=version):
        raise ValueError(
            f"{text}: the store at {st.root} holds no runs of {t.machine} at version {version}"
        )
    rows = st.read(TABLE, t.machine, version=version)
    devices = sorted(rows.get_column("device").drop_nulls().unique().to_list())
    if t.device is None:
        if len(devices) != 1:
            raise ValueError(f"{t.machine} has runs on {' and '.join(devices)}; name one")
        t = Target(t.machine, devices[0])
    rows = rows.filter(pl.col("device") == t.device)
    if rows.is_empty():
        raise ValueError(f"{text}: {t.machine} has no {t.device} runs at store version {version}")
    return State(str(t), state, version, rows)


def drift_sides(a: State, b: State) -> tuple[State, pl.DataFrame, State, pl.DataFrame]:
    """The older state's rows and the rows the newer state added.

    Args:
        a: a state.
        b: another state of the same target.

    Returns:
        (older state, its rows, newer state, the rows it added).

    Raises:
        ValueError: different targets, or no runs added between the two.
    """
    if a.target != b.target:
        raise ValueError(f"drift compares one target with itself, not {a.target} with {b.target}")
    sa, sb = (set(x.rows.get_column("source_sha256").unique().to_list()) for x in (a, b))
    # the older state is the one of the lower store version; at one version (an accepted state
    # read from the newest), the one whose runs the other holds
    older_a = a.version < b.version or (a.version == b.version and sa <= sb)
    old, new = (a, b) if older_a else (b, a)
    seen = old.rows.get_column("source_sha256").unique().implode()
    added = new.rows.filter(~pl.col("source_sha256").is_in(seen))
    if added.is_empty():
        raise ValueError(
            f"no runs of {new.target} were added between {old.label} (store version "
            f"{old.version}) and {new.label} (version {new.version}): nothing to compare"
        )
    return old, old.rows, new, added


def split_by_date(rows: pl.DataFrame, since: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A target's runs before ``since`` (a date or time, UTC unless it says) and from it on, by
    their ``run_date``.

    Raises:
        ValueError: rows without a run date, or no run on one side.
    """
    try:
        cut = datetime.fromisoformat(since)
    except ValueError:
        raise ValueError(
            f"--since takes a date or time, YYYY-MM-DD[THH:MM], not {since!r}"
        ) from None
    cut = cut.replace(tzinfo=UTC) if cut.tzinfo is None else cut
    undated = rows.filter(pl.col("run_date").is_null())
    if undated.height:
        first = undated.get_column("source_path")[0]
        raise ValueError(
            f"{undated.height} rows have no run date (first from {first}): --since needs every "
            "run dated; compare store states instead (MACHINE@now MACHINE@accepted)"
        )
    when = pl.col("run_date").dt.convert_time_zone("UTC")
    before, after = rows.filter(when < cut), rows.filter(when >= cut)
    if before.is_empty() or after.is_empty():
        side = "before" if before.is_empty() else "on or after"
        first, last = str(rows["run_date"].min()), str(rows["run_date"].max())
        raise ValueError(f"no run {side} {since} (runs from {first} to {last})")
    return before, after
