"""What a machine is: physics signatures measured from its own benchmark runs, Algorithm 1's
attention AMMs, and the versioned signature registry and its Hub repo. Never imports the data set,
the predictors or the harness."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "PhysicsSignature": "xamm_models.machines.physics",
    "physics_signature": "xamm_models.machines.physics",
    "physics_signatures": "xamm_models.machines.physics",
    "modelled_time": "xamm_models.machines.physics",
    "distance": "xamm_models.machines.physics",
    "most_similar": "xamm_models.machines.physics",
    "kernel_distance": "xamm_models.machines.similarity",
    "nearest": "xamm_models.machines.similarity",
    "slowdowns": "xamm_models.machines.efficiency",
    "algorithm1": "xamm_models.machines.attention",
    "build_signatures": "xamm_models.machines.attention",
    "signature_from_runs": "xamm_models.machines.attention",
    "make_signature": "xamm_models.machines.attention",
    "benchmark_samples": "xamm_models.machines.samples",
    "align_kernels": "xamm_models.machines.samples",
    "Signature": "xamm_models.machines.signatures",
    "SignatureRegistry": "xamm_models.machines.signatures",
    "lookup": "xamm_models.machines.signatures",
    "physics_record": "xamm_models.machines.signatures",
    "push_signatures": "xamm_models.machines.hub",
    "pull_signatures": "xamm_models.machines.hub",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
