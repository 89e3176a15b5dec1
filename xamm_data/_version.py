"""The version of xamm: one source, ``xamm_data/VERSION`` (read by packaging and here)."""

from pathlib import Path

__version__ = (Path(__file__).with_name("VERSION")).read_text().strip()
