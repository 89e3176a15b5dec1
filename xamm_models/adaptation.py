"""Seed 003: few-shot adaptation to a platform whose features differ in name, number and order.

A :class:`SourceModel` is trained on one platform: its samples' features (standardised) go through an MLP encoder
into a latent space, and a linear head reads log10 seconds per iteration from it. :meth:`SourceModel.adapt` takes a
handful of labelled samples of another platform, described by *other* feature columns, and returns an
:class:`AdaptedModel`:

* **alignment**: a learned linear map ``P`` from the target's standardised features into the source's input space,
  read by the *frozen* encoder and head (``align(x) = encoder(P x + b)``). Where a target column's name resolves
  to a source column (exactly, or through the canonical counter table), ``P`` starts as that match; otherwise at
  zero. Trained on the k samples with a pull towards the start (no manual alignment needed, none assumed);
* **stacked residual**: a ridge regression on the aligned latent, the aligned prediction and the target's own
  features, fitted to what alignment leaves (``y - head(align(x))``), as the seed's "stacked residual model".

Standardisation of the target's features uses every target sample ``adapt`` is given, labelled or not
(test-time adaptation may read the unlabelled features; never their times). Torch, seeded, CPU (GPU when present).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from xamm_data import counters

@lru_cache(maxsize=4096)
def canonical(name: str) -> str:
    """A feature's canonical name: the counter table's name when it resolves, else the name itself."""
    return counters.resolve(name) or name


def _torch():
    import torch  # models extra: only when a model is trained

    return torch


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu, sd = np.nanmean(x, axis=0), np.nanstd(x, axis=0)
    sd[~np.isfinite(sd) | (sd < 1e-9)] = 1.0
    return np.nan_to_num(mu), sd


class SourceModel:
    """An MLP on one platform's features predicting log10 seconds per iteration (see the module docstring)."""

    def __init__(self, features: list[str], *, hidden: int = 64, latent: int = 32, epochs: int = 400, seed: int = 0):
        self.features, self.hidden, self.latent, self.epochs, self.seed = list(features), hidden, latent, epochs, seed
        self.net = None

    def _build(self):
        torch = _torch()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            enc = torch.nn.Sequential(torch.nn.Linear(len(self.features), self.hidden), torch.nn.ReLU(),
                                      torch.nn.Linear(self.hidden, self.latent), torch.nn.ReLU())
            head = torch.nn.Linear(self.latent, 1)
        return torch.nn.ModuleDict({"enc": enc, "head": head})

    def fit(self, x: np.ndarray, y: np.ndarray) -> SourceModel:
        """Train on the platform's samples: ``x`` (n, len(features)), ``y`` log10 seconds per iteration."""
        torch = _torch()
        self.mu, self.sd = _standardise(x)
        self.y_mu = float(np.mean(y))
        self.net = self._build()
        xt = torch.tensor(np.nan_to_num((x - self.mu) / self.sd), dtype=torch.float32)
        self.cov = np.cov(xt.numpy(), rowvar=False).reshape(len(self.features), len(self.features))
        yt = torch.tensor(y - self.y_mu, dtype=torch.float32)[:, None]
        _train(self.net.parameters(), lambda: self.net["head"](self.net["enc"](xt)), yt, self.epochs, self.seed)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        """log10 seconds per iteration of samples described by the source's own features."""
        torch = _torch()
        with torch.no_grad():
            z = self.net["enc"](torch.tensor(np.nan_to_num((x - self.mu) / self.sd), dtype=torch.float32))
            return self.net["head"](z).numpy()[:, 0] + self.y_mu

    def name_matches(self, target_features: list[str]) -> np.ndarray:
        """(len(features), len(target_features)) 0/1: where a target column's canonical name is a source column's."""
        src = [canonical(f) for f in self.features]
        return np.array([[float(s == canonical(t)) for t in target_features] for s in src])

    def adapt(self, x: np.ndarray, y: np.ndarray, features: list[str], *, unlabelled: np.ndarray | None = None,
              use_names: bool = True, epochs: int = 300, pull: float = 1e-2, ridge: float = 10.0,
              match: float = 1.0) -> AdaptedModel:
        """An :class:`AdaptedModel` for a platform described by ``features``, from its labelled samples ``x``, ``y``
        (log10 seconds per iteration) and optionally its ``unlabelled`` samples' features. The source stays frozen."""
        return AdaptedModel(self, features, use_names=use_names).fit(x, y, unlabelled=unlabelled, epochs=epochs,
                                                                      pull=pull, ridge=ridge, match=match)


