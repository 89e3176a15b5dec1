"""Physics signatures built from a store's benchmark runs (``xamm amm build --kind physics``).

numpy and polars only: a machine's physics signature is measured on the core install, without the
models extra that attention signatures and the zoo's other artefacts need.
"""

from __future__ import annotations

import polars as pl

from xamm_data.machines import registry as machine_registry
from xamm_data.machines.targets import Target
from xamm_data.store.store import as_store
from xamm_models.benchmark.dataset import in_config, samples_from_runs
from xamm_models.machines.signatures import (
    Signature,
    SignatureRegistry,
    physics_record,
    specification_record,
)
from xamm_models.machines.specifications import Calibration, shipped_calibration
from xamm_models.predictors.configurations import STORE, select_runs

__all__ = ["build_physics_signatures", "build_specification_signatures", "signature_runs"]


def signature_runs(runs: pl.DataFrame) -> dict[str, tuple[pl.DataFrame, str]]:
    """Per target, the ``benchmark_runs`` rows its physics signature is measured from and what
    they are: a target with runs in its declared configuration (``xplat-rajaperf``'s, what the
    shipped predictor trains on and names) takes those; any other its sequential runs on a CPU
    (else the CPU family that used the most of its node), its GPU runs on a GPU, in its fullest
    configuration and of one variant kind (``Base`` where it ran several), as ``xamm predict``
    measures a target from a store. A full RAJAPerf run never mixes its OpenMP node with its
    sequential core in one signature.

    Args:
        runs: ``benchmark_runs`` rows.

    Returns:
        Target -> ``(rows, configuration)``.
    """
    inside, _ = in_config(runs)
    out: dict[str, tuple[pl.DataFrame, str]] = {}
    for (t,), part in inside.group_by(["target"], maintain_order=True):
        variants = ", ".join(sorted(set(part.get_column("variant"))))
        shapes = sorted(set(zip(part.get_column("ranks"), part.get_column("threads"), strict=True)))
        ranks = "; ".join(f"{r} rank(s), {th or 1} thread(s)" for r, th in shapes)
        out[t] = (part.drop("target"), f"declared configuration: {variants}, {ranks}")
    rest = runs.filter(~Target.expr().is_in(list(out)))
    for t, tr in select_runs(rest, STORE, "sequential").items():
        if tr.rows is None or tr.rows.is_empty():
            continue
        variants = ", ".join(sorted(set(tr.rows.get_column("variant"))))
        shape = tr.run.shape() if tr.run is not None else ""
        text = f"{tr.family}: {variants}" + (f", {shape}" if shape else "")
        out[t] = (tr.rows, text + (f" ({tr.note})" if tr.note else ""))
    return out


def build_physics_signatures(
    *, store, registry: SignatureRegistry, machines: list[str] | None = None
) -> list[Signature]:
    """Build (or find) the physics signatures of machines from their benchmark runs.

    Args:
        store: the store holding ``benchmark_runs``.
        registry: where signatures are written.
        machines: machine ids (default: every machine with benchmark runs).

    Returns:
        The signatures, one per machine and device.
    """
    st = as_store(store)
    data_version = st.version("benchmark_runs")
    runs = st.scan("benchmark_runs", version=data_version).collect()
    have = sorted(runs.get_column("machine").unique().to_list()) if runs.height else []
    missing = [m for m in (machines or []) if m not in have]
    if missing:
        raise FileNotFoundError(
            f"no benchmark_runs for {', '.join(missing)} in the store "
            f"{st.root}; ingest their RAJAPerf "
            "outputs with `xamm-ingest rajaperf DIR --machine NAME` (the "
            f"store has: {', '.join(have) or 'nothing'})"
        )
    chosen = signature_runs(runs.filter(pl.col("machine").is_in(machines or have)))
    out = []
    for t, (rows, configuration) in chosen.items():
        samples = samples_from_runs(rows)
        if samples.is_empty():
            continue
        update = {"data_version": data_version, "configuration": configuration[:500]}
        out.append(registry.add(physics_record(t, samples).model_copy(update=update)))
    return out


def build_specification_signatures(
    *,
    registry: SignatureRegistry,
    machines: list[str] | None = None,
    calibration: Calibration | None = None,
) -> list[Signature]:
    """Signatures from specifications for registry machines that have no physics signature from
    runs in ``registry``: a measured signature always supersedes one from specifications (built
    after it, it is the newer version; built before, none from specifications is added).

    Args:
        registry: where signatures are written.
        machines: machine ids (default: every registry machine with peaks recorded).
        calibration: the efficiencies (None: the shipped ones).

    Returns:
        The signatures written or found, one per machine and device.
    """
    cal = calibration or shipped_calibration()
    chosen = [machine_registry.get(m) for m in machines] if machines else machine_registry.MACHINES
    out = []
    for m in chosen:
        for d in m.devices:
            have = registry.versions(m.id, d, "physics")
            latest = registry.get(f"{m.id}:{d}", kind="physics") if have else None
            if latest is not None and latest.basis == "runs":
                continue
            rec = specification_record(f"{m.id}:{d}", cal)
            if rec is not None:
                out.append(registry.add(rec))
    return out
