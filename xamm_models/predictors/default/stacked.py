"""A stacked relR model: a physics prior from the machines' own benchmark runs, and a learned
residual.

prior = modelled time on the target / modelled time on the source
(:mod:`xamm_models.machines.physics`); log relR = log prior + g(features), where g is gradient
boosting on:

* the source sample's efficiency: log10(measured / modelled time per rep on the source), its time
  per iteration, arithmetic intensity, problem size and bytes per launch, the devices at both ends;
* optionally the physics signatures of source and target at the kernel's working set (``physics``),
  and the attention AMMs (``attention``).

The residual is applied only to machine pairs (source, target) whose training pairs hold at least
``min_pair_kernels`` distinct kernels (:data:`MIN_PAIR_KERNELS`); any other pair gets the prior
alone. A correction learned from a handful of one pair's kernels is those kernels' quirk, not the
pair's: in ``xplat-rajaperf`` with RAJAPerf's Apps group held out, the H100 node's CPU->GPU pairs
keep 4 kernels, of which the two reductions run several times slower on its GPU than the prior
says (tests/models/benchmark/test_evaluation.py); the ungated residual carries that into the whole
Apps group (``xamm eval``: ``stacked/physics-ungated`` against ``stacked/prior``, fold Apps).

:class:`StackedModel` ``variant`` names the feature set; ``"prior"`` is the prior alone. These
learned residuals are evaluation entries (``stacked/*`` in ``xamm eval``); the default predictor
answers with the plain roofline, and :func:`split_relr` is one of the candidates it was measured
against (docs/decisions.md).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_models.machines.physics import PhysicsSignature, modelled_per_end, rows_by

VARIANTS = ("prior", "residual", "physics", "attention", "physics+attention")
# distinct training kernels a machine pair needs before its residual is applied
MIN_PAIR_KERNELS = 10


def _xgb(seed: int):
    from xgboost import XGBRegressor  # models extra, imported on use

    return XGBRegressor(
        n_estimators=300,
        max_depth=4,
        learning_rate=0.05,
        subsample=0.9,
        colsample_bytree=0.9,
        random_state=seed,
        n_jobs=1,
        tree_method="hist",
    )


def _pair_key() -> pl.Expr:
    return (pl.col("source") + ">" + pl.col("target")).alias("pair")


def log_prior(sigs: dict[str, PhysicsSignature], pairs: pl.DataFrame) -> np.ndarray:
    """log(modelled time on the target / modelled time on the source) per pair."""
    return np.log(modelled_per_end(sigs, pairs, "target") / modelled_per_end(sigs, pairs, "source"))


def source_slowdown(sigs: dict[str, PhysicsSignature], pairs: pl.DataFrame) -> np.ndarray:
    """Measured / modelled time per rep on the source, per pair: how far each sample runs from its
    source's roofline (above 1: slower than modelled)."""
    measured = (
        pairs.get_column("runtime_source") * pairs.get_column("iterations_per_rep")
    ).to_numpy()
    return measured / modelled_per_end(sigs, pairs, "source")


# of log slowdown carried to the target: the midpoint between the two assumptions, not a tuned value
SPLIT_SHARE = 0.5


def split_relr(sigs: dict[str, PhysicsSignature], pairs: pl.DataFrame) -> np.ndarray:
    """The prior times the square root of the source's slowdown from its roofline: log relR =
    log prior - 0.5 log s, s = measured / modelled time on the source.

    The prior alone assumes the target runs the sample as far from its roofline as the source does
    (the slowdown is the kernel's and carries over whole); the opposite assumption is that the
    target runs at its roofline (the slowdown is the source machine's). Nothing in a source profile
    tells the two apart, so this takes the geometric mean of the two answers; nothing is fitted.

    Args:
        sigs: signatures by target (both ends of every pair).
        pairs: pair rows with the source sample's work and time.

    Returns:
        Predicted relR, one per pair.
    """
    return np.exp(log_prior(sigs, pairs) - (1 - SPLIT_SHARE) * np.log(source_slowdown(sigs, pairs)))


