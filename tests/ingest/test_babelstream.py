"""``xamm-ingest babelstream``: every BabelStream output in the shared UoB logs, and the layouts
BabelStream writes that the logs do not hold (``--csv``, ``--mibibytes``, ``--triad-only``), built
from its ``src/main.cpp`` at v4.0 and v5.0."""

from __future__ import annotations

import hashlib
import re

import polars as pl
import pytest

from xamm_ingest import read_babelstream
from xamm_ingest.cli import main as ingest_main
from xamm_ingest.readers import babelstream as bs

UOB = "UoB-HPC+performance-portability/benchmarking"
# the study names its platforms by directory in 2019, by file name from 2022
PATTERNS = (
    r"^2019/babelstream/(?P<machine>[^/]+)/",
    r"babelstream-(?P<machine>[a-z0-9]+(?:_80g)?)_(?P<compiler>[a-z]+-[0-9.]+)_",
)
ARRAYS = {"Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2}


SYCL_ON_HOST = "2022/babelstream/results/babelstream-uhdp630_oneapi-2022.2_sycl.out"


@pytest.fixture(scope="module")
def uob(shared_data):
    return read_babelstream(shared_data / UOB, path_patterns=PATTERNS, workers=1)


def _independent(path) -> list[tuple[str, float, float, float, float, float]]:
    """(kernel, MB/s, min, max, avg, array MB) of every table line, by a parse of its own: a run's
    array size is the last ``Array size`` line above its table."""
    out, mb = [], None
    for line in path.read_text(errors="replace").splitlines():
        if m := re.match(r"Array size: ([0-9.]+) MB", line):
            mb = float(m.group(1))
        parts = line.split()
        if len(parts) == 5 and parts[0] in ARRAYS:
            out.append((parts[0], *map(float, parts[1:]), mb))
    return out


def test_every_uob_babelstream_output_is_read(uob, shared_data):
    root = shared_data / UOB
    outputs = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and "BabelStream\n" in p.read_text(errors="replace")
    }
    # the one run on a device its platform does not have: a SYCL run on the GPU-only uhdp630 that
    # picked the host CPU (its own `Using SYCL device` line names the Xeon)
    assert [r.path for r in uob.rejected] == [SYCL_ON_HOST]
    assert "Using SYCL device Intel(R) Xeon(R) E-2176G" in (root / SYCL_ON_HOST).read_text()
    assert "registry records 'uhdp630' with its gpu only" in uob.rejected[0].reason
    read = set(uob.frame.get_column("source_path").unique())
    assert read <= outputs
    # byte-identical copies (``x.out`` and ``x.out0``) are one measurement; a run cut short before
    # its table has no row, and says so
    digest = {p: hashlib.sha256((root / p).read_bytes()).digest() for p in outputs}
    kept = {digest[p] for p in read}
    cut = {d.path for d in uob.dropped if "no kernel results" in d.rule}
    for p in outputs - read - {SYCL_ON_HOST}:
        assert digest[p] in kept or any(c.endswith(p) for c in cut), p
    assert uob.frame.get_column("machine").n_unique() == 28
    assert set(uob.frame.get_column("kernel")) == {f"Stream_{k.upper()}" for k in ARRAYS}


def test_stored_values_match_an_independent_parse(uob, shared_data):
    root = shared_data / UOB
    f = uob.frame
    checked = 0
    for rel in sorted(f.get_column("source_path").unique())[::7]:
        lines = _independent(root / rel)
        rows = f.filter(pl.col("source_path") == rel)
        assert rows.height == len(lines), rel
        got = sorted(
            zip(rows["kernel"], rows["time_per_rep_s"], rows["time_per_rep_min_s"], strict=True)
        )
        want = sorted((f"Stream_{k.upper()}", avg, lo) for k, _, lo, _, avg, _ in lines)
        assert got == want, rel
        for k, mbps, lo, _, _, mb in lines:
            row = rows.filter(
                (pl.col("kernel") == f"Stream_{k.upper()}") & (pl.col("time_per_rep_min_s") == lo)
            ).row(0, named=True)
            # bytes per rep: arrays moved x the printed array size (0.1 MB digits)
            assert row["bytes_per_rep"] == pytest.approx(ARRAYS[k] * mb * 1e6, abs=ARRAYS[k] * 5e4)
            assert row["bytes_per_rep"] * 1e-6 / lo == pytest.approx(mbps, rel=0.5e-5 / lo + 1e-4)
            checked += 1
    assert checked > 500


