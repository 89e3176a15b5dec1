"""t-SNE plots of sample embeddings, coloured by target (the paper's Figure 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def tsne_plot(
    embeddings: np.ndarray, labels, out: str | Path, *, title: str = "", seed: int = 0
) -> Path:
    """Write a PNG of a 2-D t-SNE of ``embeddings`` coloured by ``labels``; return its path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # plotting only; a heavy import

    # plotting only; a heavy import (no pyplot: no process-wide backend)
    from matplotlib.figure import Figure
    from sklearn.manifold import TSNE  # models extra, imported on use

    labels = np.asarray(labels)
    perplexity = float(min(30, max(2, (len(embeddings) - 1) // 3)))
    xy = TSNE(n_components=2, perplexity=perplexity, random_state=seed, init="pca").fit_transform(
        embeddings
    )
    fig = Figure(figsize=(6.5, 5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for lab in sorted(set(labels)):
        sel = labels == lab
        ax.scatter(xy[sel, 0], xy[sel, 1], s=14, label=f"{lab} ({sel.sum()})")
    ax.set_title(title or "t-SNE of sample embeddings")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    return out
