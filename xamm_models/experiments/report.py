"""What ``xamm eval`` says: comparisons against the baselines, ``results.md``, and the results
block of the documentation's evaluation page.

The block is generated from ``results.json`` by :func:`results_block`, between the markers
:data:`BEGIN` and :data:`END`; a test regenerates it and checks the page holds exactly that text.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl

from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark.evaluate import SCENARIOS, best_of
from xamm_models.experiments.entries import BASELINES
from xamm_models.experiments.same_silicon import same_silicon_rows
from xamm_models.experiments.seeds import run_label
from xamm_models.experiments.seeds import verdict as seed_verdict
from xamm_models.experiments.specifications import specification_rows
from xamm_models.predictors.paper.regressors import list_regressors

BEGIN = (
    "<!-- xamm-eval:begin (generated from docs/eval/results.json by "
    "xamm eval --page; do not edit) -->"
)
END = "<!-- xamm-eval:end -->"
SCOPES = ("all", *SCENARIOS)
VERDICT_METRICS = ("within_2", "median_abs_log10")
PAGE_ENTRIES = (
    "baseline/pair-median",
    "baseline/pair-size-median",
    "baseline/roofline",
    "baseline/knn",
    "raw/xgboost",
    "attention+amm/xgboost",
    "attention-no-amm/xgboost",
    "control/random-amm/xgboost",
    "stacked/prior",
    "stacked/residual",
    "stacked/physics",
    "stacked/attention",
    "stacked/physics+attention",
    "stacked/random-amm",
    "stacked/physics-ungated",
    "stacked/split",
    "stacked/prior-no-borrowing",
    "stacked/default",
    "stacked/nested-choice",
    "baseline/pair-constant",
    "baseline/most-similar-machine",
    "baseline/random-forest-vector",
    "vae-dnn/seed",
)
DEFAULT = "stacked/default"
SIMILAR = "baseline/most-similar-machine"
BASELINE = "baseline/roofline"
SCHEME_TITLES = {
    "kernel-group": "leave one kernel group out",
    "machine": "leave one machine out (nested)",
    "kernel": "leave one kernel out",
}


# (a, b, what a - b measures): the default's parts against the simplest model without them
NESTED = "stacked/nested-choice"
PAIR_CONSTANT = "baseline/pair-constant"
RULES = (
    ("stacked/default", "baseline/roofline", "the default against the plain roofline"),
    (
        NESTED,
        "baseline/roofline",
        "every label-free candidate, chosen per scenario on inner folds, against the roofline",
    ),
    (
        "stacked/default",
        PAIR_CONSTANT,
        "the default against one constant per machine pair from the two machines' runs",
    ),
    (
        "stacked/default",
        "baseline/most-similar-machine",
        "the default against the most similar known machine's measured times",
    ),
    ("stacked/default", "baseline/pair-median", "the default against the pair median"),
    (
        "stacked/prior",
        "baseline/roofline",
        "a bandwidth curve over the working set against one sustained bandwidth",
    ),
    ("stacked/split", "stacked/prior", "half the source's slowdown carried to the target (split)"),
    ("stacked/prior", "stacked/prior-no-borrowing", "a flop rate borrowed from the device kind"),
    ("stacked/physics", "stacked/prior", "a learned residual (gated) on the prior"),
    ("stacked/physics", "stacked/physics-ungated", "the residual's gate"),
)


def _by_machine(df: pl.DataFrame) -> pl.DataFrame:
    """The frame with each row's unit of resampling set to its target machine."""
    return df.with_columns(pl.col("target").str.split(":").list.first().alias("app"))


def rule_comparisons(ev, preds: dict[str, pl.DataFrame], min_machines: int = 5) -> list[dict]:
    """Each :data:`RULES` pair present: a minus b, with 90% intervals over kernels and, where the
    test pairs hold ``min_machines`` target machines or more, over machines.

    Args:
        ev: the evaluator.
        preds: entry -> predictions of one scheme.
        min_machines: the fewest target machines a machine bootstrap needs.

    Returns:
        One record per pair present.
    """
    out = []
    for a, b, what in RULES:
        if a not in preds or b not in preds:
            continue
        diff = ev.compare(preds[a], preds[b])
        rec = {
            "a": a,
            "b": b,
            "what": what,
            "kernels": diff["all"],
            "scenarios": {s: d["within_2"] for s, d in diff.items() if s != "all"},
        }
        if _by_machine(preds[a]).get_column("app").n_unique() >= min_machines:
            rec["machines"] = ev.compare(_by_machine(preds[a]), _by_machine(preds[b]))["all"]
        out.append(rec)
    return out


ALL_MACHINES = "all machines"


def machine_scores(ev, preds: dict[str, pl.DataFrame]) -> dict[str, dict]:
    """Entry -> target machine -> within 2x and coverage (90% intervals over kernels) and pairs;
    under ``"all machines"``, the pooled figures with 90% intervals over target machines.

    Args:
        ev: the evaluator.
        preds: entry -> predictions of one scheme.

    Returns:
        The scores.
    """
    out = {}
    machine = pl.col("target").str.split(":").list.first().alias("_m")
    for name, p in preds.items():
        out[name] = {}
        for (m,), part in p.with_columns(machine).group_by(["_m"], maintain_order=True):
            pooled = ev.pooled(part.drop("_m"))
            out[name][m] = {
                "within_2": pooled["within_2"],
                "coverage": pooled["coverage"],
                "n": part.height,
            }
        pooled = ev.pooled(_by_machine(p))
        out[name][ALL_MACHINES] = {
            "within_2": pooled["within_2"],
            "coverage": pooled["coverage"],
            "n": p.height,
        }
    return out