def test_thread_sweeps_keep_their_thread_counts(uob):
    scale = uob.frame.filter(
        pl.col("source_path").str.ends_with("scale_babelstream-graviton2_gcc-12.1_omp.out")
    )
    assert sorted(scale.get_column("threads").unique()) == list(range(1, 65))
    assert scale.filter(pl.col("threads") == 64).height == 5
    assert set(scale.get_column("compiler")) == {"gcc-12.1"}


def test_devices_come_from_the_run_or_the_registry(uob):
    f = uob.frame
    dev = dict(f.group_by("machine").agg(pl.col("device").unique()).iter_rows())
    assert dev["p100-isambard"] == ["gpu"] and dev["milan"] == ["cpu"]
    assert dev["a100-80g"] == ["gpu"]  # the file names' a100_80g is that registry record
    omp_gpu = f.filter((pl.col("machine") == "a100") & (pl.col("variant") == "BabelStream_OpenMP"))
    assert set(omp_gpu.get_column("backend")) == {"OpenMPTarget"}


def test_a_failed_validation_is_kept_and_flagged(uob):
    bad = uob.frame.filter(pl.col("checksum_status") == "FAILED")
    assert set(bad.get_column("source_path")) == {
        "2024/babelstream/results/babelstream-mi250x_rocm-5.6.1_hip-xnack_1.out"
    }


