"""``from_thicket``: a Thicket's RAJAPerf profiles into ``benchmark_runs`` rows (the way back is
:func:`xamm_data.thicket.to_thicket`).

Two kinds of Thicket come in:

* one :func:`~xamm_data.thicket.to_thicket` made (its metadata names the table): its rows come back
  exactly;
* one Thicket read from Caliper files (``Thicket.from_caliperreader``, or ``Thicket.from_json`` of
  its ``to_json()``): each profile is read by the RAJAPerf Caliper reader as its file would be
  (:mod:`~xamm_ingest.readers.thicket_profiles` undoes Hatchet's renames), then goes through the
  same record checks, merging and validation as ``xamm-ingest rajaperf``. A profile that cannot be
  read is rejected alone; the others are kept.
"""

from __future__ import annotations

from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_data.thicket import is_xamm_thicket, rows_of_thicket
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import machine_id
from xamm_ingest.pipeline import read_results, validate_by_source
from xamm_ingest.readers.rajaperf_caliper import read_caliper_profile
from xamm_ingest.readers.thicket_profiles import thicket_profiles
from xamm_ingest.records import Bounds
from xamm_ingest.report import IngestReport


def from_thicket(tk, *, machine: str | None = None, bounds: Bounds | None = None) -> IngestReport:
    """``benchmark_runs`` rows of a Thicket's profiles, as :func:`~xamm_ingest.read_rajaperf`
    gives for files.

    Example::

        tk = thicket.Thicket.from_caliperreader(["run/Base_Seq-default.cali", ...])
        rows = from_thicket(tk).frame

    Args:
        tk: a ``thicket.Thicket`` of RAJAPerf profiles.
        machine: the machine where the profiles' Adiak ``cluster`` is missing (it must agree where
            it is not).
        bounds: as for :func:`~xamm_ingest.read_rajaperf`.

    Returns:
        The report (``frame``, ``rejected``, ``dropped``).
    """
    if not all(hasattr(tk, a) for a in ("dataframe", "metadata", "graph", "profile")):
        raise TypeError(f"expected a thicket.Thicket, got {type(tk).__name__}")
    # rows xamm wrote; validated again, as a Thicket can be edited in between
    if is_xamm_thicket(tk):
        frame, bad = validate_by_source(rows_of_thicket(tk), BENCHMARK_RUNS)
        return IngestReport(
            frame=frame,
            table=BENCHMARK_RUNS.name,
            rejected=bad,
            sources_read=frame.get_column("source_path").n_unique(),
        )
    machine = machine_id(machine) if machine else None
    results = []
    for label, src, prof in thicket_profiles(tk):
        try:
            results.append((label, read_caliper_profile(prof, src, machine=machine, fmt="thicket")))
        except IngestError as e:
            results.append((label, e))
    return read_results("rajaperf", results, machine=machine, bounds=bounds or Bounds())
