"""``xamm-ingest caliper``: Caliper application profiles, one ``app_profiles`` row each; and the
Caliper profile ``xamm predict`` reads region by region.

A profile is read once, by :func:`~xamm_ingest.readers.caliper_regions.read_caliper_regions`, and
stored as read (:func:`~xamm_ingest.readers.profile_common.whole_program`): the same regions and the
same time rule for the store and for prediction. A corpus is walked lazily and committed in
batches (resumable): see :mod:`xamm_ingest.pipeline`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xamm_data.tables.regions import LINE_BYTES, RegionProfile
from xamm_ingest import profiles
from xamm_ingest.readers import caliper_profile
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.readers.caliper_regions import read_caliper_regions
from xamm_ingest.sniff import CALIPER_SUFFIXES
from xamm_ingest.sources import Task

plan = profiles.plan_files("caliper", CALIPER_SUFFIXES)
walk = profiles.walk_file_tasks("caliper", CALIPER_SUFFIXES)
prepare = profiles.require_spec("caliper")


def read(task: Task, opts: dict) -> ReadResult:
    """One Caliper profile into one ``app_profiles`` row."""
    return caliper_profile.read_caliper_profile(
        profiles.task_source(task),
        profiles.need_spec(opts, "caliper"),
        profiles.metadata_map_of(task, opts),
    )


def read_regions(path: Path, opts: dict) -> RegionProfile:
    """The profile region by region (options ``time_unit``, ``line_bytes``, ``metadata_map``)."""
    return read_caliper_regions(
        Path(path),
        time_unit=opts.get("time_unit"),
        line_bytes=opts.get("line_bytes") or LINE_BYTES,
        metadata_map=opts.get("metadata_map"),
    )


def options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The sample spec and the metadata map."""
    return {**profiles.sample_options(args, parser), **profiles.map_options(args, parser)}
