"""What the per-file path of a Caliper ingest keeps from one profile for the next, or works out
by a shorter road, is what the plain rule gives: each shortcut against that rule written out
here, on seeded inputs that reach its edges (non-finite and overflowing sums, a second spelling of
a counter, versions that are equal keys but different text, a list where text is expected,
columns in another order, file names with dots at either end)."""

from __future__ import annotations

import math
import random
from pathlib import PurePosixPath

import pytest

from xamm_data.tables import counters
from xamm_data.tables.regions import SCHEMA, exact_sum
from xamm_ingest.errors import IngestError
from xamm_ingest.readers import base, caliper_regions, profile_common
from xamm_ingest.readers.base import Source


def test_a_file_names_stem_and_suffix_are_pathlibs():
    rng = random.Random(66)
    names = ["", "a", ".a", "a.", "..", "...", "a.b.c", "..a", "a..", "x.JSON", ".a.b", "a.b."]
    names += ["".join(rng.choice("ab.") for _ in range(rng.randint(1, 7))) for _ in range(3000)]
    for name in names:
        p = PurePosixPath("/d", name) if name.strip(".") or len(name) > 2 else PurePosixPath(name)
        assert caliper_regions._stem_suffix(p.name) == (p.stem, p.suffix), name


def test_metric_totals_are_the_exact_sum_of_each_column_whatever_it_holds():
    rng = random.Random(66)
    edge = [math.inf, -math.inf, math.nan, 1e308, -1e308, 0.1, -0.0, 5e-324]
    for _ in range(500):
        numeric = tuple(sorted(rng.sample(["a#time.duration", "papi.PAPI_TOT_INS", "x", "y"], 3)))
        cols = [
            [rng.choice(edge) if rng.random() < 0.1 else rng.uniform(-1e3, 1e3) for _ in range(5)]
            for _ in numeric
        ]
        got = caliper_regions._totals(iter(cols), numeric)
        want = dict(zip(caliper_regions._total_names(numeric), map(exact_sum, cols)))
        assert list(got) == list(want)
        assert all(math.isnan(want[k]) if math.isnan(v) else v == want[k] for k, v in got.items())


def _split_as_written(metrics: dict, src: Source) -> tuple[dict, list]:
    """The counters and the rest by the plain rule: sorted, the first spelling fills a counter."""
    canon: dict = {}
    extra: list = []
    for raw in sorted(metrics):
        value = metrics[raw]
        if value is None or not math.isfinite(value):
            raise IngestError(src.path, f"metric {raw!r} is {value!r}", record=raw)
        name = counters.resolve(raw)
        if name is not None and name not in canon:
            if value < 0:
                raise IngestError(src.path, f"counter {raw!r} is negative", record=raw)
            canon[name] = float(value)
        else:
            extra.append({"name": raw, "value": float(value)})
    return canon, extra


def test_metrics_split_into_counters_and_the_rest_by_the_plain_rule(tmp_path):
    rng = random.Random(66)
    src = Source(tmp_path / "p.cali", "p.cali", "0" * 64)
    spellings = ["PAPI_TOT_INS", "papi.PAPI_TOT_INS", "instructions", "PAPI_TOT_CYC", "foo", "bar"]
    for _ in range(600):
        keys = rng.sample(spellings, rng.randint(1, len(spellings)))
        metrics = {k: rng.choice([1.0, 2.5, -1.0, math.nan, None, 7]) for k in keys}
        try:
            want = _split_as_written(metrics, src)
        except IngestError as e:
            with pytest.raises(IngestError) as got:
                profile_common._split_metrics(metrics, src)
            assert got.value.record == e.record
        else:
            assert profile_common._split_metrics(metrics, src) == want


def test_provenance_writes_each_tools_version_as_written(tmp_path):
    """Kept text is looked up by its versions: 1, 1.0 and True are one key but three texts, and a
    list is no key."""
    src = Source(tmp_path / "p.cali", "p.cali", "0" * 64)
    cases = [
        {"caliper": "2.11"}, {"caliper": 1}, {"caliper": 1.0}, {"caliper": True},
        {"caliper": ["2.11", "2.12"]}, {"caliper": None, "raja": "0.1"}, {}, None,
    ]  # fmt: skip
    for _ in range(2):  # the second time from what the first kept
        for versions in cases:
            got = base.provenance(src, "caliper-cali", "r", versions)["tool_versions"]
            want = ";".join(f"{k}={v}" for k, v in sorted((versions or {}).items()) if v) or None
            assert got == want, versions


