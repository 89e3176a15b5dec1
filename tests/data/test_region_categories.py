"""Region categories from the names real profiles use: the parallel-sorting corpus's own words
(``comm``, ``comm_large``, ``mpi_gather``, ``MPI_*``), LULESH's (``CommSend``), and I/O
(xamm_data.tables.regions.region_category)."""

from __future__ import annotations

import re

import pytest

from xamm_data.tables.regions import region_category

SORT = "LLNL+thicket-tutorial/data/parallel-sorting"


@pytest.fixture(scope="module")
def corpus_names(shared_data) -> set[str]:
    """The region labels of every fifth file of the sorting corpus (2,113 of 10,563, every team),
    read by caliperreader."""
    import caliperreader

    names: set[str] = set()
    for f in sorted((shared_data / SORT).rglob("*.cali"))[::5]:  # every team, most names
        r = caliperreader.CaliperReader()
        try:
            r.read(str(f))
        except Exception:  # the corpus holds a few damaged files; the archive test names them
            continue
        for rec in r.records:
            p = rec.get("path")
            if p:
                names.add(p[-1] if isinstance(p, list) else p)
    return names


def test_every_communication_word_of_the_sorting_corpus_is_communication(corpus_names):
    comm = {n for n in corpus_names if re.search(r"comm|mpi|gather|scatter|barrier", n, re.I)}
    assert len(comm) >= 20 and {"comm", "comm_large", "comm_small", "MPI_Gather"} <= comm
    wrong = {n for n in comm if region_category(n) != "communication"}
    # 'comp' words hold no 'comm': a name with one of these words and something else would show
    assert wrong == set(), wrong
    compute = {"comp", "comp_large", "comp_small", "main", "data_init", "correctness_check",
               "whole_computation", "check_correctness"}  # fmt: skip
    assert compute <= corpus_names
    assert {region_category(n) for n in compute} == {"compute"}


def test_names_beyond_the_corpus():
    cases = {
        "CommSend": "communication", "CommSBN": "communication", "LagrangeNodal": "compute",
        "cudaMemcpy": "communication", "hipMemcpyAsync": "communication",
        "MPI_File_write_all": "io", "H5Dwrite": "io", "write_output": "io",
        "checkpoint": "io", "ncmpi_put_vara": "io", "CalcForceForNodes": "compute",
        "Comm_HALO_PACKING": "communication",
    }  # fmt: skip
    for name, want in cases.items():
        assert region_category(name) == want, name


def test_a_rajaperf_comm_kernel_with_declared_work_stays_compute(shared_data):
    """RAJAPerf's Comm group holds kernels (HALO_PACKING) whose work the code declares: they are
    compute, whatever their name or parent."""
    from xamm_ingest import read_regions

    f = sorted((shared_data / "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane").rglob(
        "*.cali"))[0]  # fmt: skip
    r = read_regions(f).regions
    comm = r.filter(r["name"].str.starts_with("Comm_"))
    assert comm.height >= 2 and set(comm["category"]) == {"compute"}
    assert comm["bytes"].is_not_null().all()
