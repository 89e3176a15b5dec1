"""Caliper application profiles (``.cali`` or ``json-split`` JSON) into ``app_profiles`` rows.

The profile is read once, by the reader ``xamm predict`` uses
(:func:`~xamm_ingest.readers.caliper_regions.read_caliper_regions`), and stored as read
(:func:`~xamm_ingest.readers.profile_common.whole_program`): ``runtime_s`` is the sum of its
regions' exclusive times (the mean over ranks of the root's inclusive time), the regions are kept,
every numeric attribute's total over regions and ranks becomes a canonical counter
(``papi.PAPI_TOT_INS``, ``perf.instructions``, ...) or stays raw in ``extra_counters``, and the
globals (Adiak keys among them) fill the configuration columns through a
:class:`~xamm_ingest.metadata_map.MetadataMap`; the rest stays in ``extra_metadata``.
``launchdate`` becomes ``run_date``. A time attribute with no unit is refused unless
``--time-unit`` gives one.
"""

from __future__ import annotations

from xamm_data.tables.regions import RegionProfileError
from xamm_ingest.errors import IngestError
from xamm_ingest.metadata_map import MetadataMap
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.readers.caliper_regions import read_caliper_rows
from xamm_ingest.readers.profile_common import SampleSpec, whole_program

READER = "xamm_ingest.readers.caliper_profile"


def read_caliper_profile(
    src: Source, spec: SampleSpec, metadata_map: MetadataMap | None = None
) -> ReadResult:
    """Read one Caliper application profile into one ``app_profiles`` row.

    Args:
        src: the file.
        spec: what the user states of the run (wins over the profile's own metadata).
        metadata_map: which metadata keys fill which columns (default: :class:`MetadataMap`).

    Returns:
        The row, and a note for each metadata value a column could not take.
    """
    try:
        # the regions are checked with the rest of the batch (dispatch: _checked_profiles)
        profile = read_caliper_rows(
            src.path, time_unit=spec.time_unit, metadata_map=metadata_map, data=src.data
        )
    except RegionProfileError as e:
        raise IngestError(src.path, _without_path(str(e), src)) from None
    row = whole_program(profile, spec, src, READER)
    return ReadResult(rows=[row], notes=[f"{src.rel_path}: {n}" for n in profile.notes])


def _without_path(message: str, src: Source) -> str:
    """The reader's message without the leading ``<path>: `` the ingest error adds again."""
    head = f"{src.path}: "
    return message[len(head) :] if message.startswith(head) else message
