"""VAE-DNN: a variational auto-encoder's latent space, and a DNN on it that predicts the relR
vector.

the VAE-DNN papers' system, on xamm's data: each *vector sample* is one application sample measured
on one source (``xplat`` pairs grouped by ``sample`` and ``source``); its input is the sample's
features on the source, its label the vector of log relR to every target of the data set (masked
where a target has no measurement).

* **VAE** (:class:`VaeDnn`): encoder -> (mu, log var) of a latent z, decoder -> the standardised
  features. The three training choices the seeds describe are switches, for the ablation:
  ``calibrated`` (a sigma-VAE decoder, Rybkin et al. 2021, the VAE-DNN paper's reference [4]: the
  Gaussian decoder's variance is set to its optimum, the mean squared error, so the reconstruction
  term is D/2 log MSE instead of a fixed-variance MSE), ``cpu_first`` (the VAE is first fitted on
  the CPU sources' samples alone, then on all), ``kl_schedule`` (the KL weight rises linearly from 0
  to 1 over the first half of training instead of staying 1), and ``joint_epochs`` (for the last
  that many VAE epochs the DNN's loss is added to the VAE loss; 0 = off).
* **DNN**: three hidden layers of ``dnn_hidden`` (1024) units on [mu(z), one-hot source], output the
  log relR to each target; trained with a masked MSE after the VAE (encoder frozen), in minibatches
  of :data:`DNN_BATCH` for ``dnn_epochs`` epochs, or for ``dnn_steps`` minibatches when set (a cost
  that does not grow with the number of vectors). Predictions are
  clipped to each target's training range: off its data the DNN extrapolates without bound (it did,
  by e^700, on a kernel group).

Seeded (a local generator and ``torch.manual_seed`` in :meth:`fit`), CPU or GPU (``device``). Saved
with safetensors through ``PyTorchModelHubMixin``: ``save_pretrained`` / ``from_pretrained`` /
``push_to_hub``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from safetensors.torch import load_model, save_model
from torch import nn

from xamm_data._version import __version__
from xamm_models.embedders import resolve_device
from xamm_models.errors import UnknownSourceError, UnknownTargetError, unknown_name_message
from xamm_models.features import FEATURES
from xamm_models.optimizer import adam
from xamm_models.predictors.contract import Predictor, asked_targets, conform, no_other_options
from xamm_models.profile_input import check_profiles, feature_columns

WEIGHTS = "model.safetensors"  # the name PyTorchModelHubMixin gives it
DNN_BATCH = 256  # vectors per DNN minibatch
MARKER = "vae_dnn.json"  # what the zoo (xamm_models.predictors.kinds) knows a saved VAE-DNN by


def vector_samples(
    pairs: pl.DataFrame, targets: list[str] | None = None, features=FEATURES
) -> pl.DataFrame:
    """One row per (sample, source): the source's features, and ``y_<target>`` = log relR to each
    target (null when not measured, or when ``pairs`` hold no ``relR``: pairs to be answered).
    ``targets`` fixes the vector's order (default: every target of ``pairs``, sorted)."""
    targets = targets or sorted(set(pairs.get_column("target")) | set(pairs.get_column("source")))
    # pairs to be answered carry no label: their vectors are all null
    y = pl.col("relR").log() if "relR" in pairs.columns else pl.lit(None, dtype=pl.Float64)
    wide = pairs.select(
        "sample", "app", "group", "source", "target", y.alias("y"), *features
    ).pivot(
        on="target",
        index=["sample", "app", "group", "source", *features],
        values="y",
        aggregate_function="first",
    )
    for t in targets:
        if t not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(t))
    return wide.rename({t: f"y_{t}" for t in targets}).sort("sample", "source")


def _mlp(n_in: int, hidden: int, n_out: int, layers: int) -> nn.Sequential:
    mods, d = [], n_in
    for _ in range(layers):
        mods += [nn.Linear(d, hidden), nn.ReLU()]
        d = hidden
    return nn.Sequential(*mods, nn.Linear(d, n_out))


