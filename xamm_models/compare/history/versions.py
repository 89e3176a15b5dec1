"""A machine's history: its physics signature versions, the runs each rests on, what changed, and
the diff of two versions (``xamm amm history``, ``xamm amm diff``).

Every physics signature records the store version its runs were read at
(:class:`~xamm_models.machines.signatures.Signature`), so a version's runs are read back exactly
(Delta time travel). A diff sets two versions' physics figures side by side, each with a 90%
bootstrap interval over its runs (source files resampled, the signature measured again), and
names the kernels that moved between them with :func:`~xamm_models.compare.history.drift.drift`
(the runs the later version added against the earlier version's).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data.machines.targets import Target
from xamm_data.paths import xamm_home
from xamm_data.store.store import as_store
from xamm_models.achieved import launches_kernels, sample_arrays
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.compare.certificates.records import CertificateRegistry
from xamm_models.compare.history.drift import Drift, drift
from xamm_models.compare.history.states import State, drift_sides, resolve
from xamm_models.compare.runs.figures import physics_table
from xamm_models.compare.runs.targets import describe_runs
from xamm_models.machines.physics import physics_signature, signature_from_arrays
from xamm_models.machines.signatures import SignatureRegistry

__all__ = [
    "SignatureDiff",
    "figure_intervals",
    "histories_dir",
    "history",
    "pulled_history",
    "signature_diff",
]

DRAWS = 200
LEVEL = 0.90
TABLE = "benchmark_runs"


def _figures(target: str, rows: pl.DataFrame) -> pl.DataFrame:
    samples = samples_from_runs(rows)
    return physics_table({target: physics_signature(target, samples)})


def _draw_figures(
    target: str, rows: pl.DataFrame, picks: list[list[str]], figures: int
) -> np.ndarray:
    """The ``figures`` figures of each bootstrap draw (a list of sources, a source as often as it
    was picked), one row per draw: every draw's samples are made in one pass over a frame holding
    each draw's rows (:func:`~xamm_models.benchmark.dataset.samples_from_runs` split by draw)."""
    draws = pl.DataFrame(
        {
            "_draw": np.repeat(np.arange(len(picks)), [len(p) for p in picks]),
            "source_sha256": [s for p in picks for s in p],
        },
        schema={"_draw": pl.Int64, "source_sha256": rows.schema["source_sha256"]},
    )
    drawn = samples_from_runs(draws.join(rows, on="source_sha256", how="inner"), by=("_draw",))
    # samples come sorted by draw: each draw's rows are one slice of the arrays
    ids = drawn.get_column("_draw").to_numpy()
    arrays = sample_arrays(drawn)
    sigs = {}
    for (d,), part in drawn.group_by(["_draw"], maintain_order=True):
        rows_d = slice(np.searchsorted(ids, d), np.searchsorted(ids, d, side="right"))
        sigs[str(d)] = signature_from_arrays(
            target, arrays[rows_d], launches=launches_kernels(part)
        )
    table = physics_table(sigs) if sigs else None
    out = np.full((len(picks), figures), np.nan)
    for d in range(len(picks)):
        if table is not None and str(d) in table.columns:
            out[d] = table.get_column(str(d)).to_numpy().astype(float)
    return out


def figure_intervals(target: str, rows: pl.DataFrame, *, seed: int = 0) -> pl.DataFrame:
    """The physics figures of a target's runs with a 90% bootstrap interval over its runs.

    Args:
        target: ``machine:device``.
        rows: its ``benchmark_runs`` rows.
        seed: the bootstrap's seed.

    Returns:
        ``figure``, ``value``, ``lo``, ``hi`` (null bounds with a single run: no spread to show).
    """
    base = _figures(target, rows)
    sources = sorted(set(rows.get_column("source_sha256").to_list()))
    value = base.get_column(target).to_numpy().astype(float)
    lo = hi = np.full(len(value), np.nan)
    if len(sources) > 1:
        rng = np.random.default_rng(seed)
        picks = [
            rng.choice(sources, size=len(sources), replace=True).tolist() for _ in range(DRAWS)
        ]
        a = (1 - LEVEL) / 2
        with warnings.catch_warnings():  # a figure no run measured stays null
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = np.nanquantile(
                _draw_figures(target, rows, picks, base.height), [a, 1 - a], axis=0
            )
    return pl.DataFrame(
        {"figure": base.get_column("figure"), "value": value, "lo": lo, "hi": hi}
    ).with_columns(pl.col("value", "lo", "hi").fill_nan(None))


