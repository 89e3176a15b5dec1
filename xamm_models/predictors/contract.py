"""The predictor contract: what every kind of the zoo answers, and how every kind is saved.

Every predictor is a :class:`Predictor`. It answers

* ``predict(profiles, source, targets)``: one row per (profile, target) with the columns of
  :data:`PREDICTION_COLUMNS` (``app`` and ``app_params`` only when the profiles carry them;
  ``relR_lo``/``relR_hi`` null for a kind without intervals, ``regime`` null for a kind that
  answers one way only);
* ``rank_targets(profiles, source, targets)``: the same rows ordered fastest first per profile,
  with ``rank`` (1 = fastest) and ``p_fastest`` (null without intervals).

Persistence follows huggingface_hub's ``ModelHubMixin`` contract
(:class:`~xamm_data.hub.models.VerifiedHubMixin`, which loads the Hub client only to talk to a Hub
or write a card): this base implements
``_save_pretrained`` and ``_from_pretrained`` once (the marker file with the kind and its format
version, the model card, the manifest of checksums), and a kind implements only
``_save_state`` / ``_load_state`` (its own files) and ``_card_body`` (its card's sections).
``from_pretrained`` first resolves the id the xamm way (a folder, the Hub at a pinned revision, the
embedded snapshot for ``xamm/<name>``, every file hash-checked) so no network is tried for a model
the package ships; it returns the class it is called on, or refuses a folder of another kind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import polars as pl

from xamm_data._version import __version__
from xamm_data.errors import type_name
from xamm_data.hub.models import VerifiedHubMixin
from xamm_data.identifiers import first_repeated
from xamm_models.errors import SavedFormatError, WrongKindError
from xamm_models.predictors.cards import card_datasets_and_metrics, metrics_table
from xamm_models.predictors.kinds import kind_of, loading, resolve_folder

if TYPE_CHECKING:
    from huggingface_hub import ModelCard

#: The columns of every ``predict`` answer, in order (``app``/``app_params`` when given).
PREDICTION_COLUMNS: tuple[str, ...] = (
    "row",
    "app",
    "app_params",
    "source",
    "target",
    "relR",
    "relR_lo",
    "relR_hi",
    "regime",
)
#: What ``rank_targets`` adds to them.
RANK_COLUMNS: tuple[str, ...] = ("p_fastest", "rank")
_HUB_ARGS = ("cache_dir", "force_download", "local_files_only", "token")


@runtime_checkable
class PredictsRelR(Protocol):
    """What a caller may rely on, whatever the kind (structural: any object with these two)."""

    def predict(
        self, profiles: pl.DataFrame, source: str, targets: list[str] | None = None, **kw: Any
    ) -> pl.DataFrame: ...

    def rank_targets(
        self, profiles: pl.DataFrame, source: str, targets: list[str] | None = None, **kw: Any
    ) -> pl.DataFrame: ...


def conform(answer: pl.DataFrame, regime: str | pl.Expr | None = None) -> pl.DataFrame:
    """``answer`` (``row``, naming columns, ``source``, ``target``, ``relR`` and whichever of
    ``relR_lo``, ``relR_hi``, ``regime`` the kind has) with every contract column, in order.

    Args:
        answer: a kind's predictions.
        regime: the ``regime`` to set when ``answer`` has none (a name, an expression, or null).

    Returns:
        The frame with :data:`PREDICTION_COLUMNS` (missing naming columns left out), sorted by
        ``row`` then ``target``.
    """
    fill = {
        "relR_lo": pl.lit(None, pl.Float64),
        "relR_hi": pl.lit(None, pl.Float64),
        "regime": regime if isinstance(regime, pl.Expr) else pl.lit(regime, pl.String),
    }
    out = answer.with_columns(
        [e.alias(c) for c, e in fill.items() if c not in answer.columns]
    ).with_columns(
        pl.col("row").cast(pl.Int64),
        pl.col("relR", "relR_lo", "relR_hi").cast(pl.Float64),
        pl.col("regime").cast(pl.String),
    )
    return out.select([c for c in PREDICTION_COLUMNS if c in out.columns]).sort("row", "target")


def rank(
    answer: pl.DataFrame, coverage: float | None, seed: int, draws: int = 4000
) -> pl.DataFrame:
    """Targets per profile, ranked: ``p_fastest``, the probability that the target is the fastest,
    and ``rank``. The contenders, whose intervals reach below the best upper bound of any target
    (none of them is known to be slower than another), rank first, by ``p_fastest``: rank 1 is the
    most likely fastest, and among them rank and ``p_fastest`` always agree. The others follow by
    predicted relR (their ``p_fastest`` is the chance of a draw beyond their interval, and orders
    nothing); so do all when the answer has no intervals (``p_fastest`` null).

    Each interval is read as a split normal in log10 relR: below the prediction the spread its
    lower bound says, above it the spread of its upper bound (a whole program's interval is rarely
    symmetric). Draws are seeded Monte Carlo.

    Args:
        answer: a ``predict`` answer (:data:`PREDICTION_COLUMNS`), every profile asked for the same
            targets.
        coverage: the intervals' stated coverage (None: no intervals).
        seed: the Monte Carlo generator's seed.
        draws: Monte Carlo draws per profile.

    Returns:
        ``answer`` with ``p_fastest`` and ``rank``, sorted by ``row`` then rank.
    """
    p = answer.sort("row", "target")
    lo = p.get_column("relR_lo")
    if coverage is None or p.is_empty() or lo.null_count() > 0:
        p = p.with_columns(pl.lit(None, pl.Float64).alias("p_fastest"))
    else:
        k = p.filter(pl.col("row") == p.get_column("row")[0]).height
        shape = (-1, k)
        rel = p.get_column("relR").to_numpy().reshape(shape)
        z = NormalDist().inv_cdf(0.5 + coverage / 2)
        mu = np.log10(rel)
        sd_lo = np.log10(rel / p.get_column("relR_lo").to_numpy().reshape(shape)) / z
        sd_hi = np.log10(p.get_column("relR_hi").to_numpy().reshape(shape) / rel) / z
        wins = _wins(mu, sd_lo, sd_hi, np.random.default_rng(seed).standard_normal((draws, k)))
        p = p.with_columns(pl.Series("p_fastest", wins.reshape(-1)))
    contender = (pl.col("relR_lo") <= pl.col("relR_hi").min().over("row")).fill_null(False)
    by_p = pl.when(contender).then(pl.col("p_fastest").fill_null(-1.0)).otherwise(-2.0)
    return (
        p.with_columns(by_p.alias("_by_p"))
        .sort(["row", "_by_p", "relR"], descending=[False, True, False])
        .drop("_by_p")
        .with_columns(pl.int_range(1, pl.len() + 1).over("row").alias("rank"))
    )


#: the draws of a few profiles at a time, about this many bytes: held in the processor's cache
#: while they are drawn, compared and counted
_CHUNK_BYTES = 1 << 21


def _wins(mu: np.ndarray, sd_lo: np.ndarray, sd_hi: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Per profile and target, the share of the draws in which the target is the fastest.

    Args:
        mu: log10 relR, one row per profile, one column per target.
        sd_lo: the spread below ``mu`` (same shape).
        sd_hi: the spread above ``mu``.
        noise: standard normal draws, one row per draw, one column per target (shared by every
            profile).
    """
    draws, k = noise.shape
    below = noise < 0
    wins = np.zeros_like(mu)
    step = max(1, _CHUNK_BYTES // max(1, draws * k * 8))
    for i in range(0, mu.shape[0], step):
        x = np.where(below, sd_lo[i : i + step, None, :], sd_hi[i : i + step, None, :])
        np.multiply(x, noise, out=x)
        np.add(x, mu[i : i + step, None, :], out=x)
        best = x.argmin(axis=2)
        m = best.shape[0]
        counts = np.bincount((best + k * np.arange(m)[:, None]).ravel(), minlength=m * k)
        wins[i : i + step] = counts.reshape(m, k) / draws
    return wins


def no_other_options(model: object, kw: dict[str, Any]) -> None:
    """Refuse options a kind's ``predict`` does not take: the contract's signature ends in
    ``**kw`` (so every kind is called the same way), and an option no kind reads is the caller's
    mistake, never ignored.

    Args:
        model: the predictor.
        kw: the options left after the kind took its own.

    Raises:
        TypeError: naming the options and the kind.
    """
    if kw:
        raise TypeError(
            f"{type(model).__name__}.predict() takes no option {', '.join(map(repr, sorted(kw)))}"
        )


def asked_targets(targets: object, every: Iterable[str]) -> list[str]:
    """The targets a ``predict`` call asked for, the same way for every kind: None is ``every``;
    one machine named alone is that machine (not a list of its letters).

    Args:
        targets: what the caller passed as ``targets``.
        every: the kind's targets when none are named.

    Raises:
        TypeError: ``targets`` is neither a name nor a list of names.
        ValueError: an empty list (None asks for every target), or a target named twice (it
            would be ranked against itself).
    """
    if targets is None:
        return list(every)
    if isinstance(targets, str):
        return [targets]
    if isinstance(targets, (bytes, dict)) or not isinstance(targets, Iterable):
        raise TypeError(
            f"targets: {type_name(targets, article=True)}; expected a machine name "
            "('lassen:gpu') or a list of them (None: every target)"
        )
    asked = list(targets)
    if not asked:
        raise ValueError("targets: an empty list names no machine (None asks for every target)")
    # what is not text, the kind refuses by name
    if (twice := first_repeated(t for t in asked if isinstance(t, str))) is not None:
        raise ValueError(f"targets: {twice!r} is named twice; name each target once")
    return asked


class Predictor(VerifiedHubMixin):
    """The base of every predictor kind (see the module docstring).

    A kind sets :attr:`kind` (its zoo name), :attr:`marker` (the JSON file its saved folder is known
    by) and :attr:`format_version`, and implements :meth:`predict`, :meth:`_save_state`,
    :meth:`_load_state` and :meth:`_card_body`.
    """

    kind: ClassVar[str] = ""
    marker: ClassVar[str] = ""
    #: The saved layout this class writes; folders of a higher version are refused.
    format_version: ClassVar[int] = 1
    #: Earlier saved layouts this class still reads, each upgraded in place by ``_upgrade``.
    reads_versions: ClassVar[tuple[int, ...]] = ()
    card_tags: ClassVar[tuple[str, ...]] = ()
    #: What a store handed to ``xamm predict`` gives this kind as profiles: ``"app_samples"`` (the
    #: stored application samples) or ``"kernels"`` (the RAJAPerf kernels measured on the source).
    store_profiles: ClassVar[str] = "app_samples"

    # -- answering ----------------------------------------------------------------------------
    def predict(
        self, profiles: pl.DataFrame, source: str, targets: list[str] | None = None, **kw: Any
    ) -> pl.DataFrame:
        """relR (runtime on target / runtime on ``source``) of each profile on each target.

        Args:
            profiles: one row per profile measured on ``source`` (the kind's feature columns).
            source: the machine (``machine:device``) the profiles were measured on.
            targets: the machines to answer for (None: every target the model knows).
            **kw: kind-specific options (e.g. ``target_benchmarks``).

        Returns:
            One row per (profile, target) with :data:`PREDICTION_COLUMNS`.
        """
        raise NotImplementedError

    @property
    def interval_coverage(self) -> float | None:
        """The stated coverage of the ``relR_lo``/``relR_hi`` interval (None: no intervals)."""
        return None

    @property
    def rank_seed(self) -> int:
        """The seed of :meth:`rank_targets`' Monte Carlo."""
        return 0

    def rank_targets(
        self,
        profiles: pl.DataFrame,
        source: str,
        targets: list[str] | None = None,
        *,
        draws: int = 4000,
        **kw: Any,
    ) -> pl.DataFrame:
        """Targets per profile, fastest first, with ``rank`` and ``p_fastest``.

        Args:
            profiles: as for :meth:`predict`.
            source: as for :meth:`predict`.
            targets: as for :meth:`predict`.
            draws: Monte Carlo draws per profile for ``p_fastest``.
            **kw: passed to :meth:`predict`.

        Returns:
            :meth:`predict`'s rows sorted by ``row`` and ``relR``, with ``p_fastest`` and ``rank``.
        """
        answer = self.predict(profiles, source, targets, **kw)
        return rank(answer, self.interval_coverage, self.rank_seed, draws)

    # -- persistence --------------------------------------------------------------------------
    def _save_state(self, folder: Path) -> dict:
        """Write the kind's own files into ``folder``; return what the marker file records."""
        raise NotImplementedError

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **init_kwargs: Any) -> Predictor:
        """The predictor saved in ``folder``, whose marker file holds ``info``."""
        raise NotImplementedError

    @classmethod
    def _upgrade(cls, info: dict, version: int) -> dict:
        """``info`` of a folder saved in an earlier ``version`` (one of :attr:`reads_versions`), in
        the current layout."""
        return info

    def _save_pretrained(self, save_directory: Path) -> None:
        d = Path(save_directory)
        d.mkdir(parents=True, exist_ok=True)
        info = {
            "format": {"kind": self.kind, "version": self.format_version},
            **self._save_state(d),
            "xamm_version": __version__,
        }
        text = json.dumps(info, indent=1, sort_keys=True, default=str) + "\n"
        (d / self.marker).write_text(text)
        self.card().save(d / "README.md")

    @classmethod
    def read_info(cls, folder: Path, where: str) -> dict:
        """The marker file of a saved ``folder``, checked for kind and format version.

        Args:
            folder: the saved folder.
            where: how to name it in errors (the id it was asked by).

        Returns:
            The marker's content in the current layout.
        """
        path = Path(folder) / cls.marker
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise SavedFormatError(f"{where}: {cls.marker} is not JSON ({e})") from None
        fmt = info.pop("format", {"kind": cls.kind, "version": 0}) if type(info) is dict else None
        if not isinstance(fmt, dict):
            raise SavedFormatError(
                f"{where}: {cls.marker} is not a JSON object with a format object; expected what "
                "save_pretrained writes"
            )
        version = fmt.get("version")
        if fmt.get("kind") != cls.kind:
            raise SavedFormatError(
                f"{where}: {cls.marker} says kind {fmt.get('kind')!r}, expected {cls.kind!r}"
            )
        if version == cls.format_version:
            return info
        if version in cls.reads_versions:
            return cls._upgrade(info, version)
        newer = isinstance(version, int) and version > cls.format_version
        raise SavedFormatError(
            f"{where}: {cls.marker} is format version {version} of {cls.kind!r}; this xamm "
            f"({__version__}) reads versions {[*cls.reads_versions, cls.format_version]}"
            + (
                "; upgrade xamm"
                if newer
                else "; fit and save it again with this xamm (`xamm zoo build` rebuilds the zoo's)"
            )
        )

    @classmethod
    def _from_pretrained(
        cls,
        *,
        model_id: str,
        revision: str | None = None,
        cache_dir: Any = None,
        force_download: bool = False,
        local_files_only: bool = False,
        token: str | bool | None = None,
        **init_kwargs: Any,
    ) -> Predictor:
        d = resolve_folder(
            model_id,
            revision=revision,
            cache_dir=cache_dir,
            force_download=force_download,
            local_files_only=local_files_only,
            token=token,
        )
        return cls._load_state(d, cls.read_info(d, model_id), **init_kwargs)

    @classmethod
    def from_pretrained(
        cls, pretrained_model_name_or_path: str | Path, *, revision: str | None = None, **kwargs
    ):
        """A saved predictor of this class, by folder or Hub repo id.

        Args:
            pretrained_model_name_or_path: a folder, a Hub repo id, or ``xamm/<name>`` (the
                embedded snapshot's copy when nothing is pinned on the Hub).
            revision: the Hub revision (branch, tag or commit).
            **kwargs: huggingface_hub's ``cache_dir``, ``force_download``, ``local_files_only``,
                ``token``.

        Returns:
            An instance of this class. On the base class, the kind the folder holds
            (:func:`xamm_models.zoo.load_model`).

        Raises:
            WrongKindError: the folder holds another kind of predictor.
        """
        model_id = str(pretrained_model_name_or_path)
        hub = {k: kwargs[k] for k in _HUB_ARGS if k in kwargs}
        d = resolve_folder(model_id, revision=revision, **hub)
        held = kind_of(d, model_id)
        with loading(d):  # resolved and verified once: the calls below take the folder as is
            if cls.kind == "":
                return held.load_class().from_pretrained(str(d), **kwargs)
            if held.name != cls.kind:
                raise WrongKindError(
                    f"{model_id} holds a {held.name!r} predictor ({held.marker}), not a "
                    f"{cls.kind!r} one: load it with {held.cls.rpartition(':')[2]}.from_pretrained "
                    "or xamm_models.zoo.load_model"
                )
            return super().from_pretrained(str(d), **kwargs)

    # -- the card -----------------------------------------------------------------------------
    def _card_body(self) -> tuple[str, str]:
        """The card's title and its Markdown body (sections after the title)."""
        raise NotImplementedError

    @property
    def card_training(self) -> dict:
        """The training record the card's ``datasets`` and metrics come from."""
        return getattr(self, "training", {}) or {}

    def card(self) -> ModelCard:
        """The model card, from the one template every kind shares: Hub metadata, title, the kind's
        sections, the official splits' metrics and the saved format."""
        # huggingface_hub's card engine: only a saved or pushed model writes its card
        from huggingface_hub import ModelCard

        title, body = self._card_body()
        t = self.card_training
        tags = ", ".join(["xamm", "hpc", "performance-prediction", *self.card_tags])
        return ModelCard(
            "---\n"
            "library_name: xamm\n"
            f"tags: [{tags}]\n"
            "pipeline_tag: tabular-regression\n"
            "license: bsd-3-clause\n"
            f"{card_datasets_and_metrics(f'xamm-{self.kind}', t)}---\n\n"
            f"# {title}\n\n{body.strip()}\n\n"
            f"## Metrics on the official splits\n{metrics_table(t.get('metrics') or {})}\n\n"
            "## Format\n"
            f"xamm predictor kind `{self.kind}`, saved format version {self.format_version} "
            f"(`{self.marker}`); load with `xamm_models.zoo.load_model` or "
            f"`{type(self).__name__}.from_pretrained`.\n"
        )


__all__ = [
    "PREDICTION_COLUMNS",
    "RANK_COLUMNS",
    "PredictsRelR",
    "Predictor",
    "asked_targets",
    "conform",
    "rank",
]
