"""What the report shows, read from a centre's home: per machine in the store, each target's
signature versions (:func:`~xamm_models.compare.history.versions.history`) with their physics
figures and 90% intervals, the drift since the accepted state, every certificate that verifies and
every problem the chain check found; and, for a chosen profile, the predicted time per target.

Nothing here draws or writes: :mod:`.site` does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from xamm_data.identifiers import check_name
from xamm_data.machines.targets import Target
from xamm_data.plugins import load
from xamm_data.store.store import Store, as_store
from xamm_models.compare.certificates.records import Certificate, CertificateRegistry
from xamm_models.compare.history.drift import Drift, drift
from xamm_models.compare.history.states import State, drift_sides, resolve
from xamm_models.compare.history.versions import figure_intervals, history
from xamm_models.machines.signatures import SignatureRegistry
from xamm_models.predictors.composed import predict_profile
from xamm_models.predictors.kinds import load_model

__all__ = ["MachineView", "Prediction", "TargetView", "gather_machine", "gather_prediction"]

TABLE = "benchmark_runs"


@dataclass
class TargetView:
    """One device of a machine: its signature versions, their figures, and its drift.

    ``figures``: one row per version and figure (``version``, ``figure``, ``value``, ``lo``,
    ``hi``). ``drift``: the runs added since ``basis`` against its runs, or None with ``note``
    saying why there is none."""

    target: str
    history: pl.DataFrame | None = None
    figures: pl.DataFrame | None = None
    drift: Drift | None = None
    basis: str = ""
    note: str = ""

    @property
    def drift_state(self) -> str:
        """In a few words: ``3 kernels slower since certificate 2``, ``no drift since ...``,
        or why there is none."""
        if self.drift is None:
            return self.note
        k = self.drift.kernels.get_column("verdict")
        slower, faster = int((k == "slower").sum()), int((k == "faster").sum())
        if not slower and not faster:
            return f"no kernel moved since {self.basis}"
        parts = [f"{n} {w}" for n, w in ((slower, "slower"), (faster, "faster")) if n]
        return f"{' and '.join(parts)} of {k.len()} kernels since {self.basis}"


@dataclass
class MachineView:
    """A machine: its targets, its certificates that verify, and what the chain check found."""

    machine: str
    targets: list[TargetView] = field(default_factory=list)
    certificates: list[Certificate] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    note: str = ""
    # per certificate number: "no", "yes" (a signature file beside it), or "yes, by the key
    # given" (checked against the centre's public key)
    signed: dict[int, str] = field(default_factory=dict)

    @property
    def newest(self) -> Certificate | None:
        """The newest certificate that verifies (None before the first)."""
        return self.certificates[-1] if self.certificates else None


@dataclass
class Prediction:
    """A profile's predicted time per target (``programs``) and what the prediction assumed."""

    profile: str
    source: str
    programs: pl.DataFrame
    notes: list[str] = field(default_factory=list)


def _devices(st: Store, machine: str) -> list[str]:
    if st.version(TABLE) is None or not st.has(TABLE, machine):
        return []  # certificates only (pulled from a Hub, say)
    rows = st.read(TABLE, machine, columns=["device"])
    return sorted(rows.get_column("device").drop_nulls().unique().to_list())


def _figures(target: str, versions: list[int], st: Store, reg) -> pl.DataFrame:
    """Every signature version's physics figures with their 90% bootstrap intervals."""
    out = []
    for v in versions:
        state = resolve(f"{target}@{v}", store=st, registry=reg)
        f = figure_intervals(target, state.rows)
        out.append(f.with_columns(pl.lit(v, pl.Int64).alias("version")))
    return pl.concat(out).select("version", "figure", "value", "lo", "hi")


def _sources(state: State) -> set[str]:
    return set(state.rows.get_column("source_sha256").unique().to_list())