def test_region_rows_take_the_columns_in_any_order(tmp_path):
    cols = {c: [] for c in SCHEMA}
    n = 3
    for c in cols:
        cols[c] = (
            [float(i) for i in range(n)] if c.endswith("_s") else [f"{c}{i}" for i in range(n)]
        )
    meta = profile_common.ProfileFields(path="p", format="caliper-cali", app="a")
    shuffled = dict(reversed(list(cols.items())))
    a = profile_common.RegionRows.of_columns(meta, cols, {}, [])
    b = profile_common.RegionRows.of_columns(meta, shuffled, {}, [])
    assert list(a.rows) == list(b.rows) and list(a.rows.columns) == list(SCHEMA)
    assert a.runtime_s == b.runtime_s == exact_sum(cols["exclusive_s"])
    empty = profile_common.RegionRows.of_columns(meta, {c: [] for c in SCHEMA}, {}, [])
    assert empty.runtime_s is None and len(empty.rows) == 0


def _random_tree(rng: random.Random) -> list[tuple[str, ...]]:
    """Up to 40 region paths, one root, parents listed before or after their children, wide and
    deep, each label once under its parent."""
    paths = [("main",)]
    for i in range(rng.randint(0, 39)):
        paths.append((*rng.choice(paths), f"r{i}"))
    rng.shuffle(paths)
    return paths


def test_a_uniform_profiles_times_are_the_times_read_region_by_region():
    """Inclusive times scaled and exclusive times (the inclusive less the children's, added in
    region order, never below 0), as :func:`caliper_regions._times` works them out, bit for bit:
    wide trees, negative times and -0.0, either time attribute missing."""
    rng = random.Random(66)
    edge = [0.0, -0.0, -1.0, 1e-300, 1e300, 0.1, 0.2, 0.3]
    for _ in range(1500):
        paths = _random_tree(rng)
        tree = caliper_regions._tree(tuple(paths))
        n = len(paths)
        cols = {
            a: [rng.choice(edge) if rng.random() < 0.2 else rng.uniform(-1, 9) for _ in range(n)]
            for a in ("i", "e")
        }
        inc, exc = rng.choice([("i", None), ("i", "e"), (None, "e")])
        scale = {a: rng.choice([1.0, 1e-9, 0.25, 1 / 3]) for a in ("i", "e")}
        plan = (inc, exc, scale, 1)
        lay = caliper_regions._layout(tree, (False,) * n, ("e", "i"), (inc, exc, 1), 64)
        got = caliper_regions._uniform_times(cols.__getitem__, plan, lay.kids)
        regions = caliper_regions._Regions(
            tree.keys, tree.names, tree.parents, [False] * n, lay.leaf, cols.__getitem__, 1
        )
        want = caliper_regions._times(regions, inc, exc, scale)
        assert list(map(repr, got[0])) == list(map(repr, want[0]))
        assert list(map(repr, got[1])) == list(map(repr, want[1]))


def test_a_profiles_work_from_counters_is_what_the_store_works_out_from_them(tmp_path, monkeypatch):
    """Flops (the single- and double-precision operations added) and bytes (last-level-cache
    misses x the line) of each region of a written ``.cali`` file, read attribute by attribute and
    record by record, are what :func:`~xamm_data.tables.regions.work_from_counters` gives for
    the counters as written; a profile without flop counters has no flops."""
    import polars as pl
    from cali_writer import write_cali

    from xamm_data.tables.regions import LINE_BYTES, work_from_counters
    from xamm_ingest.readers.caliper_regions import read_caliper_rows

    rng = random.Random(66)
    attrs = {"sp_ops": "sum#papi.PAPI_SP_OPS", "dp_ops": "sum#papi.PAPI_DP_OPS",
             "l3_tcm": "sum#papi.PAPI_L3_TCM"}  # fmt: skip
    for i in range(40):
        kept = {c: a for c, a in attrs.items() if rng.random() < 0.7}
        paths = [["main"], *(["main", f"k{j}"] for j in range(rng.randint(0, 4)))]
        values = [{a: float(rng.randint(0, 10**9)) for a in kept.values()} for _ in paths]
        regions = [
            (p, {"sum#inclusive#sum#time.duration": 1.0, **v}) for p, v in zip(paths, values)
        ]
        f = write_cali(tmp_path / f"w{i}.cali", regions, {"cluster": "quartz"},
                       units={"sum#inclusive#sum#time.duration": "sec"})  # fmt: skip
        ctr = {f"ctr_{c}": [v[a] for v in values] for c, a in kept.items()}
        want = work_from_counters(pl.DataFrame({"region": paths, **ctr}), LINE_BYTES)
        for uniform in (True, False):
            if not uniform:
                monkeypatch.setattr(caliper_regions, "_uniform", lambda recs: None)
            got = read_caliper_rows(f).rows.columns
            monkeypatch.undo()
            assert got["flops"] == want["flops"].to_list(), (kept, uniform)
            assert got["bytes"] == want["bytes"].to_list(), (kept, uniform)


