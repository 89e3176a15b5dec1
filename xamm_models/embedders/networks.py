"""Sample embedders (xAMM paper Section IV-C): TabNet-style sequential attention, and NN / AE / VAE
baselines.

Every embedder has one interface:

* ``fit(X, y=None)``: supervised when ``y`` is given (regression on ``y``, e.g. log relR),
  self-supervised otherwise (masked-feature reconstruction for the attention embedder and the
  autoencoders; the MLP needs ``y``);
* ``transform(X) -> ndarray (n, embed_dim)``;
* the feature names and the normalisation statistics (mean, std) are kept in the model (config and
  buffers), missing values are imputed with the training mean;
* seeded: the same data, config and seed give the same weights and embeddings (CPU);
* runs on CUDA when available (``device="auto"``), CPU otherwise;
* ``save_pretrained`` / ``from_pretrained`` / ``push_to_hub`` from huggingface_hub's
  ``PyTorchModelHubMixin``: constructor arguments in ``config.json``, weights in
  ``model.safetensors``.

The attention embedder follows TabNet (Arik & Pfister): a feature transformer (shared and
step-specific GLU blocks), an attentive transformer producing a sparsemax mask per decision step
with a prior that discourages reusing features, and the embedding as the sum over steps of the
ReLU'd decision outputs. :meth:`AttentionEmbedder.masks` returns the per-step masks, so a user can
see which kernels or counters it attends to.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import numbers
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from xamm_data._version import __version__
from xamm_data.cli.terminal import unfiltered
from xamm_data.registry import Registry
from xamm_models.errors import SavedFormatError
from xamm_models.optimizer import adam

REGISTRY: Registry[type] = Registry("embedder")


def register_embedder(name: str) -> Callable[[type], type]:
    """Class decorator: make an embedder available as ``create_embedder(name)``.

    Args:
        name: the embedder's name.

    Returns:
        The decorator, which returns the class unchanged.
    """

    def deco(cls: type) -> type:
        cls.embedder_name = name
        return REGISTRY.add(name, cls)

    return deco


def list_embedders(pattern: str = "*") -> list[str]:
    """Registered embedder names.

    Args:
        pattern: a shell-style pattern.

    Returns:
        The matching names, sorted.
    """
    return REGISTRY.list(pattern)


def _check_epochs(epochs: object) -> None:
    """A ``ValueError`` unless ``epochs`` is a whole number >= 1 (no epoch leaves the weights
    random, and the signatures built on them noise)."""
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral) or epochs < 1:
        raise ValueError(f"epochs is {epochs!r}; an embedder trains at least one epoch")


def create_embedder(name: str, **kwargs) -> Embedder:
    """Instantiate a registered embedder.

    Args:
        name: a registered embedder (an unknown name lists the valid ones and the closest).
        **kwargs: its constructor's arguments.

    Returns:
        The unfitted embedder.
    """
    return REGISTRY.get(name)(**kwargs)


def local_rng(fn: Callable) -> Callable:
    """Decorator: run ``fn`` on a fork of torch's CPU generator, so the seeding inside
    (parameter init, dropout, sampling) never changes the caller's global random state.

    Args:
        fn: the function.

    Returns:
        The wrapped function.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch.random.fork_rng(devices=[]):
            return fn(*args, **kwargs)

    return wrapper


def resolve_device(device: str) -> torch.device:
    """The torch device of a setting.

    Args:
        device: ``auto`` (a GPU when present, else the CPU), ``cpu`` or a torch device name.

    Returns:
        The device.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def sparsemax(z: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Sparsemax (Martins & Astudillo 2016): a softmax whose outputs can be exactly zero.

    Args:
        z: scores.
        dim: the dimension normalised over.

    Returns:
        Probabilities, some exactly zero.
    """
    z_sorted, _ = torch.sort(z, dim=dim, descending=True)
    k = torch.arange(1, z.size(dim) + 1, device=z.device, dtype=z.dtype)
    shape = [1] * z.dim()
    shape[dim] = -1
    k = k.view(shape)
    cssv = z_sorted.cumsum(dim) - 1
    support = (k * z_sorted) > cssv
    k_z = support.sum(dim=dim, keepdim=True).clamp(min=1)
    tau = cssv.gather(dim, k_z - 1) / k_z.to(z.dtype)
    return torch.clamp(z - tau, min=0)


