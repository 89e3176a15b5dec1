"""Independent oracles for the surface fuzzers (tests/test_surface_fuzz.py): what a criteria file
or a machine record means by the rules its documentation states (docs/history.md,
docs/machines.md), written here without xamm's models, so that a fuzzer can tell a right refusal
from a false alarm and a right read from a silent one."""

from __future__ import annotations

import math
import re
import tomllib
import types

import polars as pl
import yaml

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$")  # docs/machines.md: names
CRITERION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _number(v, lo: float, hi: float, *, lo_open: bool = False) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return False
    return (lo < v if lo_open else lo <= v) and v <= hi


def _parse(text: bytes):
    try:
        return tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def criteria_ok(text: bytes) -> bool:
    """Whether a criteria file is valid: fractions in range (at_least in (0, 10], at_most in
    [0, 5]), a size ratio in [1, 64], unique ids, named groups."""
    doc = _parse(text)
    if doc is None or doc.get("schema_version", 1) != 1:
        return False
    if "size_ratio" in doc and not _number(doc["size_ratio"], 1, 64):
        return False
    crits = doc.get("criterion")
    if not isinstance(crits, list) or not crits:
        return False
    ids = [c.get("id") for c in crits]
    if len(set(map(str, ids))) != len(ids):
        return False
    return all(_criterion_ok(c) for c in crits)


def _criterion_ok(c: dict) -> bool:
    if not isinstance(c.get("id"), str) or not CRITERION_ID.match(c["id"]):
        return False
    groups = c.get("groups", ["*"])
    if (
        not isinstance(groups, list)
        or not groups
        or not all(
            isinstance(g, str) and 0 < len(g) <= 100 and not CONTROL.search(g) for g in groups
        )
    ):
        return False
    if c.get("kind") == "throughput":
        return _number(c.get("at_least"), 0, 10, lo_open=True)
    if c.get("kind") == "slowdown":
        return _number(c.get("at_most"), 0, 5)
    return False


COUNTS = ("sockets", "cores_per_node", "gpus_per_node", "processor_cores")
FIGURES = (
    "memory_gib",
    "memory_bandwidth_gbs",
    "cache_mib",
    "peak_gflops",
    "gpu_memory_gib",
    "gpu_memory_bandwidth_gbs",
    "gpu_cache_mib",
    "gpu_peak_gflops",
    "processor_memory_bandwidth_gbs",
    "processor_cache_mib",
    "processor_peak_gflops",
)


def registry_record_ok(text: bytes, mid: str) -> bool | None:
    """Whether the record ``mid`` of a user registry file is valid; None when the file is no
    TOML at all."""
    doc = _parse(text)
    if doc is None:
        return None
    rec = (doc.get("machines") or {}).get(mid)
    if not isinstance(rec, dict) or not NAME.match(mid) or len(mid) > 100:
        return False
    for k, v in rec.items():
        if k in COUNTS and (isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10**7):
            return False
        if k in FIGURES and not (_number(v, 0, 1e12, lo_open=True) and v < 1e12):
            return False
        if k in ("cpu", "gpu", "source", "notes") and not isinstance(v, str):
            return False
        if k == "aliases" and not (
            isinstance(v, list)
            and all(
                isinstance(a, str) and a.strip() and len(a) <= 100 and not CONTROL.search(a)
                for a in v
            )
        ):
            return False
    return True


def comparison_of(groups: list[str], regime: str = "same") -> types.SimpleNamespace:
    """What :func:`~xamm_models.compare.certificates.records.judge` reads of a comparison:
    these kernel groups against quartz, each passing any criterion with room to spare, their
    matched sizes in one cache ``regime`` (``same`` or ``across``)."""
    n = len(groups)
    frame = pl.DataFrame(
        {
            "ref": ["quartz:cpu"] * n,
            "group": groups,
            "kernels": [5] * n,
            "relR": [0.5] * n,
            "relR_lo": [0.4] * n,
            "relR_hi": [0.6] * n,
            "relR_node": [0.5] * n,
            "relR_node_lo": [0.4] * n,
            "relR_node_hi": [0.6] * n,
            "flagged": [0] * n,
            "regime": [regime] * n,
            "regime_why": ["sizes in other cache levels" if regime == "across" else None] * n,
        },
        schema_overrides={"regime_why": pl.String},
    )
    return types.SimpleNamespace(
        groups=frame, refs=["quartz:cpu"], node_view=True, new="newbox:cpu"
    )


# ``xamm run`` configs (examples/run-config.yml; docs/models.md): the fields, the names each takes
RUN_FIELDS = {
    "func", "machine_data_path", "app_train_data_path", "app_test_data_path", "src_model_path",
    "src_machine_amm", "target_machine_amm", "features", "targets", "regressor", "embedder",
    "log_target", "aggregation", "epochs", "seed", "output", "model",
}  # fmt: skip
RUN_PATHS = (
    "machine_data_path", "app_train_data_path", "app_test_data_path", "output",
    "src_model_path", "src_machine_amm", "target_machine_amm",
)  # fmt: skip
REGRESSORS = ("catboost", "xgboost", "random_forest", "adaboost", "bagging")
EMBEDDERS = ("attention", "mlp", "ae", "vae")