def _random_task_fields(rng: random.Random, root) -> dict:
    """Every field of a :class:`Task`, seeded, each of a type it holds."""
    return {
        "fmt": rng.choice(["caliper", "rajaperf", "hpctoolkit"]),
        "path": root / f"d{rng.randint(0, 9)}" / f"f{rng.randint(0, 99)}.cali",
        "root": root,
        "machine": rng.choice([None, "quartz", "lassen"]),
        "run": rng.choice([None, object()]),
        "defaults": rng.choice([(), (("machine", "dane"),), (("metadata", None),)]),
        "why_no_machine": rng.choice(["", "no xamm.toml"]),
        "sha256": rng.choice([None, f"{rng.getrandbits(256):064x}"]),
        "machine_beside": rng.random() < 0.5,
        "link": rng.choice([None, False, True]),
        "data": rng.choice([None, b"", rng.randbytes(8)]),
    }


def test_a_task_or_source_built_without_init_is_the_one_init_builds(tmp_path):
    """:func:`~xamm_ingest._frozen.built` (the per-source copies of a Task hashed, and each
    Source) gives what the class's ``__init__`` gives: equal, same repr and hash, each field the
    very object given, still frozen; for classes it may build (no ``__post_init__``, no
    ``__slots__``, every field an ``__init__`` argument). ``hashed`` is ``dataclasses.replace``."""
    import dataclasses

    from xamm_ingest._frozen import built
    from xamm_ingest.pipeline.stages import hashed
    from xamm_ingest.sources import Task

    for cls in (Task, Source):
        assert not hasattr(cls, "__post_init__") and "__slots__" not in vars(cls), cls
        assert all(f.init for f in dataclasses.fields(cls)), cls
    rng = random.Random(66)
    for _ in range(300):
        fields = _random_task_fields(rng, tmp_path)
        made, want = built(Task, fields), Task(**fields)
        assert made == want and repr(made) == repr(want) and hash(made) == hash(want)
        assert all(getattr(made, k) is v for k, v in fields.items())
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.sha256 = "x"  # type: ignore[misc]
        t = Task(**{**fields, "sha256": None})
        sha, link, data = f"{rng.getrandbits(256):064x}", rng.choice([None, True]), b"d"
        got = hashed(t, sha, link, data)
        assert got == dataclasses.replace(t, sha256=sha, link=link, data=data)
        assert got.data is data and vars(got) == {
            **vars(t),
            "sha256": sha,
            "link": link,
            "data": data,
        }
        src = Source.of(fields["path"], tmp_path, sha, False, data)
        rel = fields["path"].relative_to(tmp_path).as_posix()
        assert src == Source(fields["path"], rel, sha, data) and src.data is data


def test_a_caliper_profiles_metadata_lands_under_each_fields_name(tmp_path):
    """The reader builds the metadata record by position: each value a profile gives, all of
    them distinct, is the one the record holds under that field's name."""
    from datetime import UTC, datetime

    from tests.cali_writer import write_cali

    globals_ = {
        "cali.caliper.version": "2.9.1", "cluster": "quartz", "app": "myapp",
        "variant": "myvariant", "input_size": "13", "input_type": "t1",
        "programming_model": "OpenMP", "mpi.world.size": "3", "omp.num.threads": "5",
        "num_gpus": "7", "numhosts": "11", "launchdate": "1700993161", "foo": "bar",
    }  # fmt: skip
    regions = [(["main"], {"sum#inclusive#sum#time.duration": 2.0})]
    units = {"sum#inclusive#sum#time.duration": "sec"}
    f = write_cali(tmp_path / "p.cali", regions, globals_, units=units)
    meta = caliper_regions.read_caliper_rows(f).meta._asdict()
    want = {
        "path": str(f), "format": "caliper-cali", "app": "myapp", "source": "quartz:gpu",
        "cluster": "quartz", "ranks": 3, "threads": 5, "gpus": 7, "hosts": 11,
        "programming_model": "OpenMP", "variant": "myvariant", "input_size": 13,
        "input_type": "t1", "run_date": datetime.fromtimestamp(1700993161, UTC),
        "tool_versions": {"caliper": "2.9.1"},
        "extra_metadata": ({"name": "app", "value": "myapp"}, {"name": "foo", "value": "bar"}),
    }  # fmt: skip
    assert {k: meta[k] for k in want} == want
    assert meta["source_from"].startswith("Caliper global cluster=quartz; gpu:")
    assert meta["time_from"].startswith("inclusive sum#inclusive#sum#time.duration")
