"""Physics signatures built from a store's benchmark runs (``xamm amm build --kind physics``).

numpy and polars only: a machine's physics signature is measured on the core install, without the
models extra that attention signatures and the zoo's other artefacts need.
"""

from __future__ import annotations

import polars as pl

from xamm_data.store.store import as_store
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.machines.signatures import Signature, SignatureRegistry, physics_record

__all__ = ["build_physics_signatures"]


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
    samples = samples_from_runs(runs.filter(pl.col("machine").is_in(machines or have)))
    return [
        registry.add(physics_record(t, part).model_copy(update={"data_version": data_version}))
        for (t,), part in samples.group_by(["target"], maintain_order=True)
    ]
