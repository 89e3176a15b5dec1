"""Few-shot adaptation to a platform whose features differ in name, number and order.

A :class:`SourceModel` is trained on one platform: its samples' features (standardised) go through
an MLP encoder into a latent space, and a linear head reads log10 seconds per iteration from it.
:meth:`SourceModel.adapt` takes a handful of labelled samples of another platform, described by
*other* feature columns, and returns an :class:`AdaptedModel`:

* **alignment**: a learned linear map ``P`` from the target's standardised features into the
  source's input space, read by the *frozen* encoder and head (``align(x) = encoder(P x + b)``).
  Where a target column's name resolves to a source column (exactly, or through the canonical
  counter table), ``P`` starts as that match; otherwise at zero. Trained on the k samples with a
  pull towards the start (no manual alignment needed, none assumed);
* **stacked residual**: a ridge regression on the aligned latent, the aligned prediction and the
  target's own features, fitted to what alignment leaves (``y - head(align(x))``), as the few-shot
  adaptation paper's "stacked residual model".

Standardisation of the target's features uses every target sample ``adapt`` is given, labelled or
not (test-time adaptation may read the unlabelled features; never their times). Torch, seeded, CPU
(GPU when present).
"""

from __future__ import annotations

import contextlib
from functools import lru_cache

import numpy as np

from xamm_data.tables import counters


@lru_cache(maxsize=4096)
def canonical(name: str) -> str:
    """A feature's canonical name: the counter table's name when it resolves, else the name
    itself."""
    return counters.resolve(name) or name


def _torch():
    import torch  # models extra: only when a model is trained

    return torch


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu, sd = np.nanmean(x, axis=0), np.nanstd(x, axis=0)
    sd[~np.isfinite(sd) | (sd < 1e-9)] = 1.0
    return np.nan_to_num(mu), sd


def name_matches(source_features: list[str], target_features: list[str]) -> np.ndarray:
    """(len(source_features), len(target_features)) 0/1: where a target column's canonical name is a
    source column's."""
    src = [canonical(f) for f in source_features]
    return np.array([[float(s == canonical(t)) for t in target_features] for s in src]).reshape(
        len(src), len(target_features)
    )


class SourceModel:
    """An MLP on one platform's features predicting log10 seconds per iteration (see the module
    docstring)."""

    def __init__(
        self,
        features: list[str],
        *,
        hidden: int = 64,
        latent: int = 32,
        epochs: int = 400,
        seed: int = 0,
    ):
        self.features, self.hidden, self.latent, self.epochs, self.seed = (
            list(features),
            hidden,
            latent,
            epochs,
            seed,
        )
        self.net = None

    def _build(self):
        torch = _torch()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            enc = torch.nn.Sequential(
                torch.nn.Linear(len(self.features), self.hidden),
                torch.nn.ReLU(),
                torch.nn.Linear(self.hidden, self.latent),
                torch.nn.ReLU(),
            )
            head = torch.nn.Linear(self.latent, 1)
        return torch.nn.ModuleDict({"enc": enc, "head": head})

    def fit(self, x: np.ndarray, y: np.ndarray) -> SourceModel:
        """Train on the platform's own samples.

        Args:
            x: features, shape (n, len(features)).
            y: log10 seconds per iteration.

        Returns:
            The fitted model.
        """
        torch = _torch()
        self.mu, self.sd = standardise(x)
        self.y_mu = float(np.mean(y))
        self.net = self._build()
        xt = torch.tensor(np.nan_to_num((x - self.mu) / self.sd), dtype=torch.float32)
        self.cov = np.cov(xt.numpy(), rowvar=False).reshape(len(self.features), len(self.features))
        yt = torch.tensor(y - self.y_mu, dtype=torch.float32)[:, None]
        _train(
            self.net.parameters(),
            lambda: self.net["head"](self.net["enc"](xt)),
            yt,
            self.epochs,
            self.seed,
        )
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        """log10 seconds per iteration of samples described by the source's own features.

        Args:
            x: features, shape (n, len(features)).

        Returns:
            One value per sample.
        """
        torch = _torch()
        with torch.no_grad():
            z = self.net["enc"](
                torch.tensor(np.nan_to_num((x - self.mu) / self.sd), dtype=torch.float32)
            )
            return self.net["head"](z).numpy()[:, 0] + self.y_mu

    def name_matches(self, target_features: list[str]) -> np.ndarray:
        """Where a target column's canonical name is a source column's.

        Args:
            target_features: the target platform's column names.

        Returns:
            A 0/1 matrix, shape (len(features), len(target_features)).
        """
        return name_matches(self.features, target_features)

    def adapt(
        self,
        x: np.ndarray,
        y: np.ndarray,
        features: list[str],
        *,
        unlabelled: np.ndarray | None = None,
        use_names: bool = True,
        epochs: int = 300,
        pull: float = 1e-2,
        ridge: float = 10.0,
        match: float = 1.0,
    ) -> AdaptedModel:
        """An adapted model for a platform described by other features; the source stays frozen.

        Args:
            x: the platform's labelled samples' features.
            y: their log10 seconds per iteration.
            features: the platform's feature names (their canonical names seed the alignment).
            unlabelled: more samples' features of the platform.
            use_names: seed the alignment by names that resolve.
            epochs: alignment training epochs.
            pull: the pull towards the name-seeded start.
            ridge: the residual's ridge penalty.
            match: the weight of matching the source's moments.

        Returns:
            The :class:`AdaptedModel`.
        """
        return AdaptedModel(self, features, use_names=use_names).fit(
            x, y, unlabelled=unlabelled, epochs=epochs, pull=pull, ridge=ridge, match=match
        )


