"""The VAE-DNN papers' metrics of relR vectors (one vector per sample: its log relR to every
target): R² over all entries and within each target, the share of vectors whose targets are
ordered right, and the ROC of the most common ordering; with the ROC figure."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl

__all__ = ["plot_roc", "vector_metrics", "vector_metrics_from_pairs"]


def _r2(y: np.ndarray, p: np.ndarray) -> float | None:
    if len(y) < 3 or np.var(y) < 1e-12:
        return None
    return float(1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2))


def vector_metrics(Y: np.ndarray, P: np.ndarray, M: np.ndarray, targets: list[str]) -> dict:
    """The VAE-DNN papers' metrics (see the module docstring).

    Args:
        Y: truths, log relR per sample and target.
        P: predictions, same shape.
        M: where a truth exists.
        targets: the targets, in column order.

    Returns:
        Metric -> value.
    """
    within = [r for j in range(Y.shape[1]) if (r := _r2(Y[M[:, j], j], P[M[:, j], j])) is not None]
    rows = [i for i in range(len(Y)) if M[i].sum() >= 2]
    same = [
        tuple(np.flatnonzero(M[i])[np.argsort(Y[i, M[i]], kind="stable")])
        == tuple(np.flatnonzero(M[i])[np.argsort(P[i, M[i]], kind="stable")])
        for i in rows
    ]
    out = {
        "r2_seed": _r2(Y[M], P[M]),
        "r2_within_target": float(np.mean(within)) if within else None,
        "ordering_accuracy": float(np.mean(same)) if same else None,
        "n_vectors": len(Y),
    }
    out.update(_roc(Y, P, M, targets))
    return out


def _roc(Y, P, M, targets) -> dict:
    sets = Counter(tuple(np.flatnonzero(m)) for m in M if m.sum() >= 3)
    if not sets:
        return {"auc": None, "positive_order": None, "roc": None}
    tset = np.array(sets.most_common(1)[0][0])
    rows = np.flatnonzero((M[:, tset].all(axis=1)) & (M.sum(axis=1) == len(tset)))
    orders = [tuple(tset[np.argsort(Y[i, tset], kind="stable")]) for i in rows]
    positive = Counter(orders).most_common(1)[0][0]
    label = np.array([o == positive for o in orders])
    pos = list(positive)
    margin = np.min(P[np.ix_(rows, pos[1:])] - P[np.ix_(rows, pos[:-1])], axis=1)
    if label.all() or not label.any():
        return {"auc": None, "positive_order": [targets[j] for j in positive], "roc": None}
    from sklearn.metrics import roc_auc_score, roc_curve  # models extra, imported on use

    fpr, tpr, _ = roc_curve(label, margin)
    return {
        "auc": float(roc_auc_score(label, margin)),
        "positive_order": [targets[j] for j in positive],
        "positive_share": float(label.mean()),
        "roc": {"fpr": fpr.tolist(), "tpr": tpr.tolist()},
    }


def vector_metrics_from_pairs(frame: pl.DataFrame) -> dict:
    """:func:`vector_metrics` of an evaluator frame (``sample``, ``source``, ``target``, ``y_true``,
    ``y_pred``): its pairs regrouped into one vector per (sample, source) over the targets it
    has."""
    targets = sorted(set(frame.get_column("target")))
    wide = [
        frame.select("sample", "source", "target", pl.col(c).log())
        .pivot(on="target", index=["sample", "source"], values=c, aggregate_function="first")
        .sort("sample", "source")
        for c in ("y_true", "y_pred")
    ]
    Y, P = (
        w.select(
            [pl.col(t) if t in w.columns else pl.lit(None, pl.Float64).alias(t) for t in targets]
        )
        .to_numpy()
        .astype(float)
        for w in wide
    )
    return vector_metrics(Y, P, ~np.isnan(Y), targets)


def plot_roc(
    curves: dict[str, dict | None], path, title: str = "ROC, most common ordering as positive"
) -> None:
    """the VAE-DNN papers' ROC figure: one curve per model (``{"fpr": [...], "tpr": [...]}``, or
    None to leave it out)."""
    import matplotlib  # models extra, imported on use

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    fig, ax = plt.subplots(figsize=(5, 4.6), dpi=100)
    for name, roc in curves.items():
        if roc:
            ax.plot(roc["fpr"], roc["tpr"], label=name)
    ax.plot([0, 1], [0, 1], "r--", label="random")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
