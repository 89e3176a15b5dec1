"""The runner of documented command lines (``tests/fixtures/as_written.py``) ends a command as its
process would: the exit code, what it printed, the environment and directory it was given."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import as_written
import pytest


@pytest.mark.parametrize(
    "cmd,here",
    [
        ("xamm machines list", True),
        ("xamm-ingest rajaperf ./runs --path-pattern 'a-(?P<machine>[a-z]+)_'", True),
        ("xamm amm show h100-node:gpu@1 | head", False),
        ("xamm store optimize; xamm store vacuum", False),
        ("xamm datasets push quartz --repo org/x", False),
        ("xamm amm pull --repo org/x --revision abc", False),
        ("python -c pass", False),
    ],
)
def test_one_xamm_command_without_shell_or_hub_runs_here(cmd, here):
    assert as_written.in_process(cmd) is here


def test_a_usage_error_exits_2_with_its_message_and_the_environment_is_restored(tmp_path):
    before = dict(os.environ)
    cwd = os.getcwd()
    r = as_written.run("xamm --nosuchflag", tmp_path, {"XAMM_HOME": str(tmp_path / "h")})
    assert (r.returncode, r.where) == (2, "in-process") and r.stderr.startswith("usage: xamm")
    assert dict(os.environ) == before and os.getcwd() == cwd


def test_a_command_sees_the_given_directory_and_home(tmp_path):
    home = tmp_path / "home"
    r = as_written.run(
        "xamm machines add newbox --cpu 'AMD EPYC 9654' --sockets 2 "
        "--cores-per-node 192 --memory-bandwidth-gbs 921.6 --source spec",
        tmp_path,
        {"XAMM_HOME": str(home)},
    )
    assert r.returncode == 0, r.stderr
    assert any(home.rglob("*")) and not (tmp_path / "newbox").exists()


def test_a_list_in_bash_stops_at_its_first_failure_with_its_exit_code(tmp_path):
    bin_ = str(Path(sys.executable).parent)  # the console scripts
    env = {**os.environ, "XAMM_HOME": str(tmp_path / "h"), "PATH": bin_ + os.pathsep + os.defpath}
    r = as_written.run("xamm --nosuchflag; echo after", tmp_path, env)
    assert (r.returncode, r.where) == (2, "bash") and "after" not in r.stdout