def _train(
    params, forward, y, epochs: int, seed: int, extra=lambda: 0.0, lr: float = 1e-2, loss=None
) -> None:
    """Full-batch Adam on ``loss(pred, y)`` (mean squared error by default) + ``extra()``,
    seeded."""
    torch = _torch()
    from xamm_models.optimizer import adam  # imports torch: only when a model is trained

    params = [p for p in params if p.requires_grad]
    opt = adam(params, lr=lr, weight_decay=1e-4)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for _ in range(epochs):
            opt.zero_grad()
            pred = forward()
            value = (torch.mean((pred - y) ** 2) if loss is None else loss(pred, y)) + extra()
            value.backward()
            opt.step()


@contextlib.contextmanager
def _trainable(module, train: bool):
    """``module``'s parameters trainable or not for the block, as they were after it."""
    was = [p.requires_grad for p in module.parameters()]
    for p in module.parameters():
        p.requires_grad_(train)
    try:
        yield
    finally:
        for p, w in zip(module.parameters(), was, strict=True):
            p.requires_grad_(w)


def _start(p0: np.ndarray, device):
    """The alignment's start: ``p0`` as a tensor, and the trainable ``P`` (from ``p0``) and
    ``b`` (zero)."""
    torch = _torch()
    p0t = torch.tensor(p0, dtype=torch.float32, device=device)
    P = torch.nn.Parameter(p0t.clone())
    b = torch.nn.Parameter(torch.zeros(p0t.shape[0], device=device))
    return p0t, P, b


def _moment_penalty(xu, P, b, p0t, cov_s, match: float, pull: float):
    """The alignment's penalty: the aligned inputs should look like the source's (mean 0, its
    covariance or unit variances), and ``P`` stay near its start."""

    torch = _torch()

    def moments():
        a = xu @ P.T + b
        c = torch.cov(a.T).reshape(p0t.shape[0], p0t.shape[0])
        spread = (
            torch.mean((c - cov_s) ** 2)
            if cov_s is not None
            else torch.mean((torch.diagonal(c) - 1.0) ** 2)
        )
        return match * (torch.mean(a.mean(0) ** 2) + spread) + pull * torch.sum((P - p0t) ** 2)

    return moments


def fit_alignment(
    frozen_forward,
    frozen,
    xt,
    yt,
    p0: np.ndarray,
    xu,
    *,
    cov: np.ndarray | None = None,
    epochs: int = 300,
    seed: int = 0,
    pull: float = 1e-2,
    match: float = 1.0,
    loss=None,
    fine_tune: bool = False,
):
    """The learned input alignment ``a = P x + b`` of a target's standardised features into a
    frozen model's standardised input space.

    Fitted on the labels, pulled towards the start ``p0`` and, on every target sample's features
    (unlabelled ones too), towards the source's moments.

    Args:
        frozen_forward: the frozen model's prediction from aligned inputs.
        frozen: the frozen module, whose parameters are held fixed and given back as they were.
        xt: the labelled target samples' standardised features.
        yt: their labels.
        p0: the start (names that resolve, else zero).
        xu: every target sample's standardised features.
        cov: the source's input covariance (unit variances without one).
        epochs: training epochs.
        seed: the seed.
        pull: the pull towards ``p0``.
        match: the weight of matching the source's moments (mean 0 and ``cov``).
        loss: ``loss(pred, yt)`` (mean squared error by default).
        fine_tune: train the model's own weights too (the caller passes a copy).

    Returns:
        ``(P, b)``.
    """
    torch = _torch()
    p0t, P, b = _start(p0, xt.device)
    cov_s = torch.tensor(cov, dtype=torch.float32, device=xt.device) if cov is not None else None
    moments = _moment_penalty(xu, P, b, p0t, cov_s, match, pull)
    with _trainable(frozen, fine_tune):
        _train(
            [P, b, *frozen.parameters()],
            lambda: frozen_forward(xt @ P.T + b),
            yt,
            epochs,
            seed,
            extra=moments,
            loss=loss,
        )
    return P.detach(), b.detach()