CSV_V5 = """\
phase,n_elements,sizeof,max_mbytes_per_sec,runtime
Init,33554432,8,7126.32,0.113
Read,33554432,8,3757.79,0.214
function,num_times,n_elements,sizeof,max_mbytes_per_sec,min_runtime,max_runtime,avg_runtime
Copy,100,33554432,8,{copy},0.000394,0.000402,0.000397
Mul,100,33554432,8,{mul},0.000395,0.000401,0.000398
Add,100,33554432,8,1.3461e+06,0.000598,0.000604,0.0006
Triad,100,33554432,8,1.3438e+06,0.000599,0.000606,0.000601
Dot,100,33554432,8,1.2765e+06,0.000421,0.00043,0.000425
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_csv_output_with_the_v5_phase_table(tmp_path):
    text = CSV_V5.format(copy="1.36257e+06", mul="1.35912e+06")
    p = _write(tmp_path, "stream.csv", text)
    (r,) = read_babelstream(p, machine="h100-node", device="gpu", workers=1).rejected
    assert "names no implementation" in r.reason and "--implementation" in r.reason
    rep = read_babelstream(p, machine="h100-node", device="gpu", implementation="CUDA", workers=1)
    f = rep.frame.sort("kernel")
    assert f.height == 5 and rep.rejected == [] and rep.dropped == []
    assert set(f.get_column("problem_size")) == {33554432}
    assert set(f.get_column("source_format")) == {"babelstream-csv"}
    assert set(f.get_column("variant")) == {"BabelStream_CUDA"}
    copy = f.filter(pl.col("kernel") == "Stream_COPY").row(0, named=True)
    assert copy["bytes_per_rep"] == 2 * 8 * 33554432 and copy["time_per_rep_s"] == 0.000397


def test_a_bandwidth_that_contradicts_its_time_drops_that_kernel(tmp_path):
    p = _write(tmp_path, "s.csv", CSV_V5.format(copy="2.72514e+06", mul="1.35912e+06"))
    rep = read_babelstream(p, machine="h100-node", device="gpu", implementation="HIP", workers=1)
    assert rep.frame.height == 4
    (d,) = rep.dropped
    assert d.record.endswith("(Copy)") and "2.72514e+06" in d.rule and "1.36" in d.rule


PLAIN_MIB_TRIAD = """\
BabelStream
Version: 4.0
Implementation: CUDA
Running triad 100 times
Number of elements: 33554432
Precision: float
Array size: 128.0 MiB (=0.1 GiB)
Total size: 384.0 MiB (=0.4 GiB)
Using CUDA device NVIDIA H100 80GB HBM3
Driver: 12020
Function    MiBytes/sec  Min (sec)   Max         Average
--------------------------------
Runtime (seconds): 0.02250
Bandwidth (GiB/s):  1666.667
"""


def test_triad_only_in_mebibytes(tmp_path):
    text = PLAIN_MIB_TRIAD.replace("1666.667", f"{3 * 4 * 33554432 * 100 / 0.0225 / 2**30:.3f}")
    rep = read_babelstream(_write(tmp_path, "t.out", text), machine="h100-node", workers=1)
    (row,) = rep.frame.iter_rows(named=True)
    assert row["kernel"] == "Stream_TRIAD" and row["tuning"] == "float"
    assert row["device"] == "gpu" and row["time_per_rep_s"] == pytest.approx(0.0225 / 100)
    assert row["bytes_per_rep"] == 3 * 4 * 33554432


def test_a_run_that_does_not_say_its_device_names_the_fix(tmp_path):
    text = (
        "BabelStream\nVersion: 4.0\nImplementation: Kokkos\nRunning kernels 100 times\n"
        "Precision: double\nArray size: 268.4 MB (=0.3 GB)\n"
        "Function    MBytes/sec  Min (sec)   Max         Average\n"
        "Copy        541295.461  0.00099     0.00100     0.00100\n"
    )
    p = _write(tmp_path, "k.out", text)
    rep = read_babelstream(p, machine="h100-node", workers=1)
    (r,) = rep.rejected
    assert "line 1" in r.reason and "--device cpu|gpu" in r.reason
    rep = read_babelstream(p, machine="h100-node", device="cpu", workers=1)
    assert rep.frame.get_column("device").to_list() == ["cpu"]
    assert rep.frame.get_column("problem_size").to_list() == [2**25]


def test_no_machine_rejects_naming_how_to_say_it(tmp_path):
    p = _write(tmp_path, "s.csv", CSV_V5.format(copy="1.36257e+06", mul="1.35912e+06"))
    (r,) = read_babelstream(p, device="gpu", implementation="CUDA", workers=1).rejected
    assert "--machine" in r.reason and "xamm.toml" in r.reason and "--path-pattern" in r.reason
    (tmp_path / "xamm.toml").write_text('machine = "h100-node"\ndevice = "gpu"\n')
    rep = read_babelstream(tmp_path, implementation="CUDA", workers=1)
    assert rep.rejected == [] and set(rep.frame.get_column("machine")) == {"h100-node"}


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("(", "missing ), unterminated subpattern"),
        ("a{99999999999}", "the repetition number is too large"),
        ("(?P<machin>[a-z]+)/", "group 'machin' supplies nothing; the groups are machine"),
        ("results/", "names no group; expected (?P<machine>...)"),
    ],
)
def test_a_path_pattern_that_cannot_supply_a_fact_is_refused_before_any_file(
    pattern, said, tmp_path, capsys
):
    """A path pattern compiles (a repeat count past re's limit included) and names only the groups
    that supply a fact, at least one: else a usage error on the command line, a ValueError from
    the library, before a file is read."""
    p = _write(tmp_path, "s.csv", CSV_V5.format(copy="1.36257e+06", mul="1.35912e+06"))
    with pytest.raises(SystemExit) as e:
        ingest_main(["babelstream", str(p), "--path-pattern", pattern, "--dry-run"])
    assert e.value.code == 2 and said in capsys.readouterr().err
    with pytest.raises(ValueError, match=re.escape(said)):
        read_babelstream(p, path_patterns=[pattern], workers=1)


def test_cli_nothing_ingestable_is_exit_1(tmp_path, capsys):
    _write(tmp_path, "log.txt", "Clover Version 1.300\nWall clock 12.3\n")
    rc = ingest_main(["babelstream", str(tmp_path), "--machine", "x", "--dry-run"])
    assert rc == 1 and "nothing ingestable" in capsys.readouterr().err


def test_the_plain_table_header_sets_the_unit():
    (run,) = bs.parse(
        "BabelStream\nVersion: 5.0\nImplementation: HIP\nRunning kernels 10 times\n"
        "Precision: double\nArray size: 256.0 MiB (=0.2 GiB)\n"
        "Function    MiBytes/sec  Min (sec)   Max         Average\n"
        "Copy        512000.000  0.00100     0.00100     0.00100\n"
    )
    assert run.mib and run.elements() == 2**25
    assert bs.printed_disagreement(run, run.kernels[0], run.elements()) is None


def test_a_run_too_small_for_its_printed_size_is_dropped_naming_csv(tmp_path):
    """BabelStream prints ``Array size`` with one decimal of MB (``src/main.cpp``), so a small
    ``--arraysize`` prints 0.0: that run is dropped with the fix, the file's other runs are kept."""
    head = "BabelStream\nVersion: 4.0\nImplementation: CUDA\nRunning kernels 100 times\n"
    table = "Function    MBytes/sec  Min (sec)   Max         Average\n"
    text = (
        f"{head}Precision: double\nArray size: 0.0 MB (=0.0 GB)\n{table}"
        "Copy        29295.461  0.00000     0.00001     0.00000\n"
        f"{head}Precision: double\nArray size: 268.4 MB (=0.3 GB)\n{table}"
        "Copy        541295.461  0.00099     0.00100     0.00100\n"
    )
    rep = read_babelstream(_write(tmp_path, "s.out", text), machine="x", device="gpu", workers=1)
    assert rep.rejected == [] and rep.frame.get_column("problem_size").to_list() == [2**25]
    (d,) = [d for d in rep.dropped if d.record == "line 1"]
    assert "--csv" in d.rule and d.value == "0.0 MB"
    # each run lists Copy only: the four kernels BabelStream prints after it are missing, by name
    missing = sorted(d.record for d in rep.dropped if "has no" in d.rule)
    assert missing == sorted(
        f"line {n} ({k})" for n in (1, 9) for k in ("Mul", "Add", "Triad", "Dot")
    )


def test_a_babelstream_or_table_file_is_hashed_once_and_its_row_holds_that_hash(
    tmp_path, monkeypatch
):
    """An archive ingest hashes each source once (where it is read, or before to skip what the
    table holds: the readers take that hash rather than hash the file again); the stored hash is
    ``hashlib``'s of the file's bytes. Each hash is logged to a file: the reads happen in the
    ingest's worker processes too."""
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_archive
    from xamm_ingest.pipeline import commit, stages
    from xamm_ingest.readers import base

    log = tmp_path / "reads.log"

    def logged(real):
        def read(p, *a, **kw):
            with open(log, "a") as f:
                f.write(f"{p}\n")
            return real(p, *a, **kw)

        return read

    monkeypatch.setattr(base, "file_sha256", logged(base.file_sha256))
    monkeypatch.setattr(commit, "hash_file", logged(commit.hash_file))
    monkeypatch.setattr(stages, "hash_file", logged(stages.hash_file))
    table = _write(tmp_path, "t.csv", "app,machine,runtime_s\nKripke,quartz,1.5\n")
    m = _write(
        tmp_path, "m.toml", '[columns]\napp = "app"\nmachine = "machine"\nruntime_s = "runtime_s"\n'
    )
    stream = _write(tmp_path, "stream.csv", CSV_V5.format(copy="1.36257e+06", mul="1.35912e+06"))
    store = Store(tmp_path / "s")
    ingest_archive("table", table, store=store, mapping=m, spec=None, workers=1)
    opts = {"machine": "h100-node", "device": "gpu", "implementation": "CUDA", "workers": 1}
    ingest_archive("babelstream", stream, store=store, **opts)
    for name, f in (("app_profiles", table), ("benchmark_runs", stream)):
        reads = log.read_text().splitlines()
        assert reads.count(str(f)) == 1, reads
        got = store.scan(name).select("source_sha256").collect().get_column("source_sha256")
        assert got.len() > 0 and set(got) == {hashlib.sha256(f.read_bytes()).hexdigest()}