def _whole(v, least: int | None = None) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and (least is None or v >= least)


def _names(v) -> bool:
    """None, or a list of distinct names, none blank."""
    if v is None:
        return True
    ok = isinstance(v, list) and v and all(isinstance(n, str) and n.strip() for n in v)
    return bool(ok) and len(set(v)) == len(v)


def run_config_ok(text: bytes) -> bool:
    """Whether an ``xamm run`` config is valid: a YAML mapping of known fields; ``func`` amm,
    train or test with the inputs it needs; paths and names as non-blank text; a known regressor
    and embedder (any case), aggregation and model; ``epochs`` a whole number >= 1, ``seed`` a
    whole number, ``log_target`` true or false."""
    try:
        doc = yaml.safe_load(text.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(doc, dict) or not set(doc) <= RUN_FIELDS:
        return False
    if not all(
        doc.get(k) is None or (isinstance(doc[k], str) and doc[k].strip()) for k in RUN_PATHS
    ):
        return False
    named = [
        (doc.get("regressor", "catboost"), REGRESSORS),
        (doc.get("embedder", "attention"), EMBEDDERS),
    ]
    if not all(isinstance(v, str) and v.lower() in known for v, known in named):
        return False
    if not (
        doc.get("aggregation", "l2") in ("mean", "l2", "variance")
        and doc.get("model", "xamm") in ("xamm", "vae-dnn")
        and _whole(doc.get("epochs", 200), 1)
        and _whole(doc.get("seed", 0))
        and isinstance(doc.get("log_target", True), bool)
        and _names(doc.get("features"))
        and _names(doc.get("targets"))
    ):
        return False
    has = {k for k in RUN_PATHS if doc.get(k) is not None}
    needs = {
        "amm": "machine_data_path" in has,
        "train": "app_train_data_path" in has and bool(has & {"src_model_path", "output"}),
        "test": "app_test_data_path" in has
        and bool(has & {"src_model_path", "app_train_data_path"}),
    }
    func = doc.get("func")
    return isinstance(func, str) and needs.get(func, False)


# ``xamm-ingest table --mapping`` files (examples/table-mapping.toml; the reader's docstring)
MAPPING_TABLES = {"columns", "params", "counters", "units", "defaults", "ignore"}
MAPPING_FIELDS = ("app", "machine", "device", "runtime_s", "threads", "ranks", "gpus", "trial")
MAPPING_COUNTS = ("threads", "ranks", "gpus", "trial")
# docs: "any usual spelling" of a time unit
TIME_SPELLINGS = {"s", "sec", "ms", "msec", "us", "usec", "µs", "ns", "nsec", "seconds"}


def _counter_names() -> set[str]:
    """Every counter name and alias schemas/counters.json documents."""
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).parents[1] / "schemas" / "counters.json").read_text())
    names = set()
    for c in doc["counters"]:
        names.add(c["name"])
        for key in ("papi", "perf", "hpctoolkit", "caliper"):
            names.update(c.get(key, []))
    return names


def _default_ok(field: str, value) -> bool:
    if field in MAPPING_COUNTS:  # docs/schema: threads and ranks at least 1, gpus and trial 0
        return _whole(value, 1 if field in ("threads", "ranks") else 0)
    if field == "runtime_s":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str) and bool(value.strip())


def table_mapping_ok(text: bytes, table_columns: list[str]) -> bool:
    """Whether a column mapping is valid for a table with ``table_columns``: known tables; fields
    mapped to columns the table has; ``params`` distinct columns it has; counters a documented
    name or alias; a runtime unit a time's spelling; defaults only for fields without a column,
    each of its field's kind (a count a whole number); app, machine and runtime_s given."""
    doc = _parse(text)
    if doc is None or not set(doc) <= MAPPING_TABLES:
        return False
    cols, params = doc.get("columns", {}), doc.get("params", [])
    defaults, units = doc.get("defaults", {}), doc.get("units", {})
    if not all(isinstance(x, dict) for x in (cols, defaults, units, doc.get("counters", {}))):
        return False
    if not set(cols) <= set(MAPPING_FIELDS) or not all(v in table_columns for v in cols.values()):
        return False
    if not isinstance(params, list) or len(set(map(str, params))) != len(params):
        return False
    ignore = doc.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(x, str) for x in ignore):
        return False
    if not all(isinstance(p, str) and p in table_columns for p in params):
        return False
    known = _counter_names()
    counters = doc.get("counters", {})
    if not all(c in table_columns and a in known for c, a in counters.items()):
        return False
    if set(units) - {"runtime_s"} or not all(
        isinstance(u, str) and u.strip().lower() in TIME_SPELLINGS for u in units.values()
    ):
        return False
    if not all(
        f in MAPPING_FIELDS and f not in cols and _default_ok(f, v) for f, v in defaults.items()
    ):
        return False
    return all(f in cols or f in defaults for f in ("app", "machine", "runtime_s"))