class AdaptedModel:
    """A frozen :class:`SourceModel` read through a learned alignment, plus a stacked ridge
    residual."""

    def __init__(self, source: SourceModel, features: list[str], *, use_names: bool = True):
        self.source, self.features = source, list(features)
        self.p0 = (
            source.name_matches(features)
            if use_names
            else np.zeros((len(source.features), len(features)))
        )

    def _x(self, x: np.ndarray):
        torch = _torch()
        return torch.tensor(np.nan_to_num((x - self.mu) / self.sd), dtype=torch.float32)

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        *,
        unlabelled=None,
        epochs: int = 300,
        pull: float = 1e-2,
        ridge: float = 10.0,
        match: float = 1.0,
    ) -> AdaptedModel:
        torch = _torch()
        every = np.vstack([x, unlabelled]) if unlabelled is not None else x
        self.mu, self.sd = standardise(every)
        net = self.source.net
        yt = torch.tensor(y - self.source.y_mu, dtype=torch.float32)[:, None]
        self.P, self.b = fit_alignment(
            lambda a: net["head"](net["enc"](a)),
            net,
            self._x(x),
            yt,
            self.p0,
            self._x(every),
            cov=self.source.cov,
            epochs=epochs,
            seed=self.source.seed,
            pull=pull,
            match=match,
        )
        z, aligned = self._aligned(x)
        self.ridge = ridge_fit(
            np.column_stack([z, aligned, (x - self.mu) / self.sd]), y - aligned, ridge
        )
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
        return aligned + ridge_predict(
            self.ridge, np.column_stack([z, aligned, np.nan_to_num((x - self.mu) / self.sd)])
        )


def ridge_fit(
    a: np.ndarray, r: np.ndarray, alpha: float, scale: bool = True
) -> tuple[np.ndarray, np.ndarray, float]:
    """Ridge regression with centred (and with ``scale``, standardised) columns and an unpenalised
    intercept: (mean, scale, weights + intercept). Without ``scale`` the columns keep the units they
    come in, for inputs already on one scale: a few labelled rows would otherwise blow a
    near-constant column up."""
    a = np.nan_to_num(a)
    mu, sd = standardise(a)
    sd = sd if scale else np.ones_like(sd)
    s = (a - mu) / sd
    w = np.linalg.solve(s.T @ s + alpha * np.eye(s.shape[1]), s.T @ (r - r.mean()))
    return mu, sd, np.append(w, r.mean())


def ridge_predict(model, a: np.ndarray) -> np.ndarray:
    mu, sd, w = model
    return ((np.nan_to_num(a) - mu) / sd) @ w[:-1] + w[-1]


def ridge_from_scratch(x: np.ndarray, y: np.ndarray, alpha: float = 1.0):
    """The from-scratch comparison on the same samples: ridge on the target's standardised
    features.

    Args:
        x: the labelled samples' features.
        y: their labels.
        alpha: the ridge penalty.

    Returns:
        A function from features to predictions.
    """
    model = ridge_fit(x, y, alpha)
    return lambda xs: ridge_predict(model, xs)


ALPHAS = (1.0, 10.0, 100.0, 1e3, 1e4, 1e6)


def choose_alpha(
    a: np.ndarray,
    r: np.ndarray,
    groups: np.ndarray,
    alphas=ALPHAS,
    folds: int = 5,
    scale: bool = True,
) -> float:
    """The ridge penalty with the least squared error over folds of whole ``groups`` (kernels: a
    row's siblings never validate it); the largest (the fallback: no residual) with fewer than two
    groups."""
    names = np.unique(groups)
    if len(names) < 2:
        return float(max(alphas))
    fold = {g: i % min(folds, len(names)) for i, g in enumerate(names)}
    f = np.array([fold[g] for g in groups])
    err = {alpha: 0.0 for alpha in alphas}
    for k in np.unique(f):
        tr, va = f != k, f == k
        for alpha in alphas:
            err[alpha] += float(
                np.sum((r[va] - ridge_predict(ridge_fit(a[tr], r[tr], alpha, scale), a[va])) ** 2)
            )
    return min(alphas, key=lambda alpha: (err[alpha], -alpha))