def _runs_summary(rows: pl.DataFrame) -> dict:
    """:func:`~xamm_models.compare.runs.targets.describe_runs`, its lists joined for a table."""
    d = describe_runs(rows)
    d.pop("rows")
    return {k: ", ".join(v) if isinstance(v, list) else v for k, v in d.items()}


def _change(prev: dict | None, now: dict, rows_prev, rows_now) -> tuple[str, str]:
    """What changed since the previous version: in full (``changes``: the old and new compilers,
    flags, ...) and in short (``changed``: which of them changed, for a terminal)."""
    if prev is None:
        return "first version", "first version"
    full, short = [], []
    old = set(rows_prev.get_column("source_sha256").unique().to_list())
    new = set(rows_now.get_column("source_sha256").unique().to_list())
    for sign, n in (("+", len(new - old)), ("-", len(old - new))):
        if n:
            full.append(f"{sign}{n} runs")
            short.append(f"{sign}{n} runs")
    for key in ("compilers", "flags", "variants", "configurations"):
        if prev[key] != now[key]:
            full.append(f"{key}: {prev[key]} -> {now[key]}")
            short.append(f"new {key}")
    if prev["bandwidth_gbs"] and now["bandwidth_gbs"]:
        ratio = f"x{now['bandwidth_gbs'] / prev['bandwidth_gbs']:.3g}"
        full.append(f"bandwidth {ratio}")
        short.append(f"GB/s {ratio}")
    return "; ".join(full) or "same runs", "; ".join(short) or "same runs"


def histories_dir() -> Path:
    """Where histories pulled from the Hub are kept: ``$XAMM_HOME/histories``."""
    return xamm_home() / "histories"


def pulled_history(machine: str) -> pl.DataFrame | None:
    """A machine's history as pulled from the Hub (None when none was pulled)."""
    p = histories_dir() / f"{machine}.json"
    return pl.DataFrame(json.loads(p.read_text())) if p.is_file() else None


def _version_row(s, rows: pl.DataFrame, accepted: dict) -> dict:
    """One signature version's row of the history (without ``changes``)."""
    cert = accepted.get(f"{s.target}@{s.version}")
    return {
        "target": s.target,
        "version": s.version,
        "created": s.created,
        "data_version": s.data_version,
        "data_sha256": s.data_sha256[:12],
        "samples": s.n_samples,
        "kernels": len(s.kernels),
        **_runs_summary(rows),
        "bandwidth_gbs": s.physics.sustained_bandwidth / 1e9 if s.physics else None,
        "accepted": f"certificate {cert.number} ({cert.verdict})" if cert else None,
    }