# ``xamm.toml`` beside runs (docs/ingest-rajaperf.md; docs/machines.md for the machine's name)
RUN_DIR_FIELDS = {"machine", "compiler", "compiler_flags", "omp_max_threads", "device", "metadata",
                  "node"}  # fmt: skip


def _machine_name_ok(v) -> bool:
    """A machine as a user may write it: text with a letter or digit, no path parts or control
    characters (other characters become ``-``)."""
    return (
        isinstance(v, str)
        and bool(re.search(r"[A-Za-z0-9]", v))
        and not re.search(r"[/\\]|\.\.|[\x00-\x1f\x7f]", v)
    )


def run_dir_config_ok(text: bytes) -> bool:
    """Whether an ``xamm.toml``'s top-level fields are valid: known fields; a machine name; a
    compiler and flags as non-blank text; ``omp_max_threads`` a whole number >= 1; ``device`` cpu
    or gpu."""
    doc = _parse(text)
    if doc is None or not set(doc) <= RUN_DIR_FIELDS:
        return False
    if "machine" in doc and not _machine_name_ok(doc["machine"]):
        return False
    texts = [doc[k] for k in ("compiler", "compiler_flags") if k in doc]
    if not all(isinstance(v, str) and v.strip() for v in texts):
        return False
    if "omp_max_threads" in doc and not _whole(doc["omp_max_threads"], 1):
        return False
    return doc.get("device", "cpu") in ("cpu", "gpu") and _metadata_ok(doc.get("metadata", {}))


# the columns a ``[metadata]`` map fills (docs/ingest-profiles.md, "metadata")
METADATA_COLUMNS = ("variant", "input_size", "input_type", "programming_model", "ranks",
                    "threads", "gpus", "hosts")  # fmt: skip


def _metadata_ok(m) -> bool:
    """A ``[metadata]`` table: per column a list of non-blank keys; ``values``: per column a
    table of non-blank spellings to text."""
    if not isinstance(m, dict) or not set(m) <= {*METADATA_COLUMNS, "values"}:
        return False
    lists = [v for k, v in m.items() if k != "values"]
    if not all(isinstance(v, list) and all(isinstance(k, str) and k.strip() for k in v)
               for v in lists):  # fmt: skip
        return False
    values = m.get("values", {})
    return isinstance(values, dict) and all(
        c in METADATA_COLUMNS
        and isinstance(sp, dict)
        and all(isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in sp.items())
        for c, sp in values.items()
    )


def parquet_nesting_ok(data: bytes, limit: int = 64) -> bool | None:
    """Whether a Parquet file's schema nests at most ``limit`` levels below its root, as pyarrow's
    own reader of the footer lists each leaf's path (pyarrow refuses a schema deeper than 100
    itself); None where pyarrow cannot read the footer at all (a named refusal is right then, and
    so is a read)."""
    import io

    import pyarrow.parquet as pq

    try:
        md = pq.read_metadata(io.BytesIO(data))
    except (OSError, ValueError) as e:  # pyarrow's IOError and ArrowInvalid
        return False if "too deeply nested" in str(e) else None
    paths = [md.schema.column(i).path for i in range(md.num_columns)]
    return max((len(p.split(".")) for p in paths), default=0) <= limit


# ``--bound NAME=VALUE`` (docs/ingest-rajaperf.md, "Physical plausibility"; their defaults as the
# help lists them)
BOUND_DEFAULTS = {
    "min_time_per_rep_s": 1e-10, "max_time_per_rep_s": 1e5, "max_bytes_per_rep": 1e16,
    "max_flops_per_rep": 1e16, "max_problem_size": 1e12, "min_runtime_s": 1e-9,
    "max_runtime_s": 1e7,
}  # fmt: skip


def bound_items_ok(items: list[str]) -> bool:
    """Whether ``--bound`` items are valid: each ``NAME=VALUE`` with a known name (spaces around it
    allowed), given once, its value a number Python reads (``float``) above 0; each lowest
    plausible value below its highest."""
    got = dict(BOUND_DEFAULTS)
    seen = set()
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in BOUND_DEFAULTS or name in seen:
            return False
        seen.add(name)
        try:
            got[name] = float(value)
        except ValueError:
            return False
        if not got[name] > 0:
            return False
    return (got["min_time_per_rep_s"] < got["max_time_per_rep_s"]
            and got["min_runtime_s"] < got["max_runtime_s"])  # fmt: skip
