"""The language-neutral schema files in ``schemas/``, generated from :mod:`xamm_data.tables.schema`.

``schemas/<table>.schema.json`` is the JSON Schema of one row of each table;
``schemas/counters.json`` is the canonical counter table itself (rows of the ``counters`` table).
Packages add theirs through the ``xamm.schemas`` entry-point group (a function returning file name
-> text): the models layer's acceptance criteria and certificates.
"""

from __future__ import annotations

import json
from pathlib import Path

from xamm_data.atomic import write_text_atomic
from xamm_data.plugins import plugins
from xamm_data.tables.counters import COUNTERS
from xamm_data.tables.schema import TABLES


def counters_json_text() -> str:
    rows = [c.as_record() for c in COUNTERS]
    doc = {"table": "counters", "schema_version": TABLES["counters"].version, "counters": rows}
    return json.dumps(doc, indent=2) + "\n"


def expected_files() -> dict[str, str]:
    """File name -> exact expected content."""
    files = {f"{name}.schema.json": t.json_schema_text() for name, t in TABLES.items()}
    files["counters.json"] = counters_json_text()
    for ep in plugins("xamm.schemas").values():
        files.update(ep.load()())
    return files


def write_schema_files(directory: str | Path) -> list[Path]:
    """Write every schema file into ``directory``; return the paths. A ``directory`` that is there
    and no folder is a ``NotADirectoryError`` naming it (``mkdir`` would say "File exists")."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"{directory} is a file, not a folder for the schema files")
    out = []
    for name, text in expected_files().items():
        write_text_atomic(directory / name, text)
        out.append(directory / name)
    return out


def check_schema_files(directory: str | Path) -> list[str]:
    """Differences between ``directory`` and the code's schemas, one line each (empty when in
    sync)."""
    directory = Path(directory)
    problems = []
    for name, text in expected_files().items():
        p = directory / name
        if not p.is_file():
            problems.append(f"{p}: missing")
        elif p.read_text(encoding="utf-8") != text:
            problems.append(f"{p}: differs from the code's definition")
    known = set(expected_files())
    for p in sorted(directory.glob("*.json")):
        if p.name not in known:
            problems.append(f"{p}: not produced by the code (stale?)")
    return problems