# label-free entries a per-(fold, scenario) choice could pick from, simplest first
CEILING_ENTRIES = (
    "baseline/pair-median",
    "baseline/roofline",
    SIMILAR,
    "stacked/prior-no-borrowing",
    "stacked/prior",
    "stacked/split",
    DEFAULT,
)


def ceiling(preds: dict[str, pl.DataFrame], names=CEILING_ENTRIES) -> dict | None:
    """What choosing among ``names`` could reach at most: within 2x of the default, of the best
    single entry, of the best entry per (fold, scenario) chosen on the test pairs themselves (no
    predictor can make that choice: it reads the answers), and of "any entry within 2x".

    Args:
        preds: entry -> predictions of one scheme (the same pairs in the same order).
        names: the entries to choose from, simplest first (a tie goes to the simpler).

    Returns:
        The figures, or None when the default or a second entry is missing.
    """
    present = [n for n in names if n in preds]
    if DEFAULT not in present or len(present) < 2:
        return None
    truth = preds[DEFAULT].get_column("y_true")
    hits = preds[DEFAULT].select("fold", scenario_expr())
    for n in present:
        if not preds[n].get_column("y_true").equals(truth):
            raise ValueError(f"{n}'s test pairs differ from {DEFAULT}'s")
        err = (pl.col("y_pred") / pl.col("y_true")).log10().abs()
        hits = hits.with_columns(
            preds[n].select((err <= math.log10(2) + 1e-12).alias(n)).to_series()
        )
    means = {n: hits.get_column(n).mean() for n in present}
    best = max(present, key=lambda n: (means[n], -present.index(n)))
    cells = hits.group_by("fold", "scenario").agg(*[pl.col(n).sum() for n in present])
    return {
        "entries": present,
        "pairs": hits.height,
        "default": means[DEFAULT],
        "best": best,
        "best_score": means[best],
        "ceiling": cells.select(pl.max_horizontal(present)).to_series().sum() / hits.height,
        "any": hits.select(pl.any_horizontal(present)).to_series().mean(),
    }


def compare_to_baselines(ev, preds: dict[str, pl.DataFrame], scored: dict, pipeline: str) -> dict:
    """Per scope: the best entry, the best baseline (pooled within 2x), and the pipeline minus the
    best baseline, the raw model and the random-vector control (difference and 90% interval)."""
    # simplest first: a tie goes to the simpler baseline
    baselines = [n for n in BASELINES if n in scored]
    out = {
        "best_entry": {},
        "best_baseline": {},
        "pipeline_vs_best_baseline": {},
        "default_vs_best_baseline": {},
    }
    contenders = {
        k: e
        for k, e in (("pipeline_vs_best_baseline", pipeline), ("default_vs_best_baseline", DEFAULT))
        if e in preds
    }
    if not contenders:
        return out
    diffs = {
        (k, b): ev.compare(preds[e], preds[b]) for k, e in contenders.items() for b in baselines
    }
    for scope in scored[next(iter(contenders.values()))]["pooled"]:
        out["best_entry"][scope] = best_of(
            scored, [*baselines, *[n for n in scored if n not in baselines]], scope
        )
        b = best_of(scored, baselines, scope)
        out["best_baseline"][scope] = b
        for k in contenders:
            if b and (k, b) in diffs:
                out[k][scope] = {m: diffs[k, b][scope][m] for m in VERDICT_METRICS}
    for key, other in (
        ("pipeline_vs_raw", "raw/xgboost"),
        ("pipeline_vs_control", "control/random-amm/xgboost"),
    ):
        if pipeline in preds and other in preds:
            out[key] = ev.compare(preds[pipeline], preds[other])
    # a new machine from its runs vs "it is like the nearest one we know"
    if DEFAULT in preds and SIMILAR in preds:
        out["default_vs_most_similar"] = ev.compare(preds[DEFAULT], preds[SIMILAR])
    out["experiments"] = [
        {"experiment": k, "a": a, "b": b, "all": ev.compare(preds[a], preds[b])["all"]}
        for k, a, b in experiment_pairs()
        if a in preds and b in preds
    ]
    return out


def experiment_pairs() -> list[tuple[int, str, str]]:
    """The paper's four experiments as (experiment, entry, the entry it is compared with);
    experiment 3 (AMMs vs none vs random vectors) is asked of the stacked residual as well."""
    return (
        [(1, f"attention+amm/{r}", f"raw/{r}") for r in list_regressors()]
        + [(2, f"{e}+amm/xgboost", "attention+amm/xgboost") for e in ("mlp", "ae", "vae")]
        + [
            (3, "attention+amm/xgboost", "attention-no-amm/xgboost"),
            (3, "attention+amm/xgboost", "control/random-amm/xgboost"),
            (3, "stacked/attention", "stacked/residual"),
            (3, "stacked/attention", "stacked/random-amm"),
        ]
        + [(4, f"attention+amm-{a}/xgboost", "attention+amm/xgboost") for a in ("mean", "variance")]
    )


