"""Profiles read region by region (:mod:`xamm_data.regions`' contract), for ``xamm predict`` and
for the store: one reader per file format.

:func:`read_regions` takes what an application team has and hands it to that format's reader:

* a **Caliper** profile (``.cali``, or JSON as ``cali-query`` writes it):
  :func:`~xamm_ingest.readers.caliper_regions.read_caliper_regions`;
* an **HPCToolkit** database directory (old ``experiment.xml`` or new ``meta.db``):
  :func:`~xamm_ingest.readers.hpctoolkit_regions.read_hpctoolkit_regions`;
* a **table** of regions (``.csv`` or ``.parquet``):
  :func:`~xamm_ingest.readers.table_regions.read_table_regions`.

``xamm-ingest caliper|hpctoolkit`` stores exactly what these return
(:func:`~xamm_ingest.readers.profile_common.whole_program`). Every failure is a
:class:`~xamm_data.regions.RegionProfileError` naming the file and what was expected.
"""

from __future__ import annotations

from pathlib import Path

from xamm_data.regions import LINE_BYTES, RegionProfile, RegionProfileError
from xamm_ingest.metadata_map import MetadataMap
from xamm_ingest.readers.caliper_regions import read_caliper_regions
from xamm_ingest.readers.hpctoolkit_regions import read_hpctoolkit_regions
from xamm_ingest.readers.table_regions import read_table_regions

CALIPER_SUFFIXES = (".cali", ".json")
TABLE_SUFFIXES = (".csv", ".parquet")


def read_regions(
    path: str | Path,
    *,
    time_unit: str | None = None,
    line_bytes: int = LINE_BYTES,
    clock_ghz: float | None = None,
    metadata_map: MetadataMap | None = None,
) -> RegionProfile:
    """A profile read region by region: Caliper, HPCToolkit or a region table, told apart by what
    the path is.

    Args:
        path: a ``.cali``/``.json`` Caliper file, an HPCToolkit database directory, or a
            ``.csv``/``.parquet`` region table.
        time_unit: Caliper time attributes' unit where the file records none.
        line_bytes: bytes per last-level-cache miss, where memory traffic comes from counters.
        clock_ghz: clock rate turning an HPCToolkit database's ``cycles`` into time, where it
            measured no time.
        metadata_map: which metadata keys of a Caliper profile fill which fields (default:
            :class:`~xamm_ingest.metadata_map.MetadataMap`).

    Returns:
        The profile's metadata and its regions, checked
        (:func:`xamm_data.regions.check_regions`).
    """
    path = Path(path)
    if path.is_dir():
        return read_hpctoolkit_regions(path, line_bytes=line_bytes, clock_ghz=clock_ghz)
    if not path.is_file():
        raise RegionProfileError(f"{path}: no such file or directory")
    suffix = path.suffix.lower()
    if suffix in CALIPER_SUFFIXES:
        return read_caliper_regions(
            path, time_unit=time_unit, line_bytes=line_bytes, metadata_map=metadata_map
        )
    if suffix in TABLE_SUFFIXES:
        return read_table_regions(path)
    raise RegionProfileError(
        f"{path}: not a profile xamm reads (suffix {suffix or 'none'}); expected a Caliper "
        ".cali or .json file, an HPCToolkit database directory, or a .csv/.parquet table of "
        "regions"
    )


__all__ = [
    "read_caliper_regions",
    "read_hpctoolkit_regions",
    "read_regions",
    "read_table_regions",
]
