"""The VAE-DNN papers' baseline for relR vectors: a RandomForest per target."""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_models.features import FEATURES

__all__ = ["RandomForestVector"]


class RandomForestVector:
    """the VAE-DNN papers' baseline: a RandomForest per target on the same inputs (features and
    one-hot source)."""

    def __init__(
        self, targets: list[str], sources: list[str], seed: int = 0, n_estimators: int = 200
    ):
        self.targets, self.sources, self.seed, self.n = targets, sources, seed, n_estimators
        self.models: dict[str, object] = {}

    def _x(self, rows: pl.DataFrame) -> np.ndarray:
        src = rows.get_column("source").to_list()
        onehot = np.array([[s == k for k in self.sources] for s in src], dtype=float)
        return np.hstack([rows.select(FEATURES).fill_null(0.0).to_numpy(), onehot])

    def fit(self, rows: pl.DataFrame) -> RandomForestVector:
        """Fit one RandomForest per target.

        Args:
            rows: vector samples.

        Returns:
            The fitted model.
        """
        from sklearn.ensemble import RandomForestRegressor  # models extra, imported on use

        X = self._x(rows)
        for t in self.targets:
            y = rows.get_column(f"y_{t}").to_numpy()
            ok = ~np.isnan(y)
            if ok.sum() >= 2:
                self.models[t] = RandomForestRegressor(
                    self.n, random_state=self.seed, n_jobs=1
                ).fit(X[ok], y[ok])
        return self

    def predict_vector(self, rows: pl.DataFrame) -> np.ndarray:
        """Predicted log relR to every target.

        Args:
            rows: rows with the feature columns and ``source``.

        Returns:
            One row per input row, one column per target.
        """
        X = self._x(rows)
        return np.column_stack(
            [
                self.models[t].predict(X) if t in self.models else np.zeros(len(X))
                for t in self.targets
            ]
        )
