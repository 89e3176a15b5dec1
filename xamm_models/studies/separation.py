"""Do embeddings separate machines? A nearest-centroid classifier on held-out benchmark samples.

Every third sample of each target (in key order) is held out; the embedder is fitted on the others
only; each held-out sample is assigned the target whose training centroid is nearest (Euclidean).
The same is done on the raw features (standardised with the training statistics, missing values
set to the training mean), which is the baseline the embeddings must beat.
"""

from __future__ import annotations

import numpy as np
import polars as pl


def split_holdout(samples: pl.DataFrame, every: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    idx = pl.int_range(pl.len()).over("target")
    s = samples.with_columns(idx.alias("_i"))
    return s.filter(pl.col("_i") % every != every - 1).drop("_i"), s.filter(
        pl.col("_i") % every == every - 1
    ).drop("_i")


def nearest_centroid_accuracy(
    train_X: np.ndarray, train_y: np.ndarray, test_X: np.ndarray, test_y: np.ndarray
) -> float:
    labels = np.unique(train_y)
    cents = np.stack([train_X[train_y == t].mean(axis=0) for t in labels])
    d = ((test_X[:, None, :] - cents[None, :, :]) ** 2).sum(-1)
    return float((labels[d.argmin(1)] == test_y).mean())


def separation_report(
    samples: pl.DataFrame,
    kernels: list[str],
    embedder_name: str = "attention",
    *,
    epochs: int = 200,
    seed: int = 0,
    embed_dim: int = 8,
) -> dict:
    """Nearest-centroid accuracy on held-out samples: raw features vs the embedder's
    embeddings.

    Args:
        samples: wide benchmark samples.
        kernels: the feature columns.
        embedder_name: the embedder to train.
        epochs: its epochs.
        seed: the seed.
        embed_dim: its embedding size.

    Returns:
        Accuracies by representation.
    """
    from xamm_models.embedders import create_embedder  # imports torch: loaded on use

    train, test = split_holdout(samples)
    ytr, yte = train.get_column("target").to_numpy(), test.get_column("target").to_numpy()
    Xtr, Xte = (
        train.select(kernels).to_numpy().astype(float),
        test.select(kernels).to_numpy().astype(float),
    )
    mu, sd = np.nanmean(Xtr, 0), np.nanstd(Xtr, 0)
    sd = np.where(sd < 1e-12, 1, sd)
    raw_tr, raw_te = np.nan_to_num((Xtr - mu) / sd), np.nan_to_num((Xte - mu) / sd)
    emb = create_embedder(
        embedder_name,
        n_features=len(kernels),
        feature_names=kernels,
        embed_dim=embed_dim,
        seed=seed,
    )
    emb.fit(train, epochs=epochs)
    return {
        "targets": int(len(np.unique(ytr))),
        "train_samples": int(len(ytr)),
        "test_samples": int(len(yte)),
        "raw_accuracy": nearest_centroid_accuracy(raw_tr, ytr, raw_te, yte),
        f"{embedder_name}_accuracy": nearest_centroid_accuracy(
            emb.transform(train), ytr, emb.transform(test), yte
        ),
    }
