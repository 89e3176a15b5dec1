"""The release check, run by ``.ci/release-check`` inside a clean virtual environment that holds
only the built wheel and its core dependencies (no extras), away from the checkout.

It asserts what a user of ``pip install xamm`` meets:

1. every package of the distribution (read from the wheel's own RECORD) imports; every module
   imports, or stops at a ``ModuleNotFoundError`` for a dependency of one of the wheel's extras
   (never a core dependency, never a module of xamm itself);
2. the core commands work or end with exit code 1 and one line on stderr that names the extra to
   install: ``xamm --help``, ``xamm-ingest rajaperf`` on a shared run, ``load_dataset``,
   ``xamm predict`` on a profile, ``xamm compare``, ``xamm amm build --kind physics``; none
   prints a traceback; ``xamm compare --thicket`` ends with the thicket extra's one line;
3. a centre's acceptance path (ingest, physics signatures, accept, update, history, diff, drift,
   verify, report) runs on the core install.

Usage: ``python check_installed.py DATA_DIR`` (``../shared/data``). Exit code 0 when every check
holds; 1 with the failed checks listed.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DIST = "xamm"
EXTRA_HINT = re.compile(r"pip install .*'xamm\[(\w+)\]'")


def wheel_modules() -> tuple[list[str], list[str]]:
    """(packages, modules) of the installed distribution, from its RECORD."""
    pkgs, mods = [], []
    for f in md.files(DIST) or []:
        p = str(f)
        if not p.endswith(".py") or ".dist-info" in p:
            continue
        name = p[:-3].replace("/", ".")
        if name.endswith(".__init__"):
            pkgs.append(name[: -len(".__init__")])
        else:
            mods.append(name)
    return sorted(pkgs), sorted(mods)


def check_imports(problems: list[str]) -> int:
    """Import every package and module; record what fails for a reason other than an extra."""
    from xamm_data.extras import extra_for  # the installed wheel's own mapping

    pkgs, mods = wheel_modules()
    if not {"xamm_data", "xamm_models", "xamm_ingest", "xamm_models.compare"} <= set(pkgs):
        problems.append(f"the wheel lacks packages: it holds {pkgs}")
    for name in pkgs + mods:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if name in pkgs or extra_for(e.name) is None:
                problems.append(f"import {name}: {e!r}")
        except Exception as e:  # noqa: BLE001 - every other failure is a finding
            problems.append(f"import {name}: {e!r}")
    return len(pkgs) + len(mods)


def run(cmd: list[str], problems: list[str], env: dict[str, str], needs: str = "") -> str:
    """Run a command; it must succeed, or fail with exit 1 and one stderr line naming an extra.
    With ``needs``: what it printed on stdout, or the extra its one stderr line named."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    err = p.stderr.strip()
    if needs:
        m = EXTRA_HINT.search(err) if p.returncode == 1 and len(err.splitlines()) == 1 else None
        if m is None or "Traceback" in p.stderr:
            problems.append(f"{cmd[1:4]}: expected exit 1 and the {needs} extra's one line, got "
                            f"exit {p.returncode}\n{err[-2000:]}")  # fmt: skip
            return ""
        print(f"  {' '.join(cmd[1:4])} --{needs}: needs an extra ({err})")
        return m.group(1)
    shown = " ".join(Path(c).name if os.sep in c else c for c in cmd)
    if "Traceback" in p.stderr or "Traceback" in p.stdout:
        problems.append(f"{shown}: a traceback\n{err[-2000:]}")
    elif p.returncode == 1 and len(err.splitlines()) == 1 and EXTRA_HINT.search(err):
        print(f"  {shown}: needs an extra ({err})")
    elif p.returncode != 0:
        problems.append(f"{shown}: exit {p.returncode}\n{err[-2000:]}")
    else:
        print(f"  {shown}: ok")
    return p.stdout


