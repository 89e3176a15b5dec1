"""``xamm zoo build``: every artefact xamm publishes, regenerated from the public data,
reproducibly.

From the named sources of ``xplat-rajaperf`` under ``--data-dir`` (``../shared/data``) it builds, in
``OUT``:

* ``store/``: the per-machine ``benchmark_runs`` datasets (a Delta store; ``xplat-rajaperf`` is
  derived from it);
* ``signatures/``: the physics and attention signatures of every machine with benchmark runs (a
  registry);
* ``models/default/``: the default predictor
  (:class:`~xamm_models.predictors.default.model.StackedPredictor`);
* ``models/vae-dnn/``: the VAE-DNN papers' VAE-DNN
  (:class:`~xamm_models.predictors.vae_dnn.VaeDnn`);
* ``models/xamm/``: the paper's pipeline
  (:class:`~xamm_models.predictors.paper.predictor.XammPredictor`: attention embeddings, the
  attention AMMs, CatBoost), and ``models/adapted-quartz-topdown/``, that predictor adapted (seed
  003, :class:`~xamm_models.predictors.adapted.predictor.AdaptedPredictor`) to the public stand-in
  platform described by Caliper top-down counters
  (:func:`~xamm_models.predictors.adapted.standin.platform_pairs`, thicket-tutorial quartz);
* ``models/baseline-{pair-median,roofline,knn}/``: the benchmark's baselines
  (:class:`~xamm_models.predictors.baseline.BaselinePredictor`), the yardsticks every figure is held
  against;
* ``zoo.json``: each artefact's provenance (dataset and table version, xamm version, seed) and
  metrics.

Each model's card carries its metrics on the official splits, read from an ``xamm eval``
``results.json`` (``--eval-results``). With ``--snapshot DIR`` the package's embedded snapshot
(:mod:`xamm_data.hub.snapshot`) is written too: the derived per-machine Parquet with the sources'
licences, the signatures, the default predictor.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
from huggingface_hub import HfApi
from pydantic import BaseModel, ConfigDict

from xamm_data._version import __version__
from xamm_data.hub import snapshot
from xamm_data.hub.files import verify_folder
from xamm_data.hub.publish import hub_endpoint, hub_errors, push_dataset
from xamm_data.plugins import load
from xamm_data.store.store import Store
from xamm_models.benchmark import dataset as xplat
from xamm_models.features import FEATURES
from xamm_models.machines.attention import build_signatures
from xamm_models.machines.hub import push_signatures
from xamm_models.machines.signatures import SignatureRegistry
from xamm_models.predictors.adapted.standin import PLATFORM, PLATFORM_FEATURES, platform_pairs
from xamm_models.predictors.baseline import fit_baselines
from xamm_models.predictors.default.model import StackedPredictor
from xamm_models.zoo.physics import build_physics_signatures, build_specification_signatures

SCHEMES = ("kernel-group", "machine", "kernel")
# the top-down counter runs of the adaptation stand-in
TUTORIAL_QUARTZ = "LLNL+thicket-tutorial/data/quartz"
METRICS = ("within_2", "median_abs_log10", "coverage")


class Artefact(BaseModel):
    """One published artefact and where it came from."""

    model_config = ConfigDict(extra="forbid")
    name: str
    kind: str  # "dataset", "signature", "model"
    path: str  # relative to the zoo folder
    dataset: str
    data_version: int
    xamm_version: str = __version__
    seed: int = 0
    metrics: dict[str, dict[str, float]] = {}


def eval_metrics(results_json: str | Path | None, entry: str) -> dict[str, dict[str, float]]:
    """{scheme: {metric: pooled value}} of ``entry`` in an ``xamm eval`` ``results.json`` (empty
    without one)."""
    if results_json is None or not Path(results_json).is_file():
        return {}
    res = json.loads(Path(results_json).read_text())["results"]
    out = {}
    for scheme in SCHEMES:
        pooled = (
            res.get(scheme, {}).get("entries", {}).get(entry, {}).get("pooled", {}).get("all", {})
        )
        vals = {
            m: pooled[m]["value"] for m in METRICS if pooled.get(m, {}).get("value") is not None
        }
        if vals:
            out[scheme] = vals
    return out


def _same_data(results_json: str | Path | None, version: str) -> None:
    """Refuse an ``xamm eval`` ``results.json`` of another version of the data set: its figures
    would go into the cards of models trained on other pairs."""
    if results_json is None or not Path(results_json).is_file():
        return
    theirs = json.loads(Path(results_json).read_text()).get("dataset", {}).get("version")
    if theirs != version:
        raise ValueError(
            f"{results_json} holds the figures of {xplat.NAME}@{theirs}, but the zoo is built from "
            f"{xplat.NAME}@{version}; run `xamm eval` on these sources first, or leave "
            "--eval-results out"
        )


def _dataset_artefact(machine: str, name: str, version, seed: int) -> Artefact:
    """The zoo's record of one machine's benchmark runs in its store."""
    return Artefact(
        name=machine,
        kind="dataset",
        path=f"store/benchmark_runs/machine={machine}",
        dataset=name,
        data_version=version,
        seed=seed,
    )


def _signature_artefact(s, reg: SignatureRegistry, out: Path, name: str, version, seed: int):
    """The zoo's record of one signature file."""
    return Artefact(
        name=s.ref,
        kind="signature",
        path=str(reg.path(s.machine, s.device, s.version, s.kind).relative_to(out)),
        dataset=name,
        data_version=version,
        seed=seed,
    )


