"""Profiles read region by region (the contract of :mod:`xamm_data.tables.regions`), for
``xamm predict``: the format that recognises the path
(:func:`~xamm_ingest.format.guess_format`) reads it.

xamm's own profile formats:

* a **Caliper** profile (``.cali``, or JSON as ``cali-query`` writes it):
  :func:`~xamm_ingest.readers.caliper_regions.read_caliper_regions`;
* an **HPCToolkit** database directory (old ``experiment.xml`` or new ``meta.db``):
  :func:`~xamm_ingest.readers.hpctoolkit_regions.read_hpctoolkit_regions`;
* a **table** of regions (``.csv`` or ``.parquet`` with a ``region`` column):
  :func:`~xamm_ingest.readers.table_regions.read_table_regions`;

and any format another package registers with a ``read_regions``. ``xamm-ingest caliper|hpctoolkit``
stores exactly what these return (:func:`~xamm_ingest.readers.profile_common.whole_program`).
Every failure is a :class:`~xamm_data.tables.regions.RegionProfileError` naming the file and what
was expected.
"""

from __future__ import annotations

import os
from pathlib import Path

from xamm_data.tables.regions import LINE_BYTES, RegionProfile, RegionProfileError
from xamm_ingest.format import UnknownFormatError, guess_format
from xamm_ingest.metadata_map import MetadataMap
from xamm_ingest.readers.caliper_regions import read_caliper_regions
from xamm_ingest.readers.hpctoolkit_regions import read_hpctoolkit_regions
from xamm_ingest.readers.table_regions import read_table_regions


def guess_profile(path: str | Path) -> bool:
    """Whether an installed format reads ``path`` as an application profile (rather than a table
    of model features or a store).

    Args:
        path: a file or directory.

    Returns:
        True when a format's ``guess`` recognises it.
    """
    try:
        guess_format(path, regions=True)
    except UnknownFormatError:
        return False
    return True


def read_regions(
    path: str | Path,
    *,
    time_unit: str | None = None,
    line_bytes: int = LINE_BYTES,
    clock_ghz: float | None = None,
    metadata_map: MetadataMap | None = None,
) -> RegionProfile:
    """A profile read region by region by the format that recognises it.

    Args:
        path: a ``.cali``/``.json`` Caliper file, an HPCToolkit database directory, a
            ``.csv``/``.parquet`` region table, or another installed format's profile.
        time_unit: Caliper time attributes' unit where the file records none.
        line_bytes: bytes per last-level-cache miss, where memory traffic comes from counters.
        clock_ghz: clock rate turning an HPCToolkit database's ``cycles`` into time, where it
            measured no time.
        metadata_map: which metadata keys of a Caliper profile fill which fields (default:
            :class:`~xamm_ingest.metadata_map.MetadataMap`).

    Returns:
        The profile's metadata and its regions, checked
        (:func:`xamm_data.tables.regions.check_regions`).
    """
    if not os.fspath(path):  # Path("") is the current folder
        raise RegionProfileError("an empty path; expected a profile's file or database")
    path = Path(path)
    if not path.exists():
        raise RegionProfileError(f"{path}: no such file or directory")
    try:
        fmt = guess_format(path, regions=True)
    except UnknownFormatError as e:
        raise RegionProfileError(str(e)) from None
    opts = {
        "time_unit": time_unit,
        "line_bytes": line_bytes,
        "clock_ghz": clock_ghz,
        "metadata_map": metadata_map,
    }
    profile: RegionProfile = fmt.read_regions(path, opts)
    return profile


__all__ = [
    "guess_profile",
    "read_caliper_regions",
    "read_hpctoolkit_regions",
    "read_regions",
    "read_table_regions",
]