CRITERIA = """schema_version = 1
name = "dane against quartz"
size_ratio = 16

[[criterion]]
id = "no-slow-group"
kind = "slowdown"
groups = ["*"]
at_most = 0.10
"""


def acceptance_path(runs: Path, work: Path, problems: list[str], env: dict[str, str]) -> None:
    """A centre's acceptance path on the core install (docs/guide/acceptance.md): dane accepted
    against quartz on two runs, updated with three, its history, diff, drift and report."""
    bindir = Path(sys.executable).parent
    xamm, ingest = str(bindir / "xamm"), str(bindir / "xamm-ingest")
    crit = work / "criteria.toml"
    crit.write_text(CRITERIA)
    o3 = sorted(p for p in runs.glob("*/O3/*") if p.is_dir())
    for batch in (o3[:2], o3[2:]):
        run([ingest, "rajaperf", *map(str, batch), "--no-progress", "-q"], problems, env)
        run([xamm, "amm", "build", "dane", "--kind", "physics"], problems, env)
        run([xamm, "accept", "dane", "--against", "quartz", "--criteria", str(crit)], problems,
            env)  # fmt: skip
    run([xamm, "amm", "history", "dane"], problems, env)
    run([xamm, "amm", "diff", "dane:cpu@1", "dane:cpu@2"], problems, env)
    run([xamm, "compare", "dane@now", "dane@1"], problems, env)
    run([xamm, "accept", "verify", "dane"], problems, env)
    run([xamm, "report", "--out", str(work / "site"), "--no-progress"], problems, env)
    page = (work / "site" / "machines" / "dane.html").read_text(errors="replace")
    if "matplotlib is not installed" not in page or "certificate-2.html" not in page:
        problems.append("report: expected dane's page with both certificates, its figures "
                        "said not drawn (no matplotlib on the core install)")  # fmt: skip


def check_commands(data: Path, work: Path, problems: list[str]) -> None:
    """The README's core commands, in a fresh XAMM_HOME."""
    env = {**os.environ, "XAMM_HOME": str(work / "home"), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}
    bindir = Path(sys.executable).parent
    xamm, ingest = str(bindir / "xamm"), str(bindir / "xamm-ingest")
    runs = data / "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane"
    profile = data / "LLNL+thicket-tutorial/data/lulesh/230906-105532_880456_M8YbWSOYgGWa.cali"
    store = str(work / "store")
    run([xamm, "--help"], problems, env)
    acceptance_path(runs, work, problems, env)
    run([ingest, "rajaperf", str(runs), "--store", store, "--no-progress"], problems, env)
    code = (
        "from xamm_data.hub.datasets import load_dataset; import sys;"
        f"df = load_dataset('dane', store={store!r}); assert df.height > 0, 'no rows';"
        "x = load_dataset('xplat-rajaperf'); assert x.height > 0, 'no pairs'; print(x.height)"
    )
    run([sys.executable, "-c", code], problems, env)
    run(
        [
            xamm,
            "predict",
            str(profile),
        ],
        problems,
        env,
    )
    run([xamm, "compare", "quartz", "lassen"], problems, env)
    # an optional extra's absence is one line: the core install has no Thicket
    thicket = [xamm, "compare", "quartz", "lassen", "--thicket", str(work / "c.json")]
    if "thicket" not in run(thicket, problems, env, needs="thicket"):
        problems.append("compare --thicket: expected the thicket extra's one line on stderr")
    # the machine just ingested measured on the core install (numpy and polars only)
    run([xamm, "amm", "build", "dane", "--kind", "physics", "--store", store], problems, env)


def main(argv: list[str]) -> int:
    data = Path(argv[1]).resolve()
    problems: list[str] = []
    n = check_imports(problems)
    print(f"imported {n} packages and modules of the installed wheel")
    with tempfile.TemporaryDirectory() as tmp:
        check_commands(data, Path(tmp), problems)
    for p in problems:
        print(f"FAILED {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
