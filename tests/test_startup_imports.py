"""Start-up at the cost of its work: ``xamm --help`` and every ``xamm COMMAND ... --help`` build
their parsers without polars, numpy, pydantic, the store, completion, the Hub client or torch;
what a command needs is loaded when it runs. Asserted on the modules imported (robust to a loaded
machine); ``benchmarks/bench_startup.py`` measures the times."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

#: what no parser may load (the store's location parsing, a few lines of ``os`` and ``urllib``,
#: is allowed: every ``--store`` option is read by it)
FORBIDDEN = (
    "polars",
    "numpy",
    "pydantic",
    "pyarrow",
    "deltalake",
    "huggingface_hub",
    "shtab",
    "torch",
    "xamm_data.store.store",
    "xamm_data.store.log",
    "xamm_data.tables",
    "xamm_data.hub",
    "xamm_ingest.pipeline",
    "xamm_ingest.formats",
    "xamm_models.predictors",
    "xamm_models.compare",
)

WALK = """
import argparse, contextlib, io, json, sys
FORBIDDEN = %r
from xamm_data.cli.commands import build_parser, main

def walk(p, path):
    yield path
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from walk(sub, path + [name])

parser, passthrough = build_parser()
paths = [p for p in walk(parser, []) if not (p[:1] and p[0] in passthrough)]
first = None
for path in paths:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main([*path, "--help"])
        except SystemExit:
            pass
    loaded = sorted(
        m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)
    )
    if loaded and first is None:
        first = {"command": " ".join(path), "loaded": loaded[:8]}
print(json.dumps({"commands": [" ".join(p) for p in paths], "first": first}))
"""


def test_every_xamm_help_builds_its_parser_without_the_heavy_libraries():
    out = subprocess.run(
        [sys.executable, "-c", WALK % (FORBIDDEN,)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"", "datasets list", "machines add", "predict", "compare", "amm diff"} <= set(
        got["commands"]
    ) and len(got["commands"]) >= 30
    assert got["first"] is None, got["first"]


def test_the_walk_would_see_a_heavy_import():
    code = WALK.replace(
        "from xamm_data.cli.commands import", "import polars\nfrom xamm_data.cli.commands import"
    )
    out = subprocess.run(
        [sys.executable, "-c", code % (FORBIDDEN,)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    first = json.loads(out.stdout.strip().splitlines()[-1])["first"]
    assert first["command"] == "" and "polars" in first["loaded"]


def test_completion_loads_shtab_only_when_asked_and_offers_its_shells():
    import shtab

    from xamm_data.cli.tools import SHELLS

    assert list(SHELLS) == list(shtab.SUPPORTED_SHELLS)
    out = subprocess.run(
        [sys.executable, "-m", "xamm_data.cli.commands", "--print-completion", "bash"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0 and "shtab" in out.stdout and "_shtab_xamm" in out.stdout