def masked_mse(pred: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return ((pred - y) ** 2 * mask).sum() / mask.sum().clamp(min=1.0)


class VaeDnn(
    nn.Module,
    Predictor,
    library_name="xamm",
    tags=["xamm", "vae", "relR-vector"],
    pipeline_tag="tabular-regression",
):
    """the VAE-DNN papers' VAE + DNN (see the module docstring). Constructor arguments are saved in
    ``config.json``."""

    kind = "vae-dnn"
    marker = MARKER
    # version 0: saved before the marker carried its format (read: the same fields)
    reads_versions = (0,)
    card_tags = ("vae", "relR-vector")
    # one pass answers every target: callers need not pass AMMs or benchmark runs
    answers_vectors = True

    def __init__(
        self,
        targets: list[str],
        sources: list[str],
        feature_names: list[str] | None = None,
        latent_dim: int = 8,
        hidden: int = 64,
        dnn_hidden: int = 1024,
        calibrated: bool = True,
        cpu_first: bool = True,
        kl_schedule: bool = True,
        joint_epochs: int = 20,
        vae_epochs: int = 150,
        dnn_epochs: int = 300,
        dnn_steps: int | None = None,
        lr: float = 1e-3,
        seed: int = 0,
        device: str = "auto",
    ):
        super().__init__()
        self.targets, self.sources = list(targets), list(sources)
        self.feature_names = list(feature_names or FEATURES)
        self.cfg: dict[str, Any] = {
            "latent_dim": latent_dim,
            "calibrated": calibrated,
            "cpu_first": cpu_first,
            "kl_schedule": kl_schedule,
            "joint_epochs": joint_epochs,
            "vae_epochs": vae_epochs,
            "dnn_epochs": dnn_epochs,
            "dnn_steps": dnn_steps,
            "lr": lr,
            "seed": seed,
        }
        d = len(self.feature_names)
        with torch.random.fork_rng(devices=[]):  # seeded weights, the caller's generator untouched
            torch.manual_seed(seed)
            self.encoder = _mlp(d, hidden, 2 * latent_dim, 1)
            self.decoder = _mlp(latent_dim, hidden, d, 1)
            self.dnn = _mlp(latent_dim + len(self.sources), dnn_hidden, len(self.targets), 3)
        self.register_buffer("x_mean", torch.zeros(d))
        self.register_buffer("x_std", torch.ones(d))
        # predictions stay within each target's training range (a DNN extrapolates without bound off
        # its data)
        self.register_buffer("y_min", torch.full((len(self.targets),), -float("inf")))
        self.register_buffer("y_max", torch.full((len(self.targets),), float("inf")))
        self.device_name = device
        self.provenance: dict = {}  # nn.Module's own `training` is its train/eval flag

    # -- pieces
    # -------------------------------------------------------------------------------------
    def _inputs(self, rows: pl.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.tensor(
            rows.select(self.feature_names).fill_null(0.0).to_numpy().astype(np.float32)
        )
        src = rows.get_column("source").to_list()
        unknown = sorted(set(src) - set(self.sources))
        if unknown:
            raise ValueError(
                f"sources {unknown} were not seen in training; known: {', '.join(self.sources)}"
            )
        onehot = torch.zeros(len(src), len(self.sources))
        onehot[torch.arange(len(src)), torch.tensor([self.sources.index(s) for s in src])] = 1.0
        return (x - self.x_mean.cpu()) / self.x_std.cpu(), onehot

    def _labels(self, rows: pl.DataFrame) -> tuple[torch.Tensor, torch.Tensor]:
        y = rows.select([f"y_{t}" for t in self.targets]).to_numpy().astype(np.float32)
        mask = ~np.isnan(y)
        return torch.tensor(np.nan_to_num(y)), torch.tensor(mask.astype(np.float32))

    def _vae_loss(self, x: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        mse = ((self.decoder(z) - x) ** 2).mean()
        d = x.shape[1]
        # sigma-VAE: the decoder variance at its optimum (the MSE) -> per-sample NLL D/2 log(MSE) (+
        # const)
        rec = 0.5 * d * torch.log(mse + 1e-6) if self.cfg["calibrated"] else 0.5 * d * mse
        kl = -0.5 * (1 + logvar - mu**2 - logvar.exp()).sum(dim=1).mean()
        return rec + beta * kl, mu

    # -- training
    # -----------------------------------------------------------------------------------
    def fit(
        self, rows: pl.DataFrame, *, dataset: str | None = None, data_version: int | None = None
    ) -> VaeDnn:
        """Train on vector samples: the VAE (CPU sources first if ``cpu_first``), then the
        DNN.

        Args:
            rows: vector samples (:func:`vector_samples`).
            dataset: the data set's name, recorded in the saved model and its card.
            data_version: the store table version the data were read at.

        Returns:
            The trained model.
        """
        self.provenance = {
            "dataset": dataset,
            "data_version": data_version,
            "vectors": rows.height,
            "kernels": rows.get_column("app").n_unique() if "app" in rows.columns else None,
            "xamm_version": __version__,
        }
        dev = resolve_device(self.device_name)
        # seeded, the caller's generator untouched
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            torch.manual_seed(self.cfg["seed"])
            return self._fit(rows, dev)

    def _fit(self, rows: pl.DataFrame, dev: torch.device) -> VaeDnn:
        x_np = rows.select(self.feature_names).fill_null(0.0).to_numpy()
        self.x_mean.copy_(torch.tensor(x_np.mean(axis=0), dtype=torch.float32))
        self.x_std.copy_(
            torch.tensor(np.where(x_np.std(axis=0) > 0, x_np.std(axis=0), 1.0), dtype=torch.float32)
        )
        x, s = self._inputs(rows)
        y, m = self._labels(rows)
        seen = m.bool()
        inf = torch.tensor(float("inf"))
        self.y_min.copy_(
            torch.where(seen.any(dim=0), torch.where(seen, y, inf).min(dim=0).values, -inf)
        )
        self.y_max.copy_(
            torch.where(seen.any(dim=0), torch.where(seen, y, -inf).max(dim=0).values, inf)
        )
        self.to(dev)
        x, s, y, m = x.to(dev), s.to(dev), y.to(dev), m.to(dev)
        if self.cfg["cpu_first"]:
            cpu = torch.tensor(
                rows.get_column("source").str.ends_with(":cpu").to_numpy(), device=dev
            )
            if cpu.any():
                self._train_vae(x[cpu], None, None, None, self.cfg["vae_epochs"] // 2, joint=False)
        self._train_vae(x, s, y, m, self.cfg["vae_epochs"], joint=self.cfg["joint_epochs"] > 0)
        self._train_dnn(x, s, y, m)
        self.to("cpu")
        self.eval()
        return self

    def _train_vae(self, x, s, y, m, epochs: int, joint: bool) -> None:
        params = (
            list(self.encoder.parameters())
            + list(self.decoder.parameters())
            + (list(self.dnn.parameters()) if joint else [])
        )
        opt = adam(params, lr=self.cfg["lr"])
        self.train()
        for ep in range(epochs):
            beta = min(1.0, ep / max(1, epochs // 2)) if self.cfg["kl_schedule"] else 1.0
            loss, mu = self._vae_loss(x, beta)
            if joint and ep >= epochs - self.cfg["joint_epochs"]:
                loss = loss + masked_mse(self.dnn(torch.cat([mu, s], dim=1)), y, m)
            opt.zero_grad()
            loss.backward()
            opt.step()

    def _train_dnn(self, x, s, y, m) -> None:
        with torch.no_grad():
            mu = self.encoder(x).chunk(2, dim=1)[0]
        opt = adam(self.dnn.parameters(), lr=self.cfg["lr"])
        inp = torch.cat([mu, s], dim=1)
        gen = torch.Generator(device="cpu").manual_seed(self.cfg["seed"])
        n = inp.shape[0]
        # a step budget (dnn_steps) bounds the cost whatever the number of vectors; else epochs
        steps = self.cfg.get("dnn_steps") or self.cfg["dnn_epochs"] * -(-n // DNN_BATCH)
        taken = 0
        while taken < steps:
            for idx in torch.randperm(n, generator=gen).split(DNN_BATCH)[: steps - taken]:
                idx = idx.to(inp.device)
                loss = masked_mse(self.dnn(inp[idx]), y[idx], m[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                taken += 1

    # -- inference
    # ----------------------------------------------------------------------------------
    @torch.no_grad()
    def predict_vector(self, rows: pl.DataFrame) -> np.ndarray:
        """Predicted log relR to every target.

        Args:
            rows: rows with the feature columns and ``source``.

        Returns:
            One row per input row, one column per target (in ``targets`` order).
        """
        self.eval()
        x, s = self._inputs(rows)
        mu = self.encoder(x).chunk(2, dim=1)[0]
        out = self.dnn(torch.cat([mu, s], dim=1))
        return torch.maximum(torch.minimum(out, self.y_max), self.y_min).numpy().astype(np.float64)

    @torch.no_grad()
    def latent(self, rows: pl.DataFrame) -> np.ndarray:
        """The latent means of the rows.

        Args:
            rows: rows with the feature columns and ``source``.

        Returns:
            One latent vector per row.
        """
        x, _ = self._inputs(rows)
        return self.encoder(x).chunk(2, dim=1)[0].numpy()

    def predict(
        self,
        profiles: pl.DataFrame,
        source: str,
        targets: list[str] | None = None,
        *,
        target_benchmarks=None,
        **kw: Any,
    ) -> pl.DataFrame:
        """relR of each profile on each target, all from one pass over the vector.

        Args:
            profiles: one row per profile, with the model's feature columns.
            source: the machine the profiles were measured on (one of the training sources).
            targets: the machines to answer for (None: every target of the vector but ``source``).
            target_benchmarks: refused: the vector's targets are fixed at training.
            **kw: no other option: one given is refused (``TypeError``).

        Returns:
            One row per (profile, target) with the contract's columns; no interval.
        """
        no_other_options(self, kw)
        if source not in self.sources:
            raise UnknownSourceError(
                f"source {source!r} was not seen in training: "
                + unknown_name_message("source", source, self.sources)
            )
        want = asked_targets(targets, [t for t in self.targets if t != source])
        for t in want:
            if t not in self.targets or target_benchmarks is not None:
                raise UnknownTargetError(
                    f"{unknown_name_message('target', t, self.targets)}; the VAE-DNN "
                    "predicts only the targets of its output vector "
                    "(benchmark runs alone cannot add one): retrain it with pairs on "
                    "the new machine, or use the default "
                    "predictor, which builds a new machine's signature from its runs "
                    "(target_benchmarks)"
                )
        check_profiles(profiles, feature_columns(self.feature_names), what="this VAE-DNN")
        P = self.predict_vector(profiles.with_columns(pl.lit(source).alias("source")))
        names = [c for c in ("app", "app_params") if c in profiles.columns]
        base = (
            profiles.select(names)
            .with_row_index("row")
            .with_columns(pl.col("row").cast(pl.Int64), pl.lit(source).alias("source"))
        )
        return conform(
            pl.concat(
                [
                    base.with_columns(
                        pl.lit(t).alias("target"),
                        pl.Series("relR", np.exp(P[:, self.targets.index(t)])),
                    )
                    for t in want
                ]
            )
        )

    # -- persistence ----------------------------------------------------------------------------
    def _save_state(self, folder: Path) -> dict:
        save_model(self, str(folder / WEIGHTS))
        return {
            "targets": self.targets,
            "sources": self.sources,
            "features": self.feature_names,
            "switches": self.cfg,
            "training": self.provenance,
        }

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **init_kwargs: object) -> VaeDnn:
        model = cls(**init_kwargs)  # the constructor's arguments, from config.json
        load_model(model, str(folder / WEIGHTS), strict=True, device="cpu")
        model.provenance = info.get("training", {})
        return model.eval()

    @property
    def card_training(self) -> dict:
        """The training record (``nn.Module`` keeps ``training`` for its train/eval flag)."""
        return self.provenance

    def _card_body(self) -> tuple[str, str]:
        """The model card: what it predicts, the switches it was trained with, its data and its
        limits."""
        t, c = self.provenance, self.cfg
        switches = ", ".join(
            f"{k} {c[k]}" for k in ("calibrated", "cpu_first", "kl_schedule", "joint_epochs")
        )
        dnn = (
            f"{c['dnn_steps']} DNN minibatches"
            if c.get("dnn_steps")
            else f"{c['dnn_epochs']} DNN epochs"
        )
        body = f"""\
A variational auto-encoder (latent dimension {c["latent_dim"]}) learns a latent space of a \
sample's features on its
source machine; a DNN (3 x 1024) on that latent and the source predicts log relR (runtime on \
target / runtime on
source) to every target at once: {", ".join(f"`{x}`" for x in self.targets)}. Sources: \
{", ".join(f"`{x}`" for x in self.sources)}.

Training switches (the three the ablation varies): {switches}; {c["vae_epochs"]} VAE epochs and \
{dnn}, seed {c["seed"]}. Features: {", ".join(f"`{x}`" for x in self.feature_names)}.

## Training data
{t.get("dataset") or "unnamed"} (store table version {t.get("data_version")}): {t.get("vectors")} \
vector samples,
{t.get("kernels")} kernels; xamm {t.get("xamm_version")}.

## Limitations
Only the targets of its output vector can be predicted: a new machine needs retraining with pairs \
on it (the default
predictor instead builds a new machine's signature from its benchmark runs). Predictions are \
clipped to each
target's training range. Measured figures: the VAE-DNN study in the documentation.
"""
        return "xamm VAE-DNN: the relR vector over every target in one pass", body


def split_80_20(rows: pl.DataFrame, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The papers' 80/20 split, over vector samples (seeded): (train mask, test mask)."""
    rng = np.random.default_rng(seed)
    test = np.zeros(rows.height, bool)
    test[rng.permutation(rows.height)[: math.ceil(0.2 * rows.height)]] = True
    return ~test, test