def _train(params, forward, y, epochs: int, seed: int, extra=lambda: 0.0, lr: float = 1e-2) -> None:
    """Full-batch Adam on mean squared error (+ ``extra``), seeded."""
    torch = _torch()
    params = [p for p in params if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, weight_decay=1e-4)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for _ in range(epochs):
            opt.zero_grad()
            loss = torch.mean((forward() - y) ** 2) + extra()
            loss.backward()
            opt.step()


class AdaptedModel:
    """A frozen :class:`SourceModel` read through a learned alignment, plus a stacked ridge residual."""

    def __init__(self, source: SourceModel, features: list[str], *, use_names: bool = True):
        self.source, self.features = source, list(features)
        self.p0 = source.name_matches(features) if use_names else np.zeros((len(source.features), len(features)))

    def _x(self, x: np.ndarray):
        torch = _torch()
        return torch.tensor(np.nan_to_num((x - self.mu) / self.sd), dtype=torch.float32)

    def fit(self, x: np.ndarray, y: np.ndarray, *, unlabelled=None, epochs: int = 300, pull: float = 1e-2,
            ridge: float = 10.0, match: float = 1.0) -> AdaptedModel:
        torch = _torch()
        every = np.vstack([x, unlabelled]) if unlabelled is not None else x
        self.mu, self.sd = _standardise(every)
        net = self.source.net
        for p in net.parameters():
            p.requires_grad_(False)
        p0 = torch.tensor(self.p0, dtype=torch.float32)
        self.P = torch.nn.Parameter(p0.clone())
        self.b = torch.nn.Parameter(torch.zeros(len(self.source.features)))
        xt, yt = self._x(x), torch.tensor(y - self.source.y_mu, dtype=torch.float32)[:, None]
        xu, cov_s = self._x(every), torch.tensor(self.source.cov, dtype=torch.float32)

        def unsupervised():  # the aligned inputs should look like the source's: mean 0, the source's covariance
            a = xu @ self.P.T + self.b
            c = torch.cov(a.T).reshape(cov_s.shape)
            return match * (torch.mean(a.mean(0) ** 2) + torch.mean((c - cov_s) ** 2)) + pull * torch.sum((self.P - p0) ** 2)
        _train([self.P, self.b], lambda: net["head"](net["enc"](xt @ self.P.T + self.b)), yt, epochs, self.source.seed,
               extra=unsupervised)
        z, aligned = self._aligned(x)
        self.ridge = _ridge(np.column_stack([z, aligned, (x - self.mu) / self.sd]), y - aligned, ridge)
        return self

    def _aligned(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        torch = _torch()
        net = self.source.net
        with torch.no_grad():
            z = net["enc"](self._x(x) @ self.P.T + self.b)
            return z.numpy(), net["head"](z).numpy()[:, 0] + self.source.y_mu

    def predict(self, x: np.ndarray) -> np.ndarray:
        """log10 seconds per iteration of target samples described by the target's features."""
        z, aligned = self._aligned(x)
        return aligned + _ridge_predict(self.ridge, np.column_stack([z, aligned, np.nan_to_num((x - self.mu) / self.sd)]))


def _ridge(a: np.ndarray, r: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Ridge regression with standardised columns and an unpenalised intercept: (mean, scale, weights + intercept)."""
    a = np.nan_to_num(a)
    mu, sd = _standardise(a)
    s = (a - mu) / sd
    w = np.linalg.solve(s.T @ s + alpha * np.eye(s.shape[1]), s.T @ (r - r.mean()))
    return mu, sd, np.append(w, r.mean())


def _ridge_predict(model, a: np.ndarray) -> np.ndarray:
    mu, sd, w = model
    return ((np.nan_to_num(a) - mu) / sd) @ w[:-1] + w[-1]


def ridge_from_scratch(x: np.ndarray, y: np.ndarray, alpha: float = 1.0):
    """The from-scratch comparison on the same k samples: ridge on the target's standardised features."""
    model = _ridge(x, y, alpha)
    return lambda xs: _ridge_predict(model, xs)