def masked_mse(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """MSE over the entries of ``y`` that are not NaN (a relR vector has gaps where a pair
    is missing).

    Args:
        pred: predictions.
        y: targets, NaN where missing.

    Returns:
        A scalar tensor.
    """
    mask = ~torch.isnan(y)
    if not mask.any():
        return pred.sum() * 0.0
    return ((pred - torch.nan_to_num(y)) ** 2)[mask].mean()


class Embedder(nn.Module):
    """Common machinery: normalisation, imputation, training loop, transform."""

    embedder_name = "base"

    @local_rng
    def __init__(
        self,
        n_features: int,
        feature_names: list[str] | None = None,
        embed_dim: int = 8,
        seed: int = 0,
        device: str = "auto",
    ):
        super().__init__()
        self.n_features = int(n_features)
        self.feature_names = (
            list(feature_names)
            if feature_names is not None
            else [f"x{i}" for i in range(n_features)]
        )
        if len(self.feature_names) != self.n_features:
            raise ValueError(f"{len(self.feature_names)} feature names for {n_features} features")
        self.embed_dim = int(embed_dim)
        self.seed = int(seed)
        self.device_name = device
        self.register_buffer("mean", torch.zeros(self.n_features))
        self.register_buffer("std", torch.ones(self.n_features))
        self.register_buffer("fitted", torch.zeros((), dtype=torch.bool))
        self._register_load_state_dict_pre_hook(_state_hook, with_module=True)

    def _save_pretrained(self, save_directory) -> None:
        """Weights and config via huggingface_hub, plus ``xamm_embedder.json`` naming the class."""

        super()._save_pretrained(save_directory)
        (Path(save_directory) / "xamm_embedder.json").write_text(
            json.dumps(
                {
                    "embedder": self.embedder_name,
                    "feature_names": self.feature_names,
                    "xamm_version": __version__,
                },
                indent=2,
            )
            + "\n"
        )

    # -- data ---------------------------------------------------------------------------
    def _as_array(self, X) -> np.ndarray:
        try:
            if isinstance(X, pl.DataFrame):
                missing = [c for c in self.feature_names if c not in X.columns]
                if missing:
                    raise ValueError(
                        f"input lacks the embedder's features {missing[:5]}"
                        f"{' ...' if len(missing) > 5 else ''} "
                        f"({len(missing)} of {self.n_features})"
                    )
                X = X.select(self.feature_names).to_numpy()
        except ImportError:  # pragma: no cover
            pass
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected an array of shape (n, {self.n_features}), got {X.shape}")
        return X

    def _normalise(self, X: np.ndarray) -> torch.Tensor:
        mean, std = self.mean.cpu().numpy(), self.std.cpu().numpy()
        Xn = (X - mean) / std
        Xn = np.where(np.isnan(Xn), 0.0, Xn)  # missing -> training mean
        return torch.as_tensor(Xn, dtype=torch.float32, device=self.parameter_device())

    def parameter_device(self) -> torch.device:
        """The device the network's parameters live on (where its inputs must go).

        Returns:
            The device.
        """
        return next(self.parameters()).device

    # -- model pieces, overridden -------------------------------------------------------
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """The embedding of standardised inputs (the network's forward pass to the latent).

        Args:
            x: standardised inputs, shape (n, n_features).

        Returns:
            Shape (n, embed_dim).
        """
        raise NotImplementedError

    def loss(self, x: torch.Tensor, y: torch.Tensor | None) -> torch.Tensor:
        """The training loss of one batch.

        Args:
            x: standardised inputs.
            y: supervised targets, or None (self-supervised).

        Returns:
            A scalar tensor.
        """
        raise NotImplementedError

    # -- public API -----------------------------------------------------------------------
    @local_rng
    def fit(
        self,
        X,
        y=None,
        *,
        epochs: int = 200,
        lr: float = 1e-2,
        batch_size: int = 256,
        weight_decay: float = 1e-5,
        progress: bool = False,
    ) -> Embedder:
        """Fit on ``X``; supervised if ``y`` is given, else self-supervised.

        Args:
            X: an array, or a polars frame with the feature columns.
            y: targets (e.g. log relR, NaN where missing), or None.
            epochs: training epochs.
            lr: learning rate.
            batch_size: batch size.
            weight_decay: weight decay.
            progress: show a progress bar.

        Returns:
            The fitted embedder.
        """
        _check_epochs(epochs)
        torch.manual_seed(self.seed)  # on the forked generator (local_rng)
        X = self._as_array(X)
        dev = self._set_statistics(X)
        xt = self._normalise(X)
        yt = None
        if y is not None:
            y = np.asarray(y, dtype=np.float64).reshape(len(X), -1)
            yt = torch.as_tensor(y, dtype=torch.float32, device=dev)
            self._init_head(yt.shape[1])
            self.to(dev)
        opt = adam(self.parameters(), lr=lr, weight_decay=weight_decay)
        gen = torch.Generator().manual_seed(self.seed)
        n = len(xt)
        it = range(epochs)
        if progress:
            from tqdm.auto import tqdm  # only when a progress bar is shown

            # the bar moves the cursor: it writes to the terminal beneath the text filter
            it = tqdm(it, desc=f"fit {self.embedder_name}", file=unfiltered(sys.stderr))
        self.train()
        for _ in it:
            perm = torch.randperm(n, generator=gen).to(dev)
            for i in range(0, n, batch_size):
                idx = perm[i : i + batch_size]
                if len(idx) < 2 and n >= 2:
                    continue
                opt.zero_grad()
                loss = self.loss(xt[idx], None if yt is None else yt[idx])
                loss.backward()
                opt.step()
        self.eval()
        self.fitted.fill_(True)
        return self

    def _set_statistics(self, X: np.ndarray) -> torch.device:
        """Keep the features' means and standard deviations (NaN-safe) on the model's device."""
        mean = np.nanmean(X, axis=0)
        std = np.nanstd(X, axis=0)
        mean = np.where(np.isnan(mean), 0.0, mean)
        std = np.where(~np.isfinite(std) | (std < 1e-12), 1.0, std)
        dev = resolve_device(self.device_name)
        self.to(dev)
        self.mean.copy_(torch.as_tensor(mean, dtype=torch.float32))
        self.std.copy_(torch.as_tensor(std, dtype=torch.float32))
        return dev

    def _init_head(self, n_out: int) -> None:
        if getattr(self, "head", None) is None or self.head.out_features != n_out:
            torch.manual_seed(self.seed + 1)
            self.head = nn.Linear(self.embed_dim, n_out)

    @torch.no_grad()
    def transform(self, X) -> np.ndarray:
        """Embeddings of ``X``.

        Args:
            X: an array, or a polars frame with the feature columns.

        Returns:
            Shape (n, embed_dim).
        """
        if not bool(self.fitted):
            raise RuntimeError(
                f"{type(self).__name__} is not fitted; call fit() or from_pretrained()"
            )
        self.eval()
        return self.encode(self._normalise(self._as_array(X))).cpu().numpy().astype(np.float64)


class _GLU(nn.Module):
    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.fc = nn.Linear(n_in, 2 * n_out, bias=False)
        self.bn = nn.BatchNorm1d(2 * n_out, momentum=0.02)

    def forward(self, x):
        return nn.functional.glu(self.bn(self.fc(x)), dim=-1)


class _FeatureTransformer(nn.Module):
    """Two GLU layers shared by all steps, two specific to this step, with sqrt(0.5) residuals."""

    def __init__(self, shared: nn.ModuleList, n_in: int, n_hidden: int):
        super().__init__()
        self.shared = shared
        self.specific = nn.ModuleList([_GLU(n_hidden, n_hidden) for _ in range(2)])
        self.scale = 0.5**0.5

    def forward(self, x):
        x = self.shared[0](x)
        for layer in [*self.shared[1:], *self.specific]:
            x = (x + layer(x)) * self.scale
        return x


@register_embedder("attention")
class AttentionEmbedder(
    Embedder,
    PyTorchModelHubMixin,
    library_name="xamm",
    tags=["xamm", "embedder", "tabnet"],
    repo_url="https://github.com/LLNL/generalizable_modeling",
):
    """TabNet-style sequential attention embedder (the paper's f_attention)."""

    @local_rng
    def __init__(
        self,
        n_features: int,
        feature_names: list[str] | None = None,
        embed_dim: int = 8,
        n_steps: int = 3,
        gamma: float = 1.3,
        lambda_sparse: float = 1e-3,
        mask_ratio: float = 0.2,
        seed: int = 0,
        device: str = "auto",
    ):
        super().__init__(n_features, feature_names, embed_dim, seed, device)
        torch.manual_seed(seed)
        self.n_steps, self.gamma, self.lambda_sparse, self.mask_ratio = (
            int(n_steps),
            float(gamma),
            float(lambda_sparse),
            float(mask_ratio),
        )
        nd = na = self.embed_dim
        hidden = nd + na
        self.bn_in = nn.BatchNorm1d(n_features, momentum=0.02)
        shared = nn.ModuleList([_GLU(n_features, hidden), _GLU(hidden, hidden)])
        self.initial = _FeatureTransformer(shared, n_features, hidden)
        self.steps = nn.ModuleList(
            [_FeatureTransformer(shared, n_features, hidden) for _ in range(self.n_steps)]
        )
        self.attentive = nn.ModuleList(
            [
                nn.Sequential(
                    nn.Linear(na, n_features, bias=False), nn.BatchNorm1d(n_features, momentum=0.02)
                )
                for _ in range(self.n_steps)
            ]
        )
        self.decoder = nn.Sequential(
            nn.Linear(nd, hidden), nn.ReLU(), nn.Linear(hidden, n_features)
        )
        self.head = None

    def _forward(self, x: torch.Tensor):
        xb = self.bn_in(x)
        prior = torch.ones_like(xb)
        a = self.initial(xb)[:, self.embed_dim :]
        out = torch.zeros(len(x), self.embed_dim, device=x.device)
        masks, sparsity = [], 0.0
        for step, att in zip(self.steps, self.attentive):
            m = sparsemax(att(a) * prior)
            masks.append(m)
            sparsity = (
                sparsity + torch.mean(torch.sum(-m * torch.log(m + 1e-10), dim=1)) / self.n_steps
            )
            prior = prior * (self.gamma - m)
            h = step(xb * m)
            out = out + torch.relu(h[:, : self.embed_dim])
            a = h[:, self.embed_dim :]
        return out, torch.stack(masks, dim=0), sparsity

    def encode(self, x):
        return self._forward(x)[0]

    def loss(self, x, y):
        if y is not None:
            emb, _, sparsity = self._forward(x)
            return masked_mse(self.head(emb), y) + self.lambda_sparse * sparsity
        # self-supervised: hide a random subset of features and reconstruct them (TabNet
        # pretraining)
        hide = (torch.rand_like(x) < self.mask_ratio).float()
        emb, _, sparsity = self._forward(x * (1 - hide))
        rec = self.decoder(emb)
        err = ((rec - x) * hide) ** 2
        return err.sum() / hide.sum().clamp(min=1) + self.lambda_sparse * sparsity

    @torch.no_grad()
    def masks(self, X) -> np.ndarray:
        """Per-step attention masks; each row sums to 1.

        Args:
            X: an array, or a polars frame with the feature columns.

        Returns:
            Shape (n_steps, n, n_features).
        """
        self.eval()
        return self._forward(self._normalise(self._as_array(X)))[1].cpu().numpy()

    @torch.no_grad()
    def feature_importance(self, X) -> dict[str, float]:
        """Mean attention each feature receives over samples and steps.

        Args:
            X: an array, or a polars frame with the feature columns.

        Returns:
            Feature -> share (summing to 1), largest first.
        """
        m = self.masks(X).mean(axis=(0, 1))
        m = m / m.sum() if m.sum() > 0 else m
        return dict(sorted(zip(self.feature_names, m.tolist()), key=lambda kv: -kv[1]))


@register_embedder("mlp")
class MLPEmbedder(Embedder, PyTorchModelHubMixin, library_name="xamm", tags=["xamm", "embedder"]):
    """Plain neural network: the last hidden layer of a supervised regressor is the embedding."""

    @local_rng
    def __init__(
        self,
        n_features: int,
        feature_names: list[str] | None = None,
        embed_dim: int = 8,
        hidden: int = 64,
        seed: int = 0,
        device: str = "auto",
    ):
        super().__init__(n_features, feature_names, embed_dim, seed, device)
        torch.manual_seed(seed)
        self.hidden = int(hidden)
        self.encoder = nn.Sequential(
            nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, embed_dim), nn.ReLU()
        )
        self.head = None

    def encode(self, x):
        return self.encoder(x)

    def loss(self, x, y):
        if y is None:
            raise ValueError("the MLP embedder is supervised: fit(X, y)")
        return masked_mse(self.head(self.encoder(x)), y)


