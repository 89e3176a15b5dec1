"""Abstract Machine Models: Algorithm 1 of the xAMM paper, and building versioned signatures.

Algorithm 1, given the embeddings E (N samples x d) of one machine's benchmark samples:

1. aggregate over samples, one of
   * ``mean``:      AMM_k = (1/N) sum_i E_ik
   * ``l2``:        AMM_k = sqrt(sum_i E_ik^2)   (the column-wise L2 norm: the paper's
                    ``||e||_2 = sqrt(sum_k e_k^2)`` read per embedding feature, so the AMM keeps d
                    components; the per-sample reading would give one scalar per sample, not a
                    vector)
   * ``variance``:  AMM_k = (1/N) sum_i (E_ik - mu_k)^2
2. adjust:     AMM = ReLU(AMM) + 0.01 * ReLU(-AMM)
3. log:        AMM = log(1 + AMM)
4. normalise against the maximum. The printed step reads "AMM = AMM max(AMM)" (the operator is
   lost) and the prose says "scales ... relative to the maximum value by subtracting it". xamm's
   default is ``divide`` (AMM / max(AMM)): it is what "scale relative to the maximum" and
   "Normalize" mean, it keeps the adjusted, non-negative values in [0, 1], and it removes the scale
   that differs across machines with different sample counts (step 1, ``l2``). ``subtract``
   (AMM - max(AMM), values <= 0) is the prose's reading; ``none`` skips the step.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data._version import __version__
from xamm_data.hashing import frame_sha256
from xamm_data.machines.targets import Target
from xamm_data.store.store import as_store
from xamm_models.machines.samples import align_kernels, benchmark_samples
from xamm_models.machines.signatures import Signature, SignatureRegistry

AGGREGATIONS = ("mean", "l2", "variance")
NORMALISATIONS = ("divide", "subtract", "none")


def aggregate(E: np.ndarray, option: str) -> np.ndarray:
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or len(E) == 0:
        raise ValueError(f"expected embeddings of shape (N >= 1, d), got {E.shape}")
    if option == "mean":
        return E.mean(axis=0)
    if option == "l2":
        return np.sqrt((E**2).sum(axis=0))
    if option == "variance":
        return ((E - E.mean(axis=0)) ** 2).mean(axis=0)
    raise ValueError(f"unknown aggregation {option!r}; expected one of {AGGREGATIONS}")


def algorithm1(E: np.ndarray, option: str = "l2", normalise: str = "divide") -> np.ndarray:
    """The AMM vector of one machine from its sample embeddings (Algorithm 1).

    Args:
        E: the embeddings, one row per benchmark sample.
        option: the aggregation over samples (``mean``, ``l2``, ``variance``).
        normalise: against the maximum: ``divide``, ``subtract`` or ``none``.

    Returns:
        The AMM, one component per embedding dimension.
    """
    if normalise not in NORMALISATIONS:
        raise ValueError(f"unknown normalisation {normalise!r}; expected one of {NORMALISATIONS}")
    a = aggregate(E, option)
    a = np.maximum(a, 0) + 0.01 * np.maximum(-a, 0)
    a = np.log1p(a)
    mx = a.max()
    if normalise == "divide" and mx > 0:
        a = a / mx
    elif normalise == "subtract":
        a = a - mx
    return a


def embedder_revision(path: str | Path) -> str:
    """Content hash of a saved embedder's tensors (names and values) and config: its revision.

    Not the file's hash: the safetensors header lists shared-tensor aliases in an order that
    changes between processes, so equal weights can give different bytes.
    """
    from safetensors.numpy import load_file  # models extra, imported on use

    h = hashlib.sha256((Path(path) / "config.json").read_bytes())
    tensors = load_file(str(Path(path) / "model.safetensors"))
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(np.ascontiguousarray(tensors[name]).tobytes())
    return h.hexdigest()[:16]


def _shared_embedder(
    runs: pl.DataFrame,
    embedder,
    embedder_name: str,
    alignment: str,
    epochs: int,
    seed: int,
    embedders_dir: Path,
):
    """(embedder, kernels, id, revision): the given one, or one trained on every machine's samples
    and saved under ``embedders_dir`` named by its content hash."""
    from xamm_models.embedders import create_embedder, load_embedder  # imports torch: loaded on use

    if embedder is not None:
        emb = load_embedder(str(embedder))
        return (
            emb,
            emb.feature_names,
            str(embedder),
            (embedder_revision(embedder) if Path(embedder).is_dir() else "hub"),
        )
    kernels = align_kernels(runs, alignment)
    emb = create_embedder(embedder_name, n_features=len(kernels), feature_names=kernels, seed=seed)
    emb.fit(benchmark_samples(runs, kernels), epochs=epochs)
    embedders_dir.mkdir(parents=True, exist_ok=True)
    # unique per process
    tmp = Path(tempfile.mkdtemp(prefix=f".{embedder_name}-", dir=embedders_dir))
    emb.save_pretrained(tmp)
    rev = embedder_revision(tmp)
    final = embedders_dir / f"{embedder_name}-{rev}"
    if final.exists():
        shutil.rmtree(tmp)
    else:
        tmp.rename(final)
    return emb, kernels, f"{embedder_name}.rajaperf", rev


def _wanted_machines(runs: pl.DataFrame, machines: list[str] | None, root) -> list[str]:
    """The machines to build signatures of (default: every machine with runs); each must have
    runs in the store at ``root``."""
    have = sorted(runs.get_column("machine").unique().to_list()) if runs.height else []
    wanted = machines or have
    missing = [m for m in wanted if m not in have]
    if missing:
        raise FileNotFoundError(
            f"no benchmark_runs for {', '.join(missing)} in the store "
            f"{root}; ingest their RAJAPerf outputs with "
            "`xamm-ingest rajaperf DIR --machine NAME` "
            f"(the store has: {', '.join(have) or 'nothing'})"
        )
    return wanted


def build_signatures(
    *,
    store,
    registry: SignatureRegistry,
    machines: list[str] | None = None,
    embedder: str | Path | None = None,
    embedder_name: str = "attention",
    aggregation: str = "l2",
    normalise: str = "divide",
    alignment: str = "intersection",
    epochs: int = 200,
    seed: int = 0,
):
    """Build (or find) the signatures of machines from the store's benchmark data.

    Without ``embedder``, an ``embedder_name`` embedder is trained self-supervised on the benchmark
    samples of every machine in ``store`` (the AMMs of one registry must share one embedder), saved
    under the registry's ``embedders_dir`` and named by its content hash.

    Args:
        store: the store holding ``benchmark_runs``.
        registry: where signatures are written.
        machines: machine ids (default: every machine with benchmark data).
        embedder: a saved embedder folder or Hub repo to use instead.
        embedder_name: the kind of embedder to train.
        aggregation: Algorithm 1's aggregation.
        normalise: Algorithm 1's normalisation.
        alignment: the kernels used as features: ``intersection`` or ``union``.
        epochs: the embedder's epochs.
        seed: the seed.

    Returns:
        The signatures, one per machine and device.
    """
    st = as_store(store)
    reg = registry
    data_version = st.version("benchmark_runs")
    runs = st.scan("benchmark_runs", version=data_version).collect()
    wanted = _wanted_machines(runs, machines, st.root)
    emb, kernels, emb_id, emb_rev = _shared_embedder(
        runs, embedder, embedder_name, alignment, epochs, seed, reg.embedders_dir
    )
    samples = benchmark_samples(runs.filter(pl.col("machine").is_in(wanted)), kernels)
    out = []
    for (target,), part in samples.group_by(["target"], maintain_order=True):
        sig = make_signature(
            target,
            part,
            emb.transform(part),
            kernels,
            aggregation=aggregation,
            normalise=normalise,
            embedder_id=emb_id,
            embedder_revision=emb_rev,
        )
        out.append(reg.add(sig.model_copy(update={"data_version": data_version})))
    return out


def local_embedder_path(sig, embedders_dir: Path) -> Path | None:
    """Where the embedder a signature was built with lives under ``embedders_dir``, if there."""
    name = sig.embedder_id.split(".")[0]
    p = Path(embedders_dir) / f"{name}-{sig.embedder_revision}"
    return p if (p / "model.safetensors").is_file() else None


def signature_from_runs(
    runs: pl.DataFrame,
    embedder,
    *,
    aggregation: str,
    normalise: str,
    embedder_id: str,
    embedder_revision: str,
):
    """Signatures (not registered) of every target in ``runs``, with an already loaded AMM
    embedder: how a target never seen in training gets an AMM at inference.

    Args:
        runs: ``benchmark_runs`` rows.
        embedder: the loaded embedder.
        aggregation: Algorithm 1's aggregation (``mean``, ``l2``, ``variance``).
        normalise: Algorithm 1's normalisation (``divide``, ``subtract``, ``none``).
        embedder_id: the embedder's name, recorded.
        embedder_revision: the embedder's content hash, recorded.

    Returns:
        Target -> signature.
    """

    kernels = embedder.feature_names
    samples = benchmark_samples(runs, kernels)
    if samples.is_empty():
        raise ValueError(
            "the benchmark data has none of the AMM embedder's kernels "
            f"({', '.join(kernels[:5])} ...)"
        )
    out = {}
    for (target,), part in samples.group_by(["target"], maintain_order=True):
        out[target] = make_signature(
            target,
            part,
            embedder.transform(part),
            kernels,
            aggregation=aggregation,
            normalise=normalise,
            embedder_id=embedder_id,
            embedder_revision=embedder_revision,
        )
    return out


def make_signature(
    target: str,
    part: pl.DataFrame,
    E: np.ndarray,
    kernels: list[str],
    *,
    aggregation: str,
    normalise: str,
    embedder_id: str,
    embedder_revision: str,
) -> Signature:
    """The one way a signature is made: Algorithm 1 over the embeddings of a target's
    benchmark samples, with their data hash, kernel coverage and sample count.

    Args:
        target: ``machine:device``.
        part: the target's benchmark samples.
        E: their embeddings.
        kernels: the kernels used as features.
        aggregation: Algorithm 1's aggregation (``mean``, ``l2``, ``variance``).
        normalise: Algorithm 1's normalisation (``divide``, ``subtract``, ``none``).
        embedder_id: the embedder's name, recorded.
        embedder_revision: the embedder's content hash, recorded.

    Returns:
        The signature (not registered).
    """
    t = Target.parse(target)
    coverage = float(
        part.select(kernels).select(pl.all().is_not_null().any()).row(0).count(True)
    ) / len(kernels)
    return Signature(
        machine=t.machine,
        device=t.device,
        vector=[float(x) for x in algorithm1(E, aggregation, normalise)],
        aggregation=aggregation,
        normalise=normalise,
        embedder_id=embedder_id,
        embedder_revision=embedder_revision,
        data_sha256=frame_sha256(part),
        kernels=list(kernels),
        coverage=coverage,
        n_samples=part.height,
        xamm_version=__version__,
    )