def _default_and_baselines(ds, out: Path, name: str, version, seed: int, eval_results):
    """The default predictor and the benchmark's baselines, fitted on the whole data set, saved
    with their metrics from the evaluation."""
    default = StackedPredictor(seed=seed).fit(
        ds.pairs, ds.samples, dataset=name, data_version=version
    )
    models = {"default": (default, "stacked/default")}
    for method, b in fit_baselines(
        ds.pairs, ds.samples, dataset=name, data_version=version
    ).items():
        models[f"baseline-{method}"] = (b, f"baseline/{method}")
    arts = []
    for folder, (model, entry) in models.items():
        model.training["metrics"] = eval_metrics(eval_results, entry)
        model.save_pretrained(out / "models" / folder)
        arts.append(
            Artefact(
                name=folder,
                kind="model",
                path=f"models/{folder}",
                dataset=name,
                data_version=version,
                seed=seed,
                metrics=model.training["metrics"],
            )
        )
    return arts


def build_zoo(
    data_dir,
    out,
    *,
    seed: int = 0,
    epochs: int = 200,
    eval_results=None,
    vae_dnn: bool = True,
    progress=print,
) -> list[Artefact]:
    """Build every artefact into ``out`` (see the module docstring) and write ``zoo.json``.

    Args:
        data_dir: the public data (``../shared/data``).
        out: the zoo folder.
        seed: the seed of every model.
        epochs: the embedders' epochs.
        eval_results: an ``xamm eval`` ``results.json`` whose metrics go into the cards.
        vae_dnn: build the VAE-DNN too.
        progress: where progress is printed.

    Returns:
        The artefacts, as recorded in ``zoo.json``.
    """
    out = Path(out)
    st = Store(out / "store")
    progress("ingesting the named sources")
    xplat.ingest_sources(data_dir, st)
    version = st.version("benchmark_runs")
    ds = xplat.XplatDataset.from_store(st, version=version)
    name = f"{xplat.NAME}@{ds.version}"
    _same_data(eval_results, ds.version)
    arts = [_dataset_artefact(m, name, version, seed) for m in st.machines("benchmark_runs")]
    reg = SignatureRegistry(out / "signatures")
    progress("physics and attention signatures")
    sigs = [
        *build_physics_signatures(store=st, registry=reg),
        *build_specification_signatures(registry=reg),
        *build_signatures(store=st, registry=reg, epochs=epochs, seed=seed),
    ]
    arts += [_signature_artefact(s, reg, out, name, version, seed) for s in sigs]
    progress("the default predictor and the baselines")
    arts += _default_and_baselines(ds, out, name, version, seed, eval_results)
    if vae_dnn:
        arts.append(_vae_dnn(ds, out, name, version, seed, eval_results, progress))
    arts += _paper_and_adapted(ds, Path(data_dir), out, reg, sigs, name=name, version=version,
                               seed=seed, epochs=epochs, eval_results=eval_results,
                               progress=progress)  # fmt: skip
    (out / "zoo.json").write_text(
        json.dumps([a.model_dump() for a in arts], indent=1, sort_keys=True) + "\n"
    )
    return arts