@register_embedder("ae")
class AutoencoderEmbedder(
    Embedder, PyTorchModelHubMixin, library_name="xamm", tags=["xamm", "embedder"]
):
    """Autoencoder: the bottleneck is the embedding; supervised fits add a head on it."""

    @local_rng
    def __init__(
        self,
        n_features: int,
        feature_names: list[str] | None = None,
        embed_dim: int = 8,
        hidden: int = 64,
        seed: int = 0,
        device: str = "auto",
    ):
        super().__init__(n_features, feature_names, embed_dim, seed, device)
        torch.manual_seed(seed)
        self.hidden = int(hidden)
        self.encoder = nn.Sequential(
            nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, embed_dim)
        )
        self.decoder = nn.Sequential(
            nn.Linear(embed_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_features)
        )
        self.head = None

    def encode(self, x):
        return self.encoder(x)

    def loss(self, x, y):
        z = self.encoder(x)
        rec = nn.functional.mse_loss(self.decoder(z), x)
        return rec if y is None else rec + masked_mse(self.head(z), y)


@register_embedder("vae")
class VAEEmbedder(Embedder, PyTorchModelHubMixin, library_name="xamm", tags=["xamm", "embedder"]):
    """Variational autoencoder (the VAE-DNN papers): the posterior mean is the embedding."""

    @local_rng
    def __init__(
        self,
        n_features: int,
        feature_names: list[str] | None = None,
        embed_dim: int = 8,
        hidden: int = 64,
        beta: float = 1e-2,
        seed: int = 0,
        device: str = "auto",
    ):
        super().__init__(n_features, feature_names, embed_dim, seed, device)
        torch.manual_seed(seed)
        self.hidden, self.beta = int(hidden), float(beta)
        self.body = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, embed_dim)
        self.logvar = nn.Linear(hidden, embed_dim)
        self.decoder = nn.Sequential(
            nn.Linear(embed_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_features)
        )
        self.head = None

    def encode(self, x):
        return self.mu(self.body(x))

    def loss(self, x, y):
        h = self.body(x)
        mu, logvar = self.mu(h), self.logvar(h).clamp(-10, 10)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        kl = -0.5 * torch.mean(torch.sum(1 + logvar - mu**2 - logvar.exp(), dim=1))
        loss = nn.functional.mse_loss(self.decoder(z), x) + self.beta * kl
        return loss if y is None else loss + masked_mse(self.head(mu), y)


