"""Without a network, or refused by the Hub: one line that says what failed and what to do; with
HF_HUB_OFFLINE=1 nothing reaches for the network (so nothing waits on retries); no warning printed
twice.

The commands run as subprocesses, as a user runs them: every line they print counts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from xamm_data.store.store import Store
from xamm_ingest import ingest_rajaperf

# nothing listens there: a machine without a network, as the client sees it
CLOSED = "http://127.0.0.1:9"
XAMM = [sys.executable, "-m", "xamm_data.cli.commands"]


def run(args: list[str], env: dict[str, str], timeout: int = 120) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("HF_HUB_OFFLINE")} | env
    return subprocess.run(args, capture_output=True, text=True, env=full, timeout=timeout)


@pytest.fixture
def home(tmp_path) -> Path:
    """An XAMM_HOME whose store holds example-node and whose registry holds one signature."""
    from xamm_models.machines.signatures import Signature, SignatureRegistry

    ingest_rajaperf(
        FIXTURES / "rajaperf_sample", store=Store(tmp_path / "home" / "store"), workers=1
    )
    SignatureRegistry(tmp_path / "home" / "signatures").add(
        Signature(
            machine="m",
            device="gpu",
            vector=[0.1, 1.0],
            aggregation="l2",
            normalise="divide",
            embedder_id="e",
            embedder_revision="r",
            data_sha256="c" * 64,
            kernels=["Basic_A"],
            coverage=0.5,
            n_samples=4,
            xamm_version="0",
        )
    )
    return tmp_path / "home"


def _env(home: Path, endpoint: str, **extra) -> dict[str, str]:
    return {
        "XAMM_HOME": str(home),
        "HF_HOME": str(home.parent / "hf"),
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": "hf_x",
        **extra,
    }


@pytest.mark.parametrize(
    "command",
    [
        ["datasets", "push", "example-node", "--repo", "org/data", "--license", "mit"],
        ["amm", "push", "--repo", "org/amms"],
    ],
)
def test_a_push_without_network_fails_in_one_line_saying_what_and_how(home, command):
    r = run([*XAMM, *command], _env(home, CLOSED))
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert f"could not reach the Hub at {CLOSED} to push" in lines[0] and "org/" in lines[0]
    assert (
        "retry" in lines[0]
        and "hf auth login" in lines[0]
        and "Traceback" not in r.stderr + r.stdout
    )


def test_a_push_the_hub_refuses_says_to_log_in(home, local_hub):
    local_hub.state.refuse_writes = True
    try:
        r = run(
            [*XAMM, "datasets", "push", "example-node", "--repo", "org/data", "--license", "mit"],
            _env(home, local_hub.endpoint),
        )
    finally:
        local_hub.state.refuse_writes = False
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert (
        "refused to push example-node to org/data (HTTP 401)" in r.stderr
        and "hf auth login" in r.stderr
    )


def test_offline_nothing_reaches_for_the_network(home, local_hub):
    """HF_HUB_OFFLINE=1 with a live Hub: a pull at a revision not cached fails at once in one line,
    a push says offline mode is on, and the server sees no request at all (so no retry can wait)."""
    before = len(local_hub.state.requests)
    env = _env(home, local_hub.endpoint, HF_HUB_OFFLINE="1")
    show = run([*XAMM, "datasets", "show", "quartz", "--revision", "0" * 40], env)
    push = run(
        [*XAMM, "datasets", "push", "example-node", "--repo", "org/data", "--license", "mit"], env
    )
    assert len(local_hub.state.requests) == before
    assert show.returncode == 1 and len(show.stderr.strip().splitlines()) == 1, show.stderr
    assert "HF_HUB_OFFLINE is set" in show.stderr and "Retrying" not in show.stderr
    assert push.returncode == 1 and len(push.stderr.strip().splitlines()) == 1, push.stderr
    assert "cannot push example-node to org/data: HF_HUB_OFFLINE is set" in push.stderr


def test_a_hub_warning_is_printed_once(tmp_path):
    code = (
        "import argparse, logging\n"
        "from xamm_data.cli.tools import configure_logging\n"
        "import huggingface_hub\n"
        "configure_logging(argparse.Namespace(quiet=False, verbose=0))\n"
        "logging.getLogger('huggingface_hub.utils._http').warning('Retrying "
        "in 1s [Retry 1/5].')\n"
    )
    r = run([sys.executable, "-c", code], {})
    assert r.stderr.count("Retrying in 1s") == 1, r.stderr