def _vae_dnn(ds, out: Path, name: str, version: int, seed: int, eval_results, progress) -> Artefact:
    from xamm_models.predictors.vae_dnn import VaeDnn, vector_samples  # torch: loaded on use

    progress("the VAE-DNN")
    rows = vector_samples(ds.pairs)
    targets = sorted(c[2:] for c in rows.columns if c.startswith("y_"))
    model = VaeDnn(targets, sorted(set(rows.get_column("source"))), seed=seed).fit(
        rows, dataset=name, data_version=version
    )
    model.provenance["metrics"] = eval_metrics(eval_results, "vae-dnn/seed")
    model.save_pretrained(out / "models" / "vae-dnn")
    return Artefact(
        name="vae-dnn",
        kind="model",
        path="models/vae-dnn",
        dataset=name,
        data_version=version,
        seed=seed,
        metrics=model.provenance["metrics"],
    )


def _paper_and_adapted(
    ds,
    data_dir: Path,
    out: Path,
    reg,
    sigs,
    *,
    name: str,
    version: int,
    seed: int,
    epochs: int,
    eval_results,
    progress,
) -> list[Artefact]:
    """The paper's predictor on ``xplat-rajaperf``'s pairs with the attention AMMs, and it adapted
    to the top-down platform from all its labelled profiles (the adaptation's measured curve is in
    the README)."""
    from xamm_models.predictors.adapted.predictor import adapt  # torch: loaded on use
    from xamm_models.predictors.paper.predictor import XammPredictor  # torch: loaded on use

    progress("the paper's predictor")
    attention = {s.target: s for s in sigs if s.kind == "attention"}
    paper = XammPredictor(feature_columns=list(FEATURES), epochs=epochs, seed=seed).fit_pairs(
        ds.pairs, attention, dataset=name, embedders_dir=reg.embedders_dir
    )
    paper.training["metrics"] = eval_metrics(eval_results, "attention+amm/catboost")
    paper.metrics = {
        f"{k}/{m}": v for k, d in paper.training["metrics"].items() for m, v in d.items()
    }
    paper.save_pretrained(out / "models" / "xamm")
    progress("the paper's predictor adapted to the top-down platform")
    # the ingest layer, by its hook
    read = load("xamm.ingest", "rajaperf", "adapting to the top-down platform")
    runs = read(data_dir / TUTORIAL_QUARTZ, dry_run=True, workers=1).frame
    adapted = adapt(
        paper, platform_pairs(runs, ds), PLATFORM, features=PLATFORM_FEATURES, seed=seed
    )
    adapted.save_pretrained(out / "models" / "adapted-quartz-topdown")
    return [
        Artefact(
            name="xamm",
            kind="model",
            path="models/xamm",
            dataset=name,
            data_version=version,
            seed=seed,
            metrics=eval_metrics(eval_results, "attention+amm/catboost"),
        ),
        Artefact(
            name="adapted-quartz-topdown",
            kind="model",
            path="models/adapted-quartz-topdown",
            dataset=f"{name} + {TUTORIAL_QUARTZ}",
            data_version=version,
            seed=seed,
        ),
    ]