def load_embedder(path_or_repo: str, revision: str | None = None, **kwargs) -> Embedder:
    """Load any xamm embedder saved with ``save_pretrained``, by its config.

    Args:
        path_or_repo: a local folder or a Hub repo.
        revision: the Hub revision.
        **kwargs: huggingface_hub's download options.

    Returns:
        The embedder, of the class its config names.
    """

    # Hub client: ~0.3 s import, only when a Hub is used
    from huggingface_hub import hf_hub_download

    p = Path(path_or_repo)
    info = (
        p / "xamm_embedder.json"
        if p.is_dir()
        else Path(hf_hub_download(path_or_repo, "xamm_embedder.json", revision=revision, **kwargs))
    )
    try:
        name = json.loads(info.read_text(encoding="utf-8"))["embedder"]
    except (ValueError, UnicodeDecodeError, RecursionError, TypeError, KeyError) as e:
        raise SavedFormatError(
            f"{path_or_repo}: xamm_embedder.json names no embedder ({type(e).__name__}: {e}); "
            "expected what save_pretrained writes"
        ) from None
    cls = REGISTRY.get(name)
    # the mixin prints "Loading weights..."; stdout may be --json
    with contextlib.redirect_stdout(io.StringIO()):
        return cls.from_pretrained(path_or_repo, revision=revision, **kwargs)


def _state_hook(
    module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
):
    """A saved supervised head is recreated before its weights load."""
    w = state_dict.get(prefix + "head.weight")
    if w is not None and getattr(module, "head", None) is None:
        module.head = nn.Linear(w.shape[1], w.shape[0]).to(w.device)
