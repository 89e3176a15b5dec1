"""Physics signatures in the signature registry: built by ``xamm amm build --kind physics``.

A physics signature is measured from a target's own RAJAPerf runs (:mod:`xamm_models.physics`); the registry
versions it like an attention AMM: the same samples and method give the same version, anything else a new one.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_data._version import __version__
from xamm_data.hashing import frame_sha256
from xamm_data.store import as_store
from xamm_data.targets import Target
from xamm_models import xplat
from xamm_models.physics import SIMILARITY_WS, PhysicsSignature, physics_signature
from xamm_models.signatures import Signature, SignatureRegistry

METHOD = "physics-1"  # bump when physics_signature's statistics change: old versions stay as they were


def samples_from_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """One benchmark sample per target, kernel and size (the fastest variant and tuning), as ``xplat`` builds them;
    a frame that already is samples passes through."""
    if {"target", "app", "time_per_rep_s"} <= set(runs.columns):
        return runs
    if "release" not in runs.columns:  # xplat's declared configurations name it; raw runs carry the suite version
        runs = runs.with_columns(pl.col("suite_version").alias("release"))
    return xplat.samples(runs.with_columns(Target.expr().alias("target")))[0]


def physics_record(target: str, samples: pl.DataFrame) -> Signature:
    """The registry record of ``target``'s physics signature, from its benchmark samples."""
    sig: PhysicsSignature = physics_signature(target, samples)
    t = Target.parse(target)
    keep = samples.select("app", "size_bucket", "time_per_rep_s", "bytes_per_rep", "flops_per_rep", "kernels_per_rep")
    return Signature(machine=t.machine, device=t.device, kind="physics",
                     vector=[float(x) for x in np.ravel(sig.vector(SIMILARITY_WS)[:, 0])] + [
                         float(np.log10(sig.flop_rate)), float(np.log10(sig.overhead_s))],
                     physics=sig, aggregation="physics", normalise="none", embedder_id="physics",
                     embedder_revision=METHOD, data_sha256=frame_sha256(keep.sort("app", "size_bucket")),
                     kernels=sorted(set(samples.get_column("app"))), coverage=1.0, n_samples=samples.height,
                     xamm_version=__version__)


def build_physics_signatures(*, store, registry: SignatureRegistry, machines: list[str] | None = None) -> list[Signature]:
    """Build (or find) the physics signatures of ``machines`` (default: every machine with benchmark runs)."""
    st = as_store(store)
    data_version = st.version("benchmark_runs")
    runs = st.scan("benchmark_runs", version=data_version).collect()
    have = sorted(runs.get_column("machine").unique().to_list()) if runs.height else []
    missing = [m for m in (machines or []) if m not in have]
    if missing:
        raise FileNotFoundError(f"no benchmark_runs for {', '.join(missing)} in the store {st.root}; ingest their RAJAPerf "
                                f"outputs with `xamm-ingest rajaperf DIR --machine NAME` (the store has: {', '.join(have) or 'nothing'})")
    samples = samples_from_runs(runs.filter(pl.col("machine").is_in(machines or have)))
    return [registry.add(physics_record(t, part).model_copy(update={"data_version": data_version}))
            for (t,), part in samples.group_by(["target"], maintain_order=True)]