def _drift(target: str, versions: list[int], st: Store, reg, certs) -> tuple:
    """(drift, basis, note): the runs added since the accepted state against it; for a target
    never accepted, since its newest signature version that has runs added after it."""
    try:
        now = resolve(f"{target}@now", store=st, registry=reg)
    except ValueError as e:
        return None, "", str(e)
    try:
        accepted = certs.accepted(Target.parse(target).machine, target)
    except ValueError:  # none passed yet
        accepted = None
    bases: list[tuple[str, str]] = []
    if accepted is not None:
        bases.append(("accepted", f"the acceptance (certificate {accepted.number})"))
    else:
        bases += [(str(v), f"signature version {v} (never accepted)") for v in reversed(versions)]
    for state, said in bases:
        try:
            then: State = resolve(f"{target}@{state}", store=st, registry=reg, certificates=certs)
        except ValueError as e:
            if state == "accepted":
                return None, said, str(e)
            continue
        if not _sources(now) - _sources(then):  # the state holds every run there is
            if state == "accepted":
                return None, said, f"no runs added since {said}"
            continue
        old, rows_old, new, added = drift_sides(then, now)
        labels = (f"{old.label} (store v{old.version})", f"{new.label} (runs added since)")
        return drift(rows_old, added, target=target, labels=labels), said, ""
    if accepted is None and not versions:
        return None, "", "never accepted and no signature version to compare against"
    return None, "", "no runs added since the newest signature version; never accepted"


def gather_machine(
    machine: str,
    *,
    store=None,
    registry: SignatureRegistry | None = None,
    certificates: CertificateRegistry | None = None,
    public_key=None,
    progress: Callable[[str], None] = lambda m: None,
) -> MachineView:
    """What the report shows of one machine.

    Args:
        machine: a machine with runs in the store.
        store: the local store (default ``$XAMM_HOME/store``).
        registry: the signature registry (default ``$XAMM_HOME``'s).
        certificates: the certificate registry (default ``$XAMM_HOME/certificates``).
        public_key: the centre's Ed25519 public key: each certificate must be signed by it (a
            certificate that is not is a problem, and is not shown).
        progress: called with a line per step.

    Returns:
        The machine's view; a machine without a signature or certificate says so in ``note``.
    """
    check_name(machine)  # it becomes a file name of the site
    st, reg = as_store(store), registry or SignatureRegistry.default()
    certs = certificates or CertificateRegistry.default()
    view = MachineView(machine)
    report = certs.verify(machine, public_key=public_key)
    view.problems = [str(p) for p in report.problems]
    view.certificates = [c for c in certs.all(machine) if c.number in report.good]
    by_key = "yes, by the key given" if public_key is not None else "yes"
    view.signed = {
        n: by_key if certs.signature_path(machine, n).is_file() else "no" for n in report.good
    }
    try:
        hist = history(machine, registry=reg, store=st, certificates=certs)
    except (KeyError, FileNotFoundError):  # no signature, or no runs to read its history from
        hist = None
        view.note = (
            f"no physics signature yet: `xamm amm build {machine} --kind physics` "
            "builds one from its runs"
        )
    devices = _devices(st, machine)
    if not devices:
        view.note = f"no runs of {machine} in the store: its certificates only"
    for device in devices:
        target = f"{machine}:{device}"
        progress(f"{target}: signature versions, drift")
        tv = TargetView(target)
        versions: list[int] = []
        if hist is not None and "target" in hist.columns:
            tv.history = hist.filter(pl.col("target") == target)
            versions = tv.history.get_column("version").to_list()
        if versions:
            tv.figures = _figures(target, versions, st, reg)
        tv.drift, tv.basis, tv.note = _drift(target, versions, st, reg, certs)
        view.targets.append(tv)
    return view


def gather_prediction(
    profile: str | Path,
    *,
    source: str | None = None,
    model: str = "xamm/default",
    store=None,
) -> Prediction:
    """A profile's predicted time on every target with a signature (as ``xamm predict``).

    Args:
        profile: a profile any installed format reads (a ``.cali`` file, an HPCToolkit database,
            a region table).
        source: where it was measured (default: the profile's own machine).
        model: the predictor (default: the embedded default).
        store: the store whose machines are targets too.

    Returns:
        The prediction (a profile that cannot be read or predicted raises, naming it).
    """
    read = load("xamm.profiles", "read", "reading application profiles")
    regions = read(profile)
    pred = predict_profile(regions, load_model(model), source=source, store=store)
    return Prediction(Path(profile).name, pred.source, pred.programs, list(pred.notes))