def _base(sigs, pairs: pl.DataFrame) -> np.ndarray:
    eff = np.log10(source_slowdown(sigs, pairs))
    launches = np.clip(pairs.get_column("kernels_per_rep").fill_null(1.0).to_numpy(), 1.0, None)
    ws = np.log10(
        np.clip(pairs.get_column("bytes_per_rep").fill_null(0.0).to_numpy() / launches, 1.0, None)
    )
    dev = [
        pairs.get_column(c).str.ends_with(":gpu").cast(pl.Float64).to_numpy()
        for c in ("source", "target")
    ]
    return np.column_stack(
        [
            log_prior(sigs, pairs) / np.log(10),
            eff,
            pairs.get_column("f_log_s_per_iter").to_numpy(),
            np.log10(1 + pairs.get_column("f_arith_intensity").to_numpy().clip(0, None)),
            pairs.get_column("f_log_problem_size").to_numpy(),
            ws,
            *dev,
        ]
    )


def _physics(sigs, pairs: pl.DataFrame) -> np.ndarray:
    launches = np.clip(pairs.get_column("kernels_per_rep").fill_null(1.0).to_numpy(), 1.0, None)
    ws = pairs.get_column("bytes_per_rep").fill_null(0.0).to_numpy() / launches
    cols = []
    for end in ("source", "target"):
        block = np.full((pairs.height, 3), np.nan)
        for (t,), rows in rows_by(pairs.get_column(end)):
            if t in sigs:
                block[rows] = sigs[t].vector(ws[rows])
        cols.append(block)
    return np.hstack(cols)


def _attention(amms: dict, pairs: pl.DataFrame) -> np.ndarray:
    vec = {t: np.asarray(s.vector) for t, s in amms.items()}
    missing = np.full(len(next(iter(vec.values()))), np.nan)
    return np.hstack(
        [
            np.stack([vec.get(t, missing) for t in pairs.get_column(end).to_list()])
            for end in ("source", "target")
        ]
    )


class StackedModel:
    """Physics prior + a learned residual in log relR (see the module docstring)."""

    def __init__(
        self, variant: str = "physics", seed: int = 0, min_pair_kernels: int = MIN_PAIR_KERNELS
    ):
        if variant not in VARIANTS:
            raise ValueError(
                f"unknown stacked variant {variant!r}; expected one of {', '.join(VARIANTS)}"
            )
        self.variant, self.seed, self.model = variant, seed, None
        self.min_pair_kernels = min_pair_kernels
        # "source>target" -> distinct training kernels; None: no gate
        self.support: dict[str, int] | None = None

    def features(self, sigs, pairs: pl.DataFrame, amms: dict | None = None) -> np.ndarray:
        parts = [_base(sigs, pairs)]
        if "physics" in self.variant:
            parts.append(_physics(sigs, pairs))
        if "attention" in self.variant:
            parts.append(_attention(amms, pairs))
        return np.hstack(parts)

    def fit(self, sigs, pairs: pl.DataFrame, amms: dict | None = None) -> StackedModel:
        if self.variant != "prior":
            y = np.log(pairs.get_column("relR").to_numpy()) - log_prior(sigs, pairs)
            self.model = _xgb(self.seed).fit(self.features(sigs, pairs, amms), y)
            per_pair = pairs.group_by(_pair_key()).agg(pl.col("app").n_unique()).sort("pair")
            self.support = {p: int(n) for p, n in per_pair.iter_rows()}
        return self

    def applies(self, pairs: pl.DataFrame) -> np.ndarray:
        """Whether the residual is applied to each pair: its machine pair had ``min_pair_kernels``
        training kernels."""
        if self.model is None:
            return np.zeros(pairs.height, bool)
        # saved before the gate existed: applied everywhere, as it was trained
        if self.support is None:
            return np.ones(pairs.height, bool)
        n = pairs.select(
            _pair_key().replace_strict(self.support, default=0, return_dtype=pl.Int64)
        ).to_series()
        return (n >= self.min_pair_kernels).to_numpy()

    def predict(self, sigs, pairs: pl.DataFrame, amms: dict | None = None) -> np.ndarray:
        """Predicted relR of each pair."""
        out = log_prior(sigs, pairs)
        on = self.applies(pairs)
        if on.any():
            out[on] += self.model.predict(self.features(sigs, pairs.filter(pl.Series(on)), amms))
        return np.exp(out)

    def state(self) -> dict:
        """The gate (the booster is saved in its own format)."""
        return {"min_pair_kernels": self.min_pair_kernels, "support": self.support}

    def load_state(self, state: dict) -> None:
        self.min_pair_kernels = state.get("min_pair_kernels", self.min_pair_kernels)
        self.support = state.get("support")
