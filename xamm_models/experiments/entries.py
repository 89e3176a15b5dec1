"""The benchmark's entries: baselines, the xAMM pipeline's variants and the controls, in one
registry.

An entry maps a :class:`FoldContext` to predicted relR for the fold's test pairs. Every entry sees
only what the fold allows: the training pairs, and machine data (benchmark samples, AMMs) without
the test kernels (:meth:`FoldContext.amm_embeddings` asserts it). ``list_entries("baseline/*")``
lists them.

Experiments (the paper's): 1 raw features vs attention + AMMs per regressor; 2 sample embedders;
3 with vs without AMMs, and the random-vector control; 4 AMM aggregation. Baselines run in every
one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from xamm_data.registry import Registry
from xamm_models.benchmark import baselines as B
from xamm_models.benchmark.splits import SCHEMES
from xamm_models.features import FEATURES
from xamm_models.machines.attention import make_signature
from xamm_models.machines.physics import physics_signatures
from xamm_models.machines.samples import align_kernels, benchmark_samples
from xamm_models.machines.similarity import nearest
from xamm_models.predictors.default.model import StackedPredictor
from xamm_models.predictors.default.neighbours import CANDIDATES
from xamm_models.predictors.default.stacked import (
    MIN_PAIR_KERNELS,
    VARIANTS,
    StackedModel,
    log_prior,
    split_relr,
)
from xamm_models.predictors.paper.regressors import list_regressors
from xamm_models.predictors.vector_baselines import RandomForestVector


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # "baseline", "xamm" or "control"
    experiments: frozenset[int]
    # relR, or (relR, lower, upper) to have the interval scored
    predict: Callable[[FoldContext], np.ndarray | tuple[np.ndarray, ...]]
    schemes: frozenset[str] = frozenset(SCHEMES)
    description: str = ""


ENTRIES: Registry[Entry] = Registry("entry")
BASELINES = (
    "baseline/pair-median",
    "baseline/pair-size-median",
    "baseline/roofline",
    "baseline/knn",
    "baseline/most-similar-machine",
    "baseline/random-forest-vector",
)  # simplest first
# (data version, machine data exclusions, held-out machine, settings) -> AMM embeddings
_AMM_CACHE: dict = {}
ALL = frozenset({1, 2, 3, 4})
# what a test pair's answer is scored against, never shown to an entry
LABELS = ("relR", "runtime_target")
TRUTH_KEYS = ("sample", "app", "source", "target")
NO_LOMO = frozenset({"kernel-group", "kernel"})
MACHINE = frozenset({"machine"})
# the VAE-DNN entry's DNN minibatches per embedder epoch (see vector_model)
VAE_DNN_STEPS_PER_EPOCH = 24


def entry(name: str, kind: str, experiments=ALL, schemes=None, description: str = ""):
    """Decorator: register a prediction function as an entry of the benchmark.

    Args:
        name: the entry's name (``kind/what``).
        kind: ``baseline``, ``xamm``, ``control``, ...
        experiments: the paper's experiments the entry belongs to.
        schemes: the schemes it runs in (default: all).
        description: one line, shown in the results.

    Returns:
        The decorator, which returns the function unchanged.
    """

    def deco(fn):
        ENTRIES.add(
            name,
            Entry(
                name,
                kind,
                frozenset(experiments),
                fn,
                frozenset(schemes or SCHEMES),
                description or (fn.__doc__ or "").strip().splitlines()[0],
            ),
        )
        return fn

    return deco


def list_entries(pattern: str = "*") -> list[str]:
    """Registered entry names.

    Args:
        pattern: a shell-style pattern (``"baseline/*"``).

    Returns:
        The matching names, sorted.
    """
    return ENTRIES.list(pattern)


@dataclass
class FoldContext:
    """One fold's view: the training pairs, the test pairs without their labels (:data:`LABELS`;
    ``truth`` holds them for the scorer), machine data without the test kernels, and a model
    cache."""

    ds: object
    fold: object
    epochs: int = 50
    seed: int = 0
    amm_min_coverage: float = 0.5
    cache: dict = field(default_factory=dict)

    def __post_init__(self):
        self.train, test = self.fold.frames(self.ds.pairs)
        # an entry answers the test pairs without their labels; only the scorer holds them
        self.truth = test.select(*TRUTH_KEYS, pl.col("relR").alias("y_true"))
        self.test = test.drop(*LABELS)
        hidden = list(self.fold.machine_exclude)
        self.samples = self.ds.samples.filter(~pl.col("app").is_in(hidden))
        self.runs = self.ds.config_runs.filter(~pl.col("kernel").is_in(hidden))

    def amm_embeddings(self):
        """The attention AMM embedder trained without the test kernels, applied.

        Returns:
            ``(embeddings and samples per target, kernels)``.
        """
        key = (
            self.ds.version,
            self.fold.machine_exclude,
            self.fold.held_out_machine,
            self.epochs,
            self.seed,
            self.amm_min_coverage,
        )
        if key not in _AMM_CACHE:
            _AMM_CACHE.clear()  # folds of one group come together: one entry is enough
            _AMM_CACHE[key] = self._fit_amm_embeddings()
        return _AMM_CACHE[key]

    def _fit_amm_embeddings(self):
        """Train the attention AMM embedder on the fold's machine data and embed every target's
        samples."""
        from xamm_models.embedders import create_embedder  # imports torch: loaded on use

        kernels = align_kernels(self.runs, "union", min_coverage=self.amm_min_coverage)
        leak = set(kernels) & set(self.fold.test_kernels)
        assert not leak, f"AMM kernels overlap the test fold: {sorted(leak)}"
        samples = benchmark_samples(self.runs, kernels)
        held = self.fold.held_out_machine
        # a held-out machine is new: the embedder never trains on its runs, it only embeds them
        fit_on = samples.filter(pl.col("machine") != held) if held else samples
        emb = create_embedder(
            "attention", n_features=len(kernels), feature_names=kernels, seed=self.seed
        )
        emb.fit(fit_on, epochs=self.epochs)
        return (
            {
                t: (emb.transform(p), p)
                for (t,), p in samples.group_by(["target"], maintain_order=True)
            },
            kernels,
        )

    def signatures(self, aggregation: str = "l2") -> dict:
        """The fold's AMM signatures (not registered), made as every signature is.

        Args:
            aggregation: Algorithm 1's aggregation.

        Returns:
            Target -> signature.
        """
        key = f"sig/{aggregation}"
        if key not in self.cache:
            embs, kernels = self.amm_embeddings()
            self.cache[key] = {
                t: make_signature(
                    t,
                    part,
                    E,
                    kernels,
                    aggregation=aggregation,
                    normalise="divide",
                    embedder_id="attention.fold",
                    embedder_revision="fold",
                )
                for t, (E, part) in embs.items()
            }
        return self.cache[key]

    def random_signatures(self) -> dict:
        """The control: each target's AMM replaced by a seeded random vector of the same length
        and norm.

        Returns:
            Target -> signature.
        """
        rng = np.random.default_rng(self.seed + 7919)
        out = {}
        for t, s in sorted(self.signatures("l2").items()):
            v = rng.standard_normal(len(s.vector))
            out[t] = s.model_copy(
                update={"vector": list(v / np.linalg.norm(v) * np.linalg.norm(s.vector))}
            )
        return out

    def model(
        self,
        *,
        regressor: str = "xgboost",
        embedder: str = "attention",
        use_embedder: bool = True,
        aggregation: str = "l2",
        random_amm: bool = False,
        heads: tuple[str, ...] = ("amm",),
    ):
        """A paper predictor fitted on the fold's training pairs (cached by its settings). One
        sample embedder per (embedder, use_embedder) serves every regressor and AMM variant.

        Args:
            regressor: the downstream regressor.
            embedder: the sample embedder.
            use_embedder: False feeds the raw standardised features downstream.
            aggregation: Algorithm 1's aggregation of the AMMs.
            random_amm: replace each AMM by a seeded random vector of the same norm (the control).
            heads: the regressors to fit (``amm``, ``noamm``).

        Returns:
            The fitted predictor.
        """
        key = ("model", regressor, embedder, use_embedder, aggregation, random_amm, heads)
        if key not in self.cache:
            # imports torch: loaded on use
            from xamm_models.predictors.paper.predictor import PredictorConfig, XammPredictor

            cfg = PredictorConfig(
                feature_columns=list(FEATURES),
                epochs=self.epochs,
                seed=self.seed,
                regressor=regressor,
                embedder=embedder,
                use_embedder=use_embedder,
            )
            sigs = (
                self.random_signatures()
                if random_amm
                else (self.signatures(aggregation) if "amm" in heads else {})
            )
            m = XammPredictor(cfg)
            ekey = ("embedder", embedder, use_embedder)
            if ekey not in self.cache:
                self.cache[ekey] = m.fit_embedder(self.train)
            self.cache[key] = (
                m.fit_pairs(self.train, sigs, embedder=self.cache[ekey], heads=heads),
                sigs,
            )
        return self.cache[key]

    def xamm(self, *, use_amm: bool = True, **kw) -> np.ndarray:
        """The paper predictor's relR for the test pairs.

        Args:
            use_amm: answer with the AMM model where both ends have signatures.
            **kw: :meth:`model`'s settings.

        Returns:
            Predicted relR, one per test pair of the fold.
        """
        m, sigs = self.model(**kw)
        return m.predict_pairs(self.test, use_amm=use_amm, target_signatures=sigs)

    def physics(self) -> dict:
        """The fold's physics signatures, from its machine data (never the test kernels).

        Returns:
            Target -> signature.
        """
        if "physics" not in self.cache:
            self.cache["physics"] = physics_signatures(self.samples)
        return self.cache["physics"]

    def stacked(
        self, variant: str, min_pair_kernels: int = MIN_PAIR_KERNELS, *, random_amm: bool = False
    ) -> np.ndarray:
        """The stacked model's relR for the test pairs.

        Args:
            variant: one :data:`~xamm_models.predictors.default.stacked.VARIANTS` variant.
            min_pair_kernels: the residual's gate.
            random_amm: the attention AMMs replaced by the control's random vectors.

        Returns:
            Predicted relR, one per test pair of the fold.
        """
        amms = (
            (self.random_signatures() if random_amm else self.signatures("l2"))
            if "attention" in variant
            else None
        )
        model = StackedModel(variant, self.seed, min_pair_kernels).fit(
            self.physics(), self.train, amms
        )
        return model.predict(self.physics(), self.test, amms)

    def default_model(self, **config):
        """The default predictor fitted on the fold. Under a held-out machine it never sees that
        machine's runs in fitting: they come in at prediction time as ``target_benchmarks``, as a
        new machine's would.

        Args:
            **config: :class:`~xamm_models.predictors.default.model.StackedConfig` settings.

        Returns:
            ``(predictor, the held-out machine's benchmark samples or None)``.
        """
        key = ("default", tuple(sorted(config.items())))
        if key not in self.cache:
            held = self.fold.held_out_machine
            known = self.samples.filter(pl.col("machine") != held) if held else self.samples
            bench = self.samples.filter(pl.col("machine") == held) if held else None
            model = StackedPredictor(seed=self.seed, **config).fit(self.train, known)
            self.cache[key] = (model, bench)
        return self.cache[key]

    def default(self, **config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """xamm's default predictor fitted on the fold (model and intervals chosen on inner folds
        of the training pairs), answering the test pairs.

        Args:
            **config: :class:`~xamm_models.predictors.default.model.StackedConfig` settings.

        Returns:
            ``(relR, lower, upper)``, one per test pair.
        """
        model, bench = self.default_model(**config)
        p = model.predict_pairs(self.test, target_benchmarks=bench)
        return tuple(p.get_column(c).to_numpy() for c in ("relR", "relR_lo", "relR_hi"))

    def most_similar_machine(self) -> np.ndarray:
        """A new machine treated as the most similar known one: each test target is replaced by
        the known target of its device kind whose benchmark times are nearest kernel by kernel
        (:func:`~xamm_models.machines.similarity.nearest`), and the default predictor answers
        for that (relR 1 where the stand-in is the source itself).

        Returns:
            Predicted relR, one per test pair.
        """
        model, bench = self.default_model()
        held = self.fold.held_out_machine
        known = self.samples.filter(pl.col("machine") != held) if held else self.samples
        sigs = {**model.signatures, **(physics_signatures(bench) if bench is not None else {})}
        stand_in = {
            t: nearest(t, part, known, sigs)[0]
            for (t,), part in (bench if bench is not None else known.clear()).group_by(["target"])
        }
        test = self.test.with_columns(pl.col("target").replace(stand_in))
        same = (test.get_column("source") == test.get_column("target")).to_numpy()
        out = np.ones(test.height)
        if (~same).any():
            out[~same] = (
                model.predict_pairs(test.filter(pl.Series(~same))).get_column("relR").to_numpy()
            )
        return out

    def baseline(self, fn) -> np.ndarray:
        """A baseline's relR for the test pairs, from the machine data the fold may see.

        Args:
            fn: a registered baseline function (:data:`~xamm_models.benchmark.baselines.BASELINES`).

        Returns:
            Predicted relR, one per test pair of the fold.
        """
        return fn(self.train, self.test, samples=self.samples, features=list(FEATURES))

    def vector_model(self, kind: str) -> np.ndarray:
        """A VAE-DNN papers' vector model trained on the fold's training pairs as vector
        samples over every target of the data set, each test pair read from its (sample, source)
        vector.

        Args:
            kind: ``vae-dnn`` or ``random-forest``.

        Returns:
            Predicted relR, one per test pair of the fold.
        """
        from xamm_models.predictors.vae_dnn import VaeDnn, vector_samples  # torch: loaded on use

        targets = sorted(
            set(self.ds.pairs.get_column("target")) | set(self.ds.pairs.get_column("source"))
        )
        train = vector_samples(self.train, targets)
        sources = sorted(set(train.get_column("source")))
        # the embedders' epoch setting scales the VAE-DNN's: 50 -> 150 VAE epochs and 1,200 DNN
        # minibatches, a budget that does not grow with the data set, so the evaluation keeps its
        # time (docs/decisions.md, "The VAE-DNN's step budget")
        model = (
            VaeDnn(
                targets,
                sources,
                seed=self.seed,
                vae_epochs=3 * self.epochs,
                dnn_steps=VAE_DNN_STEPS_PER_EPOCH * self.epochs,
            )
            if kind == "vae-dnn"
            else RandomForestVector(targets, sources, seed=self.seed)
        ).fit(train)
        rows = vector_samples(self.test, targets)
        P = model.predict_vector(rows)
        wide = rows.select("sample", "source").with_columns(
            *[pl.Series(t, P[:, j]) for j, t in enumerate(targets)]
        )
        long = wide.unpivot(index=["sample", "source"], variable_name="target", value_name="_y")
        got = self.test.select("sample", "source", "target").join(
            long, on=["sample", "source", "target"], how="left", maintain_order="left"
        )
        return np.exp(got.get_column("_y").to_numpy())


def _register_baselines() -> None:
    for name in B.BASELINES.in_order():
        fn = B.BASELINES.get(name)
        ENTRIES.add(
            f"baseline/{name}",
            Entry(
                f"baseline/{name}",
                "baseline",
                ALL,
                lambda ctx, f=fn: ctx.baseline(f),
                description=fn.__doc__.strip().splitlines()[0],
            ),
        )


_register_baselines()


def _register_stacked() -> None:
    what = {
        "prior": "the physics prior alone: modelled time ratio from the targets' "
        "own benchmark runs (no labels)",
        "residual": "physics prior + boosted residual on the source sample's "
        "efficiency (no signatures)",
        "physics": "physics prior + residual with the physics signatures of both ends",
        "attention": "physics prior + residual with the attention AMMs of both ends",
        "physics+attention": "physics prior + residual with physics signatures and attention AMMs",
    }
    for v in VARIANTS:
        # an embedder per left-out machine and group would cost more than the rest of the run
        schemes = NO_LOMO if "attention" in v else frozenset(SCHEMES)
        ENTRIES.add(
            f"stacked/{v}",
            Entry(
                f"stacked/{v}",
                "xamm",
                ALL,
                lambda ctx, v=v: ctx.stacked(v),
                schemes,
                description=what[v],
            ),
        )
    ENTRIES.add(
        "stacked/prior-no-borrowing",
        Entry(
            "stacked/prior-no-borrowing",
            "xamm",
            ALL,
            lambda ctx: np.exp(log_prior(physics_signatures(ctx.samples, borrow=False), ctx.test)),
            description="the physics prior without flop rates borrowed from the device kind "
            "(the borrowing's ablation)",
        ),
    )
    _register_stacked_controls()


def _register_stacked_controls() -> None:
    """The stacked entries beside the variants: the random-vector control, the ungated residual,
    ``split`` alone and the default predictor."""
    ENTRIES.add(
        "stacked/random-amm",
        Entry(
            "stacked/random-amm",
            "control",
            ALL,
            lambda ctx: ctx.stacked("attention", random_amm=True),
            NO_LOMO,
            description="the control of stacked/attention: each attention AMM replaced "
            "by a seeded random vector of the "
            "same length and norm",
        ),
    )
    ENTRIES.add(
        "stacked/physics-ungated",
        Entry(
            "stacked/physics-ungated",
            "xamm",
            ALL,
            lambda ctx: ctx.stacked("physics", min_pair_kernels=0),
            description="stacked/physics with its residual applied to every machine "
            "pair, however few kernels it was "
            "learned from (the gate's ablation)",
        ),
    )
    ENTRIES.add(
        "stacked/split",
        Entry(
            "stacked/split",
            "xamm",
            ALL,
            lambda ctx: split_relr(ctx.physics(), ctx.test),
            description="the physics prior with half the source's slowdown from its "
            "roofline carried to the target "
            "(the default's model without its intervals; no labels)",
        ),
    )
    _register_defaults()


def _register_defaults() -> None:
    """The default predictor and the choice among every candidate it was measured against."""
    ENTRIES.add(
        "stacked/default",
        Entry(
            "stacked/default",
            "xamm",
            ALL,
            lambda ctx: ctx.default(),
            description="xamm's default predictor: the plain roofline with 80% intervals of "
            "one half-width per device scenario, calibrated on inner folds of the training pairs",
        ),
    )
    ENTRIES.add(
        "stacked/nested-choice",
        Entry(
            "stacked/nested-choice",
            "xamm",
            ALL,
            lambda ctx: ctx.default(candidates=CANDIDATES),
            description="the model chosen per scenario among every label-free candidate on "
            "inner folds of the training pairs (kept only where the inner gain over the "
            "roofline has its 90% interval above zero), with the default's intervals",
        ),
    )
    _register_interval_variants()


def _register_interval_variants() -> None:
    """The default's intervals conditioned on what the signatures can tell: the measured
    alternatives to one half-width per scenario."""
    for name, config, what in (
        (
            "stacked/scaled-intervals",
            {"scaled_intervals": True},
            "the default with each interval scaled by the spread of look-alike benchmark "
            "kernels' changes between the two machines (normalised split conformal)",
        ),
        (
            "stacked/regime-intervals",
            {"regime_intervals": True},
            "the default with a half-width per device scenario and size regime (bytes per "
            "launch below 1 MiB, up to 64 MiB, above)",
        ),
        (
            "stacked/efficiency-intervals",
            {"band_intervals": True},
            "the default with a half-width per device scenario and source slowdown band "
            "(measured over the roofline's time on the source: below 2×, 2× to 10×, above)",
        ),
        (
            "stacked/signed-intervals",
            {"signed_intervals": True},
            "the default with an interval per device scenario from the inner residuals' signed "
            "10% and 90% quantiles (not centred on the answer)",
        ),
        (
            "stacked/pair-intervals",
            {"pair_intervals": True},
            "the default with each pair's interval the 10% and 90% quantiles of the roofline's "
            "errors on the kernels both machines ran, widened by a margin per device scenario "
            "(conformalised quantile regression)",
        ),
    ):
        ENTRIES.add(
            name,
            Entry(name, "xamm", ALL, lambda ctx, c=config: ctx.default(**c), MACHINE, what),
        )


_register_stacked()


def _register_regressor_entries() -> None:
    for reg in list_regressors():
        main = reg == "xgboost"
        ENTRIES.add(
            f"raw/{reg}",
            Entry(
                f"raw/{reg}",
                "xamm",
                frozenset({1, 3} if main else {1}),
                lambda ctx, r=reg: ctx.xamm(
                    use_amm=False, regressor=r, use_embedder=False, heads=("noamm",)
                ),
                frozenset(SCHEMES) if main else frozenset({"kernel-group"}),
                description=f"{reg} on the raw features and machine ids",
            ),
        )
        ENTRIES.add(
            f"attention+amm/{reg}",
            Entry(
                f"attention+amm/{reg}",
                "xamm",
                frozenset({1, 3} if main else {1}),
                lambda ctx, r=reg: ctx.xamm(
                    regressor=r, heads=("noamm", "amm") if r == "xgboost" else ("amm",)
                ),
                NO_LOMO if main else frozenset({"kernel-group"}),
                description="the xAMM pipeline: attention embedding + AMM(source) + "
                f"AMM(target) -> {reg}",
            ),
        )


_register_regressor_entries()


@entry("baseline/pair-constant", "baseline")
def _pair_constant(ctx):
    """one constant per machine pair: the median ratio of the two machines' own benchmark times
    over the kernels both ran (no labels)"""
    return B.pair_constant(ctx.test, ctx.samples)


@entry("baseline/most-similar-machine", "baseline", schemes={"machine"})
def _most_similar(ctx):
    """a new machine treated as the most similar known machine (nearest benchmark times kernel by
    kernel, same device kind)"""
    return ctx.most_similar_machine()


# The vector models answer only targets they had labels for (a held-out machine has none), and one
# VAE-DNN fit
# takes about a minute on one core: leave-one-kernel-out (73 folds) would add over an hour. Kernel
# groups only.
@entry("vae-dnn/seed", "xamm", schemes={"kernel-group"})
def _vae_dnn(ctx):
    """VAE-DNN: VAE latent space + a 3x1024 DNN predicting the log relR vector to every
    target"""
    return ctx.vector_model("vae-dnn")


@entry("baseline/random-forest-vector", "baseline", schemes={"kernel-group"})
def _rf_vector(ctx):
    """the VAE-DNN papers' baseline: a RandomForest per target on the same inputs as the VAE-DNN
    (features, source)"""
    return ctx.vector_model("random-forest")


@entry("attention-no-amm/xgboost", "xamm", {3}, {"kernel-group"})
def _no_amm(ctx):
    """attention embedding + machine ids, no AMMs"""
    # the same fitted model as attention+amm/xgboost
    return ctx.xamm(use_amm=False, heads=("noamm", "amm"))


@entry("control/random-amm/xgboost", "control", {3}, {"kernel-group"})
def _random(ctx):
    """the pipeline with each AMM replaced by a random vector of the same norm"""
    return ctx.xamm(random_amm=True)


def _register_embedder_entries() -> None:
    for emb in ("mlp", "ae", "vae"):
        ENTRIES.add(
            f"{emb}+amm/xgboost",
            Entry(
                f"{emb}+amm/xgboost",
                "xamm",
                frozenset({2}),
                lambda ctx, e=emb: ctx.xamm(embedder=e),
                frozenset({"kernel-group"}),
                f"{emb} sample embedding + AMMs -> xgboost",
            ),
        )
    for agg in ("mean", "variance"):
        ENTRIES.add(
            f"attention+amm-{agg}/xgboost",
            Entry(
                f"attention+amm-{agg}/xgboost",
                "xamm",
                frozenset({4}),
                lambda ctx, a=agg: ctx.xamm(aggregation=a),
                frozenset({"kernel-group"}),
                f"AMMs aggregated by {agg} (Algorithm 1) instead of L2",
            ),
        )


_register_embedder_entries()