def history(machine: str, *, registry=None, store=None, certificates=None) -> pl.DataFrame:
    """Every physics signature version of a machine, the runs it rests on and what changed.

    Args:
        machine: ``machine`` or ``machine:device``.
        registry: the signature registry (default ``$XAMM_HOME``'s).
        store: the local store the versions' runs are read from (default ``$XAMM_HOME/store``).
        certificates: the certificate registry (default ``$XAMM_HOME/certificates``).

    Returns:
        One row per device and version, oldest first; what changed since the version before in
        full (``changes``) and in short (``changed``).

    Raises:
        KeyError: no physics signature of the machine.
    """
    reg = registry or SignatureRegistry.default()
    t = Target.parse(machine)
    sigs = [s for s in reg.all() if s.machine == t.machine and s.kind == "physics"]
    sigs = [s for s in sigs if t.device in (None, s.device)]
    st = as_store(store)
    if not sigs or not st.has(TABLE, t.machine):
        pulled = pulled_history(t.machine)
        if pulled is not None:
            return pulled.filter(pl.col("target").str.starts_with(machine))
    if not sigs:
        raise KeyError(f"no physics signature of {machine} in {reg.root}: build one with "
                       f"`xamm amm build {t.machine} --kind physics`")  # fmt: skip
    if not st.has(TABLE, t.machine):
        raise FileNotFoundError(
            f"the runs of {t.machine} are not in the store at {st.root}, and no history of it "
            "was pulled (xamm amm pull --repo ...)"
        )
    certs = CertificateRegistry.default() if certificates is None else certificates
    # a certificate names the signature version it rests on: never matched by a bare number
    accepted = {g.signature: c for c in certs.all(t.machine) if (g := c.ground()) and g.signature}
    out: list[dict] = []
    prev: dict[str, dict] = {}
    prev_rows: dict[str, pl.DataFrame] = {}
    for s in sigs:
        rows = st.read(TABLE, s.machine, version=s.data_version)
        rows = rows.filter(pl.col("device") == s.device)
        row = _version_row(s, rows, accepted)
        row["changes"], row["changed"] = _change(
            prev.get(s.target), row, prev_rows.get(s.target), rows
        )
        prev[s.target], prev_rows[s.target] = row, rows
        out.append(row)
    return pl.DataFrame(out)


@dataclass
class SignatureDiff:
    """Two versions of a target's signature side by side."""

    older: State
    newer: State
    figures: pl.DataFrame
    drift: Drift | None
    note: str = ""
    # the kernels one version's runs measured and the other's did not, by version label
    kernels_only: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {
            "older": self.older.label,
            "newer": self.newer.label,
            "store_versions": [self.older.version, self.newer.version],
            "figures": self.figures.to_dicts(),
            "drift": self.drift.to_dict() if self.drift else None,
            "note": self.note,
            "kernels_only": self.kernels_only,
        }

    def kernels_said(self) -> str:
        """One line per version that ran kernels the other did not (empty when they ran the
        same)."""
        return "\n".join(
            f"kernels only in {label}'s runs ({len(ks)}): {', '.join(ks[:8])}"
            + (", ..." if len(ks) > 8 else "")
            for label, ks in self.kernels_only.items()
            if ks
        )


def _kernels_only(old: State, new: State) -> dict[str, list[str]]:
    a, b = (set(s.rows.get_column("kernel").unique().to_list()) for s in (old, new))
    return {old.label: sorted(a - b), new.label: sorted(b - a)}


def signature_diff(a: str, b: str, *, registry=None, store=None) -> SignatureDiff:
    """Diff two signature versions of one target (``dane:cpu@1``, ``dane:cpu@2``).

    Args:
        a: one version.
        b: another version of the same target.
        registry: the signature registry (default ``$XAMM_HOME``'s).
        store: the local store (default ``$XAMM_HOME/store``).

    Returns:
        The figures of both with their intervals, ``moved`` where the intervals do not overlap,
        and the drift of the runs the newer version added (None when it added none).
    """
    sa, sb = resolve(a, store=store, registry=registry), resolve(b, store=store, registry=registry)
    note, d = "", None
    try:
        old, old_rows, new, added = drift_sides(sa, sb)
        d = drift(old_rows, added, target=old.target, labels=(old.label, new.label))
    except ValueError as e:  # no runs added: the figures still compare
        old, new = (sa, sb) if sa.version <= sb.version else (sb, sa)
        note = str(e)
    fa = figure_intervals(old.target, old.rows).rename(
        {"value": "older", "lo": "older_lo", "hi": "older_hi"}
    )
    fb = figure_intervals(new.target, new.rows).rename(
        {"value": "newer", "lo": "newer_lo", "hi": "newer_hi"}
    )
    f = fa.join(fb, on="figure", how="left", maintain_order="left").with_columns(
        # a figure measured as zero (no launch overhead) has no ratio
        pl.when(pl.col("older") > 0).then(pl.col("newer") / pl.col("older")).alias("ratio"),
        ((pl.col("newer_lo") > pl.col("older_hi")) | (pl.col("newer_hi") < pl.col("older_lo")))
        .fill_null(False)
        .alias("moved"),
    )
    return SignatureDiff(old, new, f, d, note, _kernels_only(old, new))