def write_snapshot(zoo: str | Path, dest: str | Path = snapshot.ROOT) -> snapshot.Manifest:
    """The embedded snapshot from a built zoo folder: derived Parquet per machine, signatures,
    the default predictor.

    Args:
        zoo: the built zoo folder.
        dest: the snapshot folder (the package's by default).

    Returns:
        The snapshot's manifest.
    """
    zoo, dest = Path(zoo), Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    st = Store(zoo / "store")
    files = []
    for m in st.machines("benchmark_runs"):
        rel = f"benchmark_runs/machine={m}.parquet"
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        df = st.read("benchmark_runs", m)
        df.write_parquet(dest / rel, compression="zstd", compression_level=19, statistics=False)
        files.append({"path": rel, "kind": "benchmark_runs", "machine": m, "rows": df.height})
    for src in sorted((zoo / "signatures").glob("*/*@*.json")):
        rel = f"signatures/{src.parent.name}/{src.name}"
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest / rel)
        files.append({"path": rel, "kind": "signature", "machine": src.parent.name})
    for src in sorted((zoo / "models" / "default").iterdir()):
        rel = f"models/default/{src.name}"
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest / rel)
        files.append({"path": rel, "kind": "model"})
    built = json.loads((zoo / "zoo.json").read_text())
    sources = [{"name": s.name, "origin": s.origin, "license": s.license} for s in xplat.SOURCES]
    return snapshot.write_manifest(
        dest,
        {
            "xamm_version": __version__,
            "dataset": built[0]["dataset"],
            "store_version": built[0]["data_version"],
            "sources": sources,
            "files": files,
            "models": ["default"],
        },
    )


def machine_licenses() -> dict[str, list[str]]:
    """SPDX ids (lower case, as Hub cards write them) of the sources each machine's rows come
    from."""
    named: dict[str, set[str]] = {}
    for s in xplat.SOURCES:
        named.setdefault(s.machine or "", set()).add(s.license.lower())
    # the one source naming no machine holds quartz's and lassen's files (their Adiak cluster)
    from_files = sorted(named.pop("", set()))
    return {
        **{m: from_files for m in ("quartz", "lassen")},
        **{m: sorted(lic) for m, lic in named.items()},
    }


def push_zoo(zoo: str | Path, org: str, *, token=None, progress=print) -> dict[str, str]:
    """Publish a built zoo under ``org``.

    The datasets go to ``ORG/xamm-datasets`` (one commit per machine, from the zoo store's
    recorded table version), the signatures to ``ORG/xamm-amms`` and each model folder as built,
    card included, to ``ORG/xamm-<name>``; ``published.json`` in the zoo records the commits.

    Args:
        zoo: the built zoo folder.
        org: the Hub organisation.
        token: a Hub token.
        progress: where progress is printed.

    Returns:
        Repo -> commit, to pin.
    """
    zoo = Path(zoo)
    arts = [Artefact(**a) for a in json.loads((zoo / "zoo.json").read_text())]
    # publish only what save_pretrained wrote, as it wrote it
    for a in (a for a in arts if a.kind == "model"):
        verify_folder(zoo / a.path, str(zoo / a.path), required=True)
    with hub_errors(f"publish the zoo {zoo} under {org}"):
        return _push_zoo(zoo, arts, org, token=token, progress=progress)


def _push_zoo(zoo: Path, arts: list, org: str, *, token, progress) -> dict[str, str]:
    lic, out = machine_licenses(), {}
    for a in (a for a in arts if a.kind == "dataset"):
        progress(f"dataset {a.name}")
        out[f"{org}/xamm-datasets"] = push_dataset(
            a.name,
            f"{org}/xamm-datasets",
            licenses=lic[a.name],
            store=zoo / "store",
            version=a.data_version,
            token=token,
        )
    progress("signatures")
    out[f"{org}/xamm-amms"] = push_signatures(
        f"{org}/xamm-amms", registry=SignatureRegistry(zoo / "signatures"), token=token
    )
    hub = HfApi(endpoint=hub_endpoint(), token=token)
    for a in (a for a in arts if a.kind == "model"):
        repo = f"{org}/xamm-{a.name}"
        progress(f"model {repo}")
        hub.create_repo(repo, exist_ok=True)
        out[repo] = hub.upload_folder(
            repo_id=repo,
            folder_path=zoo / a.path,
            commit_message=f"xamm zoo: {a.name} from {a.dataset}",
        ).oid
    (zoo / "published.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return out


def snapshot_frame(dest: str | Path = snapshot.ROOT) -> pl.DataFrame:
    """The snapshot's files as a table (path, kind, machine, rows, bytes)."""
    m = snapshot.manifest(Path(dest))
    return pl.DataFrame(
        [
            {**f.model_dump(exclude={"sha256"}), "bytes": (Path(dest) / f.path).stat().st_size}
            for f in (m.files if m else [])
        ]
    )