def _ordered(results: dict) -> list[tuple[str, dict]]:
    return [(s, results[s]) for s in SCHEME_TITLES if s in results]


def _v(x, digits=2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _ci(m: dict, digits=2) -> str:
    return f"{_v(m['value'], digits)} [{_v(m['lo'], digits)}, {_v(m['hi'], digits)}]"


def _diff(d: dict) -> str:
    word = {"a": "better", "b": "worse", "neither": "no clear difference"}[d["better"]]
    return (
        f"{d['difference']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}] ({word})"
        if d["difference"] is not None
        else "–"
    )


def verdict_rows(summary: dict) -> list[str]:
    """One row per scheme and scope: the best entry, and whether the pipeline beats the strongest
    baseline."""
    rows = []
    for scheme, r in _ordered(summary["results"]):
        c = r["comparisons"]
        for scope in SCOPES:
            vs = c.get("pipeline_vs_best_baseline", {}).get(scope)
            dv = c.get("default_vs_best_baseline", {}).get(scope)
            if not (vs or dv):
                continue
            cells = [
                f" {_diff(d['within_2'])} | {_diff(d['median_abs_log10'])} |" if d else " – | – |"
                for d in (vs, dv)
            ]
            rows.append(
                f"| {SCHEME_TITLES[scheme]} | {scope.replace('->', '→')} | "
                f"{c['best_entry'][scope]} | {c['best_baseline'][scope]} |" + "".join(cells)
            )
    return rows


def _entry_rows(r: dict, names) -> list[str]:
    rows = []
    for n in names:
        if n not in r["entries"]:
            continue
        e = r["entries"][n]
        p, fm = e["pooled"], e["fold_mean"]["all"]
        sc = [_v(p[s]["within_2"]["value"]) if s in p else "–" for s in SCENARIOS]
        rows.append(
            f"| {n} | {_ci(p['all']['within_2'])} | "
            f"{_ci(p['all']['median_abs_log10'])} | "
            + " | ".join(sc)
            + f" | {_v(fm['within_2'])} | {_v(p['all']['ranking_accuracy']['value'])} | "
            f"{_v(p['all']['top1_accuracy']['value'])} | "
            f"{_v(p['all']['mape']['value'], 0)} |"
        )
    return rows


HEAD = (
    "| entry | within 2× [90% CI] | median abs log10 error [90% CI] "
    "| CPU→CPU | CPU→GPU | GPU→GPU | GPU→CPU | "
    "fold mean | ranking | top-1 | MAPE % |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
)
VERDICT_HEAD = (
    "| scheme | scenario | best entry (within 2×) | strongest "
    "baseline | pipeline − baseline, within 2× "
    "[90% CI] | pipeline − baseline, median abs log10 error | "
    "stacked/default − baseline, within 2× | "
    "stacked/default − baseline, median abs log10 error |",
    "|---|---|---|---|---|---|---|---|",
)


EXP_HEAD = (
    "| experiment | entry | compared with | within 2× | within 2× "
    "(compared) | difference [90% CI] | "
    "MAPE % | MAPE % (compared) |",
    "|---|---|---|---|---|---|---|---|",
)


def experiment_rows(r: dict) -> list[str]:
    """The paper's four experiments on one scheme: each entry against its counterpart."""
    rows = []
    for x in r["comparisons"].get("experiments", []):
        pa, pb = r["entries"][x["a"]]["pooled"]["all"], r["entries"][x["b"]]["pooled"]["all"]
        rows.append(
            f"| {x['experiment']} | {x['a']} | {x['b']} | {_v(pa['within_2']['value'])} | "
            f"{_v(pb['within_2']['value'])} | {_diff(x['all']['within_2'])} | "
            f"{_v(pa['mape']['value'], 0)} | "
            f"{_v(pb['mape']['value'], 0)} |"
        )
    return rows


def paper_rows(summary: dict) -> list[str]:
    """The paper's headline (XGBoost MAPE, attention + AMMs vs raw, by scenario) next to what this
    data gives."""
    r = summary["results"].get("kernel-group", {}).get("entries", {})
    rows = []
    for sc, key in (("CPU->CPU", "cpu_cpu"), ("CPU->GPU", "cpu_gpu")):
        raw, att = (
            r.get(n, {}).get("pooled", {}).get(sc, {}).get("mape", {}).get("value")
            for n in ("raw/xgboost", "attention+amm/xgboost")
        )
        here = (
            "n/a"
            if raw in (None, 0) or att is None
            else f"{100 * (att - raw) / raw:+.1f}%".replace("-", "−")
        )
        rows.append(
            f"| {sc.replace('->', '→')} | "
            f"−{summary['paper_claims'][f'xgboost_mape_reduction_{key}']}% | "
            f"{here} |"
        )
    return rows


COVERAGE_HEAD = (
    "| scheme | " + " | ".join(s.replace("->", "→") for s in SCOPES) + " |",
    "|---|" + "---|" * len(SCOPES),
)


def coverage_rows(summary: dict, name: str = DEFAULT) -> list[str]:
    """Per scheme: how often the default's 80% intervals held the truth on the test folds, per scope
    [90% CI]."""
    rows = []
    for scheme, r in _ordered(summary["results"]):
        p = r["entries"].get(name, {}).get("pooled", {})
        if p.get("all", {}).get("coverage", {}).get("value") is not None:
            rows.append(
                f"| {SCHEME_TITLES[scheme]} | "
                + " | ".join(_ci(p[s]["coverage"]) if s in p else "–" for s in SCOPES)
                + " |"
            )
    return rows


def similar_rows(summary: dict) -> list[str]:
    """Leave one machine out: the default predictor (signature from the new machine's runs) minus
    "treat it as the most similar known machine", per scope."""
    c = (
        summary["results"]
        .get("machine", {})
        .get("comparisons", {})
        .get("default_vs_most_similar", {})
    )
    return [
        f"| {s.replace('->', '→')} | {_diff(v['within_2'])} | {_diff(v['median_abs_log10'])} |"
        for s, v in c.items()
    ]


def vector_rows(summary: dict) -> list[str]:
    """the VAE-DNN papers' vector metrics of the vector models (kernel groups pooled), beside their
    log-scale figures."""
    r = summary["results"].get("kernel-group", {})
    rows = []
    for n, m in r.get("vector_metrics", {}).items():
        w = r["entries"][n]["pooled"]["all"]
        rows.append(
            f"| {n} | {_v(m.get('r2_seed'))} | "
            f"{_v(m.get('r2_within_target'))} | "
            f"{_v(m.get('ordering_accuracy'))} | "
            f"{_v(m.get('auc'))} | {_ci(w['within_2'])} | {_ci(w['median_abs_log10'])} |"
        )
    return rows


VECTOR_HEAD = (
    "| entry | R² (the papers' reading) | R² within target | ordering "
    "accuracy | AUC | within 2× [90% CI] | "
    "median abs log10 error [90% CI] |",
    "|---|---|---|---|---|---|---|",
)
VECTOR_TITLE = (
    "**The VAE-DNN against the RandomForest of its papers** "
    "(leave one kernel group out, folds pooled; "
    "the VAE-DNN papers' vector metrics, then the benchmark's; ROC in `roc.png`)"
)

SAME_SILICON_TITLE = (
    "**Same silicon** (leave one machine out: a left-out end that shares its processor with a "
    "measured one, answered with that machine's measured ratio times the configuration scale "
    "from both machines' runs without the fold's kernels, `xamm_models.predictors.same_silicon`; "
    "against the entries on the pairs it answers, 90% intervals over kernels)"
)

SPECIFICATIONS_TITLE = (
    "**Specifications** (leave one machine out: the left-out end answered by the plain roofline "
    "with figures from its registry peaks times the efficiencies of the other measured machines "
    "of its kind, `xamm_models.machines.specifications`, no run of it read; against the same "
    "roofline from its own runs without the fold's kernels and the default, on the same pairs, "
    "90% intervals over kernels)"
)

SIMILAR_HEAD = (
    "| scenario | within 2×: default − most similar [90% CI] | "
    "median abs log10 error: default − most similar |",
    "|---|---|---|",
)


RULE_HEAD = (
    "| scheme | a − b | what it measures | within 2×, 90% CI over kernels | "
    "within 2×, 90% CI over machines |",
    "|---|---|---|---|---|",
)


def rule_rows(summary: dict) -> list[str]:
    """Each of the default's parts against the simplest model without it, per scheme."""
    rows = []
    for scheme, r in _ordered(summary["results"]):
        for x in r.get("rules", []):
            m = x.get("machines", {}).get("within_2")
            rows.append(
                f"| {SCHEME_TITLES[scheme]} | {x['a']} − {x['b']} | {x['what']} | "
                f"{_diff(x['kernels']['within_2'])} | {_diff(m) if m else '–'} |"
            )
    return rows


MACHINE_ENTRIES = (DEFAULT, "baseline/roofline", NESTED, PAIR_CONSTANT, SIMILAR, "stacked/split")
MACHINE_HEAD = (
    "| left-out machine | pairs | "
    + " | ".join(f"{n}, within 2×" for n in MACHINE_ENTRIES)
    + f" | {DEFAULT}, 80% interval coverage |",
    "|---|---|" + "---|" * (len(MACHINE_ENTRIES) + 1),
)


def machine_rows(summary: dict) -> list[str]:
    """Leave one machine out, per left-out machine: within 2x of the default and the simple
    models, and the default's interval coverage (90% CIs over kernels)."""
    bm = summary["results"].get("machine", {}).get("by_machine", {})
    rows = []
    for m, d in bm.get(DEFAULT, {}).items():
        cells = [_ci(bm[n][m]["within_2"]) if m in bm.get(n, {}) else "–" for n in MACHINE_ENTRIES]
        label = f"{m}, 90% CI over machines" if m == ALL_MACHINES else m
        rows.append(f"| {label} | {d['n']} | " + " | ".join(cells) + f" | {_ci(d['coverage'])} |")
    return rows


CEILING_HEAD = (
    "| scheme | pairs | stacked/default | best single entry | ceiling: best entry per "
    "(fold, scenario), chosen on the test pairs | any entry within 2× |",
    "|---|---|---|---|---|---|",
)


def ceiling_rows(summary: dict) -> list[str]:
    """Per scheme, what a choice among the label-free entries could reach at most (within 2x)."""
    rows = []
    for scheme, r in _ordered(summary["results"]):
        c = r.get("ceiling")
        if c:
            rows.append(
                f"| {SCHEME_TITLES[scheme]} | {c['pairs']} | {_v(c['default'], 3)} | "
                f"{c['best']} {_v(c['best_score'], 3)} (of {len(c['entries'])}) | "
                f"{_v(c['ceiling'], 3)} | {_v(c['any'], 3)} |"
            )
    return rows


AIM_WITHIN_2 = 0.75
AIM_COVERAGE = (0.75, 0.85)
AIM_HEAD = ("| aim (leave one machine out) | measured | held |", "|---|---|---|")


def aim_rows(summary: dict) -> list[str]:
    """The default's aims on leave one machine out, each with its figure and whether it held: at
    least :data:`AIM_WITHIN_2` within 2x pooled, no worse than the plain roofline in any scenario,
    and 80% intervals covering within :data:`AIM_COVERAGE` for every left-out machine."""
    r = summary["results"].get("machine")
    if not r or DEFAULT not in r["entries"]:
        return []
    w = r["entries"][DEFAULT]["pooled"]["all"]["within_2"]
    rows = [
        f"| within 2× pooled ≥ {AIM_WITHIN_2} | {_ci(w)} | "
        f"{'yes' if w['value'] >= AIM_WITHIN_2 else 'no'} |"
    ]
    vs = next((x for x in r.get("rules", []) if x["a"] == DEFAULT and x["b"] == BASELINE), None)
    for scope, d in ({"all": vs["kernels"]["within_2"], **vs["scenarios"]} if vs else {}).items():
        rows.append(
            f"| {DEFAULT} − {BASELINE} ≥ 0, {scope.replace('->', '→')} | {_diff(d)} | "
            f"{'yes' if d['difference'] >= 0 else 'no'} |"
        )
    vs = next(
        (x for x in r.get("rules", []) if x["a"] == DEFAULT and x["b"] == PAIR_CONSTANT), None
    )
    if vs and "GPU->GPU" in vs["scenarios"]:
        d = vs["scenarios"]["GPU->GPU"]
        rows.append(
            f"| {DEFAULT} − {PAIR_CONSTANT} > 0, GPU→GPU | {_diff(d)} | "
            f"{'yes' if d['lo'] > 0 else 'no'} |"
        )
    return rows + _interval_aims(r)


AIM_NARROWER = 0.25


def _interval_aims(r: dict) -> list[str]:
    """Coverage within :data:`AIM_COVERAGE` and intervals :data:`AIM_NARROWER` narrower than the
    roofline's at equal coverage, per left-out machine."""
    lo, hi = AIM_COVERAGE
    rows = []
    sharp = r.get("intervals", {}).get(DEFAULT, {})
    for m, d in r.get("by_machine", {}).get(DEFAULT, {}).items():
        if m == ALL_MACHINES:
            continue
        c = d["coverage"]["value"]
        held = c is not None and lo <= c <= hi
        rows.append(
            f"| coverage in [{lo}, {hi}], {m} | {_ci(d['coverage'])} | {'yes' if held else 'no'} |"
        )
    for m, d in sharp.items():
        n = d["narrower"]
        rows.append(
            f"| median width ≥ {AIM_NARROWER:.0%} narrower than the roofline's at equal coverage, "
            f"{m} | {_v(n)} [{_v(d['narrower_lo'])}, {_v(d['narrower_hi'])}] | "
            f"{'yes' if n is not None and n >= AIM_NARROWER else 'no'} |"
        )
    return rows


SHARP_HEAD = (
    "| entry | left-out machine | pairs | coverage | median width (×) | interval score (log10) | "
    "roofline's width at equal coverage (×) | its interval score | narrower [90% CI] |",
    "|---|---|---|---|---|---|---|---|---|",
)


INTERVAL_AIM_HEAD = (
    "| entry | left-out machines with coverage in [0.75, 0.85] | outside it (coverage) "
    "| narrower than the roofline's, all machines [90% CI] | short of the 0.25 aim by |",
    "|---|---|---|---|---|",
)
COVERAGE_AIM, NARROWER_AIM = (0.75, 0.85), 0.25


def interval_aim_rows(summary: dict) -> list[str]:
    """Each interval-giving entry against the interval aims on leave one machine out: how many
    left-out machines its coverage is in range on, which are not, and how far its pooled median
    width is from 25% narrower than the roofline's at equal coverage."""
    rows = []
    for name, per in summary["results"].get("machine", {}).get("intervals", {}).items():
        machines = {m: d for m, d in per.items() if m != "all machines"}
        lo, hi = COVERAGE_AIM
        off = {m: d["coverage"] for m, d in machines.items() if not lo <= d["coverage"] <= hi}
        pooled = per.get("all machines")
        if pooled is None:
            continue
        short = max(NARROWER_AIM - pooled["narrower"], 0.0)
        rows.append(
            f"| {name} | {len(machines) - len(off)} of {len(machines)} | "
            + (", ".join(f"{m} {_v(c)}" for m, c in off.items()) or "–")
            + f" | {_v(pooled['narrower'])} [{_v(pooled['narrower_lo'])}, "
            f"{_v(pooled['narrower_hi'])}] | {_v(short)} |"
        )
    return rows


def sharpness_rows(summary: dict) -> list[str]:
    """Each interval-giving entry's sharpness beside the roofline's at equal coverage, per
    left-out machine (:mod:`xamm_models.benchmark.intervals`)."""
    rows = []
    for name, per in summary["results"].get("machine", {}).get("intervals", {}).items():
        for m, d in per.items():
            rows.append(
                f"| {name} | {m} | {d['n']} | {_v(d['coverage'])} | ×{10 ** d['median_width']:.2f} "
                f"| {_v(d['interval_score'])} | ×{10 ** d['roofline_width']:.2f} | "
                f"{_v(d['roofline_interval_score'])} | {_v(d['narrower'])} "
                f"[{_v(d['narrower_lo'])}, {_v(d['narrower_hi'])}] |"
            )
    return rows


def _kernels(summary: dict) -> str:
    k = summary.get("torch_cpu_kernels")  # runs before the pin recorded none
    return f"torch's {k} CPU kernels (`xamm_models.runtime`); " if k else ""


SEED_HEAD = (
    "| experiment | entry | compared with | within 2× difference per run: seed (code path where "
    "not the main run's) [90% CI] | verdict over runs |",
    "|---|---|---|---|---|",
)


def seed_rows(summary: dict) -> list[str]:
    """The paper's experiments over every recorded run (seeds and code paths:
    :mod:`xamm_models.experiments.seeds`), then the XGBoost MAPE change's range over them."""
    runs = summary.get("seeds", [])
    by: dict[tuple, list] = {}
    for run in runs:
        for x in run["experiments"]:
            label = run_label(run, runs[0])
            by.setdefault((x["experiment"], x["a"], x["b"]), []).append((label, x))
    rows = []
    for (k, a, b), xs in by.items():
        cells = "; ".join(
            f"{s}: {x['difference']:+.2f} [{x['lo']:+.2f}, {x['hi']:+.2f}]" for s, x in xs
        )
        rows.append(f"| {k} | {a} | {b} | {cells} | {seed_verdict([x for _, x in xs])} |")
    for sc in ("CPU->CPU", "CPU->GPU"):
        v = [r["mape_change"][sc] for r in runs if r["mape_change"].get(sc) is not None]
        if v:
            rows.append(
                f"| paper | XGBoost MAPE change, attention + AMMs vs raw, {sc.replace('->', '→')} "
                f"| the paper: −{summary['paper_claims'][PAPER_KEY[sc]]}% | "
                f"{min(v):+.0f}% to {max(v):+.0f}% over {len(v)} runs | – |"
            )
    return rows


PAPER_KEY = {
    "CPU->CPU": "xgboost_mape_reduction_cpu_cpu",
    "CPU->GPU": "xgboost_mape_reduction_cpu_gpu",
}


def _experiment_lines(summary: dict) -> list[str]:
    """The paper's four experiments and its MAPE claims, when the run holds them."""
    group = summary["results"].get("kernel-group")
    if not (group and group["comparisons"].get("experiments")):
        return []
    return [
        "**The paper's four experiments** (leave one kernel group out; "
        "1: raw features vs attention + AMMs per "
        "regressor, 2: sample embedders, 3: AMMs vs none vs random "
        "vectors, in the pipeline and as the stacked "
        "residual's features, 4: AMM aggregation vs L2)",
        "",
        *EXP_HEAD,
        *experiment_rows(group),
        "",
        "| XGBoost MAPE change, attention + AMMs vs raw | paper | here |",
        "|---|---|---|",
        *paper_rows(summary),
        "",
        *(
            [
                "**The paper's experiments over seeds** (leave one kernel group out; a verdict "
                "other than no difference only when every run's 90% interval excludes 0 on the "
                "same side; a run is a seed, or a seed on another CPU code path)",
                "",
                *SEED_HEAD,
                *seed_rows(summary),
                "",
            ]
            if summary.get("seeds")
            else []
        ),
    ]


def _lomo_lines(summary: dict) -> list[str]:
    """The default's aims, its parts measured, the per-machine figures and the choice ceiling."""
    out = []
    for title, head, rows in (
        ("**The default's aims on leave one machine out**", AIM_HEAD, aim_rows(summary)),
        (
            "**Each part of the default against the simplest model without it** "
            "(difference in within 2×; a part earns its place when the interval is above 0)",
            RULE_HEAD,
            rule_rows(summary),
        ),
        ("**Leave one machine out, per left-out machine**", MACHINE_HEAD, machine_rows(summary)),
        (
            "**The interval rules against the aims** (leave one machine out: coverage 0.75–0.85 "
            "on every left-out machine, a median width 25% narrower than the roofline's at "
            "equal coverage; no rule was chosen after these figures were read: "
            "`docs/decisions.md`)",
            INTERVAL_AIM_HEAD,
            interval_aim_rows(summary),
        ),
        (
            "**How sharp the 80% intervals are** (leave one machine out; widths are the full "
            "interval hi / lo; the roofline's is the narrowest constant-width interval around it "
            "that covers as often, chosen on the test pairs themselves)",
            SHARP_HEAD,
            sharpness_rows(summary),
        ),
        (
            "**How far a choice among the label-free entries could go** (the ceiling reads the "
            "test pairs: no predictor can reach it)",
            CEILING_HEAD,
            ceiling_rows(summary),
        ),
    ):
        if rows:
            out += [title, "", *head, *rows, ""]
    return out


def results_block(summary: dict) -> str:
    """The evaluation page's results block (markers included), from a ``results.json`` summary."""
    d = summary["dataset"]
    lines = [
        BEGIN,
        "",
        f"`{d['name']}` v{d['schema']} version `{d['version']}`: "
        f"{d['pairs']} pairs, {d['samples']} samples; "
        f"seeds fixed; {_kernels(summary)}{summary['seconds']:.0f} s on "
        "this machine. Within 2× per scenario; "
        '"fold mean" averages the folds\' within 2×.',
        "",
    ]
    for scheme, r in _ordered(summary["results"]):
        lines += [
            f"**{SCHEME_TITLES[scheme]}** ({len(r['folds'])} folds)",
            "",
            *HEAD,
            *_entry_rows(r, PAGE_ENTRIES),
            "",
        ]
    lines += _experiment_lines(summary)
    lines += [
        "**Does the xAMM pipeline (attention + AMMs → XGBoost), or the "
        "stacked default predictor, beat the "
        "strongest baseline?** "
        '(difference and 90% bootstrap interval over kernels; "better" '
        "only when the interval excludes 0)",
        "",
        *VERDICT_HEAD,
        *verdict_rows(summary),
        "",
        "**Do stacked/default's 80% intervals hold the truth 80% of the "
        "time?** (coverage on the test folds, "
        "90% bootstrap interval over kernels)",
        "",
        *COVERAGE_HEAD,
        *coverage_rows(summary),
        "",
        *_lomo_lines(summary),
    ]
    if vector_rows(summary):
        lines += [VECTOR_TITLE, "", *VECTOR_HEAD, *vector_rows(summary), ""]
    if similar_rows(summary):
        lines += [
            "**A new machine from its benchmark runs alone** (leave one "
            "machine out: stacked/default with the machine's "
            "physics signature built from its runs, against treating it as "
            "the most similar known machine)",
            "",
            *SIMILAR_HEAD,
            *similar_rows(summary),
            "",
        ]
    if same := same_silicon_rows(summary):
        lines += [SAME_SILICON_TITLE, "", *same, ""]
    if spec := specification_rows(summary):
        lines += [SPECIFICATIONS_TITLE, "", *spec, ""]
    lines.append(END)
    return "\n".join(lines)


def _scheme_section(scheme: str, r: dict) -> list[str]:
    """``results.md``'s section of one scheme: every entry, the details, folds, comparisons."""
    out = [
        f"## {SCHEME_TITLES[scheme]}",
        "",
        "Test pairs per fold: " + ", ".join(f"{k} {v}" for k, v in r["folds"].items()),
        "",
        *HEAD,
        *_entry_rows(r, list(r["entries"])),
        "",
        *_detail_tables(r),
    ]
    if scheme != "kernel":
        out += _fold_table(r)
    for key, title in (
        ("pipeline_vs_raw", "attention + AMMs vs raw features (XGBoost)"),
        ("pipeline_vs_control", "attention + AMMs vs random vectors in place of AMMs"),
    ):
        if key in r["comparisons"]:
            out += [
                f"{title}: "
                + "; ".join(
                    f"{s.replace('->', '→')} within 2× {_diff(v['within_2'])}, "
                    f"MAPE {_diff(v['mape'])}"
                    for s, v in r["comparisons"][key].items()
                ),
                "",
            ]
    return out


def _comparison_sections(summary: dict) -> list[str]:
    """``results.md``'s verdict, coverage and new-machine sections."""
    return [
        "## Does the pipeline beat the strongest baseline?",
        "",
        *VERDICT_HEAD,
        *verdict_rows(summary),
        "",
        "## Coverage of stacked/default's 80% intervals",
        "",
        *COVERAGE_HEAD,
        *coverage_rows(summary),
        "",
        "## A new machine from its runs alone vs the most similar known machine",
        "",
        *SIMILAR_HEAD,
        *similar_rows(summary),
        "",
        *_lomo_lines(summary),
    ]


def markdown(summary: dict) -> str:
    """``results.md``: every entry of every scheme, per-fold figures, comparisons and the
    paper's claims.

    Args:
        summary: an ``xamm eval`` ``results.json``.

    Returns:
        Markdown.
    """
    d = summary["dataset"]
    out = [
        f"# xamm eval on {d['name']} v{d['schema']} (version {d['version']})",
        "",
        f"{d['samples']} samples, {d['pairs']} pairs, targets: "
        f"{', '.join(d['targets'])}. Seeds fixed "
        f"({summary['settings']['seed']}); {summary['seconds']} s. "
        "Metrics: `xamm_models.benchmark.metrics`; intervals: 90% "
        "bootstrap over kernels. MAPE is the paper's metric, shown for "
        "comparison only: a tiny constant scores "
        "about 100% on it.",
        "",
    ]
    if summary.get("libraries"):  # a results.json may not record them
        libs = ", ".join(f"{k} {v}" for k, v in sorted(summary["libraries"].items()))
        out += [f"Run with {libs}.", ""]
    for scheme, r in _ordered(summary["results"]):
        out += _scheme_section(scheme, r)
    if "kernel-group" in summary["results"]:
        out += [
            "## The paper's four experiments (leave one kernel group out)",
            "",
            *EXP_HEAD,
            *experiment_rows(summary["results"]["kernel-group"]),
            "",
            "| XGBoost MAPE change, attention + AMMs vs raw | paper | here |",
            "|---|---|---|",
            *paper_rows(summary),
            "",
        ]
    out += _comparison_sections(summary)
    if vector_rows(summary):
        out += [
            "## " + VECTOR_TITLE.strip("*").split("**")[0],
            "",
            *VECTOR_HEAD,
            *vector_rows(summary),
            "",
        ]
    return "\n".join(out) + "\n"


DETAIL = (
    ("within_2", "within 2×"),
    ("median_abs_log10", "median abs log10 error"),
    ("within_1_25", "within 1.25×"),
    ("r2_log_within_pair", "R² of log relR within pairs"),
    ("ranking_accuracy", "ranking accuracy"),
    ("top1_accuracy", "top-1 accuracy"),
    ("mape", "MAPE % (the paper's metric)"),
)


def _detail_tables(r: dict) -> list[str]:
    """Every metric with its 90% interval, per scope."""
    out = []
    for metric, title in DETAIL:
        digits = 0 if metric == "mape" else 2
        out += [
            f"{title}, with 90% intervals:",
            "",
            "| entry | " + " | ".join(s.replace("->", "→") for s in SCOPES) + " |",
            "|---|" + "---|" * len(SCOPES),
        ]
        for n, e in r["entries"].items():
            cells = [
                _ci(e["pooled"][s][metric], digits) if s in e["pooled"] else "–" for s in SCOPES
            ]
            out.append(f"| {n} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _fold_table(r: dict) -> list[str]:
    """Within 2× per fold (all scenarios), and the folds' mean."""
    folds = list(r["folds"])
    out = [
        "Within 2× per fold:",
        "",
        "| entry | " + " | ".join(folds) + " | mean |",
        "|---|" + "---|" * (len(folds) + 1),
    ]
    for n, e in r["entries"].items():
        cells = [_v(e["folds"].get(f, {}).get("all", {}).get("within_2")) for f in folds]
        out.append(
            f"| {n} | " + " | ".join(cells) + f" | {_v(e['fold_mean']['all']['within_2'])} |"
        )
    return [*out, ""]


def update_page(page, results_json) -> None:
    """Rewrite the results block of a page and ``results.md`` from ``results.json``.

    Args:
        page: a Markdown file holding the markers :data:`BEGIN` and :data:`END`; the text between
            them becomes :func:`results_block` of ``results_json``.
        results_json: the ``xamm eval`` summary; ``results.md`` is written beside it.
    """
    readme = page
    text = Path(readme).read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(
            f"{readme} lacks the markers of the results block; add the line {BEGIN} and, "
            f"below it, the line {END} where the block belongs"
        )
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    summary = json.loads(Path(results_json).read_text())
    Path(readme).write_text(head + results_block(summary) + tail)
    Path(results_json).with_name("results.md").write_text(markdown(summary))


SUMMARY_BEGIN = (
    "<!-- xamm-summary:begin (generated from docs/eval/results.json by "
    "xamm eval --page; do not edit) -->"
)
SUMMARY_END = "<!-- xamm-summary:end -->"


def _with_interval(v: dict) -> str:
    return f"{v['value']:.2f} [{v['lo']:.2f}, {v['hi']:.2f}]"


def summary_block(summary: dict) -> str:
    """The README's results summary (markers included): per scheme, the default predictor's within
    2× against the strongest baseline's on the same pairs, with 90% intervals and the paired
    difference.

    Args:
        summary: an ``xamm eval`` ``results.json``.

    Returns:
        At most ten Markdown lines between :data:`SUMMARY_BEGIN` and :data:`SUMMARY_END`.
    """
    rows = [
        "| split | default predictor | strongest baseline | difference |",
        "|---|---|---|---|",
    ]
    for scheme, r in _ordered(summary["results"]):
        base = r["comparisons"]["best_baseline"]["all"]
        d = r["comparisons"]["default_vs_best_baseline"]["all"]["within_2"]
        mine = r["entries"]["stacked/default"]["pooled"]["all"]["within_2"]
        theirs = r["entries"][base]["pooled"]["all"]["within_2"]
        rows.append(
            f"| {SCHEME_TITLES[scheme]} | {_with_interval(mine)} | "
            f"{base} {_with_interval(theirs)} | "
            f"{d['difference']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}] |"
        )
    return "\n".join([SUMMARY_BEGIN, *rows, SUMMARY_END])


def update_summary(readme, results_json) -> None:
    """Rewrite the README's results summary (:func:`summary_block`) from ``results.json``.

    Args:
        readme: a Markdown file holding :data:`SUMMARY_BEGIN` and :data:`SUMMARY_END`.
        results_json: the ``xamm eval`` summary.
    """
    text = Path(readme).read_text()
    if SUMMARY_BEGIN not in text or SUMMARY_END not in text:
        raise ValueError(f"{readme} lacks the markers of the results summary")
    head, rest = text.split(SUMMARY_BEGIN, 1)
    summary = json.loads(Path(results_json).read_text())
    Path(readme).write_text(head + summary_block(summary) + rest.split(SUMMARY_END, 1)[1])
