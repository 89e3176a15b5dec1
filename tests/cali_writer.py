"""Write small Caliper ``.cali`` files (the text format ``caliperreader`` reads) for tests.

Only what RAJAPerf's spot channel writes: a nested ``region`` attribute, double-valued metrics with
optional alias/unit metadata, and string globals (Adiak metadata).
"""

from __future__ import annotations

from pathlib import Path

T_STRING, T_DOUBLE = 3, 5  # caliperreader's bootstrap type nodes
PROP_GLOBAL, PROP_NESTED, PROP_VALUE, PROP_META = 1612, 276, 65, 64


def _esc(s) -> str:
    return str(s).replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def write_cali(
    path: Path,
    regions: list[tuple[list[str], dict[str, float]]],
    globals_: dict[str, str],
    units: dict[str, str] | None = None,
    aliases: dict[str, str] | None = None,
) -> Path:
    """Write ``regions`` (call path, {metric: value}) and ``globals_`` to ``path``."""
    units, aliases = units or {}, aliases or {}
    lines: list[str] = []
    next_id = [12]

    def node(attr: int, data, parent: int | None = None) -> int:
        nid = next_id[0]
        next_id[0] += 1
        lines.append(
            f"__rec=node,id={nid},attr={attr},data={_esc(data)}"
            + (f",parent={parent}" if parent is not None else "")
        )
        return nid

    meta_prop = node(10, PROP_META, T_STRING)
    alias_attr = node(8, "attribute.alias", meta_prop)
    unit_attr = node(8, "attribute.unit", meta_prop)
    region_attr = node(8, "region", node(10, PROP_NESTED, T_STRING))
    metric_ids: dict[str, int] = {}
    names = sorted({m for _, ms in regions for m in ms})
    for m in names:
        parent = T_STRING if any(isinstance(ms.get(m), str) for _, ms in regions) else T_DOUBLE
        if m in units:
            parent = node(unit_attr, units[m], parent)
        if m in aliases:
            parent = node(alias_attr, aliases[m], parent)
        metric_ids[m] = node(8, m, node(10, PROP_VALUE, parent))
    region_nodes: dict[tuple, int] = {}
    for path_labels, metrics in regions:
        parent = None
        for i in range(len(path_labels)):
            key = tuple(path_labels[: i + 1])
            if key not in region_nodes:
                region_nodes[key] = node(region_attr, path_labels[i], parent)
            parent = region_nodes[key]
        attrs = [metric_ids[m] for m in metrics]
        vals = [
            f"{metrics[m]:.6f}" if isinstance(metrics[m], float) else str(metrics[m])
            for m in metrics
        ]
        lines.append(
            f"__rec=ctx,ref={parent},attr={'='.join(map(str, attrs))},data={'='.join(vals)}"
        )
    gprop = node(10, PROP_GLOBAL, T_STRING)
    gattrs = {k: node(8, k, gprop) for k in globals_}
    parent = None
    for k, v in globals_.items():
        parent = node(gattrs[k], v, parent)
    if parent is not None:
        lines.append(f"__rec=globals,ref={parent}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rajaperf_cali(
    path: Path,
    kernels: dict[str, dict],
    *,
    variant="Base_Seq",
    tuning="default",
    cluster="quartz",
    cmdline="[raja-perf.exe,--size,1000]",
    time_attr="avg#inclusive#sum#time.duration",
    unit="sec",
    extra_globals: dict | None = None,
) -> Path:
    """A RAJAPerf-shaped spot profile: RAJAPerf -> Group -> Group_KERNEL with per-kernel figures.

    ``kernels`` maps ``Group_KERNEL`` to {"time": inclusive seconds over all reps and passes,
    "reps":, "size":, "bytes":, "flops":, "iters":}.
    """
    scale = {"sec": 1.0, "ns": 1e9}[unit]
    regions = []
    groups: dict[str, float] = {}
    for k, d in kernels.items():
        groups[k.split("_")[0]] = groups.get(k.split("_")[0], 0.0) + d["time"]
    regions.append((["RAJAPerf"], {time_attr: sum(groups.values()) * scale}))
    for g, t in groups.items():
        regions.append((["RAJAPerf", g], {time_attr: t * scale}))
    for k, d in kernels.items():
        g = k.split("_")[0]
        m = {
            time_attr: d["time"] * scale,
            "any#any#max#Reps": float(d["reps"]),
            "any#any#max#ProblemSize": float(d["size"]),
            "any#any#max#Bytes/Rep": float(d.get("bytes", 0)),
            "any#any#max#Flops/Rep": float(d.get("flops", 0)),
            "any#any#max#Iterations/Rep": float(d.get("iters", d["size"])),
            "any#any#max#Kernels/Rep": 1.0,
        }
        regions.append((["RAJAPerf", g, k], m))
    g = {
        "cali.caliper.version": "2.10.0",
        "cluster": cluster,
        "variant": variant,
        "tuning": tuning,
        "compiler": "g++-12.2.0",
        "rajaperf_compiler_options": "-O3",
        "omp_max_threads": "2",
        "perfsuite_version": "2024.07.0",
        "raja_version": "2024.07.0",
        "launchdate": "1700000000",
        "cmdline": cmdline,
        "ProblemSizeRunParam": "1000.000000",
        **(extra_globals or {}),
    }
    return write_cali(
        path, regions, g, units={time_attr: unit}, aliases={time_attr: "Avg time/rank"}
    )
