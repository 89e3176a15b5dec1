"""Every command and Python snippet of README.md and docs/ runs as written.

Each page's code blocks run in order, in a sandbox of their own: a fresh ``$XAMM_HOME``, the
public runs laid out under the names the page gives them (:data:`PAGES`: ``./runs`` is the H100
node's runs where the page accepts a GPU node, quartz's Caliper files where it reads Caliper), the
local Hub server for pushes and pulls and the local S3 server for ``s3://`` stores. A bash line
runs as :mod:`as_written` runs it; a Python block runs as ``python -c``. What the page says beside
a command is held to:

* ``# needs ...``: a command that cannot run here (a Slurm cluster, a scheduler at a host) is not
  run, and the page says so beside it;
* ``# exits N``: the command's exit code is N (a refusal the page shows);
* ``<commit>``: the commit the page's last push printed.

Install blocks are checked against the README's set-up command (CI runs that on a clean machine).
A block that says it is abridged names the file that holds it whole, and every line of it is in
that file. The few commands that take minutes are listed in :data:`LONG` with the test that runs
their code at a reduced size; they are parsed here, not run. ``python
tests/test_docs_as_written.py`` writes ``docs/docs-tested.md``, the count per page; each page's
test checks that it ran what the count says.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import as_written
import pytest
from test_docs import check_install_block, is_install_block

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "docs-tested.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
NEEDS = re.compile(r"#.*\bneeds (an? |the )?\S")
EXITS = re.compile(r"#.*\bexits (\d)\b")
COMMIT = re.compile(r"at commit ([0-9a-f]{40})")
# pages generated from results: their blocks are the generators' own commands
GENERATED = {"docs/eval/results.md", "docs/vae-dnn/results.md"}

H100 = "llnl+RAJAPerf-Benchmark/2026-FCR/data/RPBenchmark_H100_tier1"
H100_2 = "llnl+RAJAPerf-Benchmark/2026-FCR/data/RPBenchmark_H100_tier2"
QUARTZ = "LLNL+thicket/thicket/tests/data/rajaperf/quartz"
THICKET = "LLNL+thicket/thicket/tests/data/rajaperf"
LULESH = "LLNL+thicket-tutorial/data/lulesh"
DANE = "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608/O3"
TUTORIAL_QUARTZ = "LLNL+thicket-tutorial/data/quartz"
UOB = "UoB-HPC+performance-portability/benchmarking"
V100 = f"{UOB}/2019/babelstream/v100-isambard"
HPCTOOLKIT = "LLNL+hatchet/hatchet/tests/data/hpctoolkit-cpi-database"
SORTING = "LLNL+thicket-tutorial/data/parallel-sorting"

#: commands that take long (the page says how long beside each): parsed, not run, and the test
#: that runs their code smaller
LONG = {
    "xamm eval --data-dir ../shared/data --out eval-out": "tests/models/benchmark/"
    "test_evaluation.py runs the harness with fewer entries",
    "xamm eval --data-dir ../shared/data --quick --out quick-out": "tests/models/benchmark/"
    "test_evaluation.py runs the harness small",
    "xamm zoo build --data-dir ../shared/data --out zoo-out --eval-results docs/eval/results.json "
    "--snapshot xamm_data/hub/snapshot": "tests/models/zoo/test_zoo.py builds the zoo with 3 "
    "epochs and checks the rebuilt snapshot byte for byte",
    "xamm run vae.yml": "tests/models/predictors/test_vae_dnn.py runs `xamm run` with a VAE-DNN "
    "config, then `xamm predict` with it",
}
#: what a page says beside a command that takes long
TAKES = re.compile(r"#\s*(minutes|about (a minute|\d+ s))\b")


@dataclass
class Page:
    """A page's sandbox: ``layout`` maps each name the page uses to what stands for it (a path in
    the public data, ``repo:PATH`` for a file of the checkout, or a callable making it)."""

    layout: dict = field(default_factory=dict)
    cwd_repo: bool = False  # commands about the checkout itself run in a copy of it


def _files(src: str, n: int | None = None, pattern: str = "*.cali", skip: int = 0):
    """A folder holding the files matching ``pattern`` under ``src`` from the ``skip``-th on,
    ``n`` of them (all by default), each in a folder named as its own."""

    def make(dst: Path, shared: Path) -> None:
        dst.mkdir(parents=True)
        found = sorted((shared / src).rglob(pattern))[skip:]
        for f in found[:n]:
            (dst / f.parent.name).mkdir(exist_ok=True)
            (dst / f.parent.name / f.name).symlink_to(f)

    return make


def _first(src: str):
    """The first ``.cali`` file under ``src``."""

    def make(dst: Path, shared: Path) -> None:
        dst.symlink_to(sorted((shared / src).glob("*.cali"))[0])

    return make


def _benchpark(dst: Path, shared: Path) -> None:
    from ramble_writer import write_workspace  # a Benchpark workspace around dane's runs

    write_workspace(dst, sorted((shared / DANE).glob("*/*.cali"))[:2])


def _samples(dst: Path, shared: Path) -> None:
    """A user's own flattened table, in the columns ``examples/table-mapping.toml`` maps (made
    up: it tests the table path, never a claim about a machine)."""
    dst.write_text(
        "application,system,time_ms,nthreads,size,notes,br\n"
        "Laghos,ruby,1520.5,36,16,first,1.2e9\nLaghos,ruby,2930.1,36,32,second,2.3e9\n"
    )


def _regions(dst: Path, shared: Path) -> None:
    """A table of regions (``region``, ``exclusive_s``) of the first LULESH profile."""
    from xamm_ingest import read_regions

    p = read_regions(sorted((shared / LULESH).glob("*.cali"))[0])
    p.regions.select("region", "exclusive_s").write_csv(dst)


def _config(dst: Path, shared: Path) -> None:
    """A run configuration (the paper's Listing 1) training on ``./store`` into ``./model``."""
    dst.write_text("func: train\nmachine_data_path: store\napp_train_data_path: store\n"
                   "output: model\nregressor: catboost\nepochs: 5\nseed: 0\n")  # fmt: skip


def _profiles(dst: Path, shared: Path) -> None:
    """Five of quartz's kernels as profiles (the samples ``xplat`` builds), from its public runs."""
    import polars as pl

    from xamm_data import load_dataset
    from xamm_models.benchmark.dataset import samples_from_runs

    s = samples_from_runs(load_dataset("quartz"))
    s.filter(pl.col("target") == "quartz:cpu").head(5).write_parquet(dst)


def _guide_criteria(dst: Path, shared: Path) -> None:
    """The acceptance guide's criteria (dane's runs are matched to quartz's within 16x)."""
    page = (REPO / "docs" / "guide" / "acceptance.md").read_text()
    dst.write_text(next(code for lang, code in BLOCK.findall(page) if lang == "toml"))


PAGES: dict[str, Page] = {
    "README.md": Page({"runs": H100, "stream": V100, "benchpark-root": _benchpark,
                       "criteria.toml": "repo:examples/criteria.toml"}),
    "docs/compare.md": Page({"runs": H100}),
    "docs/development.md": Page(),
    "docs/evaluation.md": Page(),
    "docs/extending.md": Page(),
    "docs/guide/acceptance.md": Page({
        "dane-accepted": _files(DANE, 2), "dane-routine": _files(DANE, None),
        "quartz-O3": _files(f"{TUTORIAL_QUARTZ}/GCC_831_BaseSeq_O3_08388608"),
        "quartz-O0": _files(f"{TUTORIAL_QUARTZ}/GCC_831_BaseSeq_O0_08388608"),
        "criteria.toml": "toml:0", "lulesh.cali": _first(LULESH)}),
    "docs/guide/application.md": Page({"lulesh": LULESH}, cwd_repo=True),
    "docs/guide/centre.md": Page({"h100-runs": H100, "thicket-runs": THICKET}),
    "docs/guide/install.md": Page(),
    "docs/guide/research.md": Page(),
    "docs/history.md": Page({"runs": _files(DANE, 2), "runs-after-update": _files(DANE, None),
                             "criteria.toml": _guide_criteria}),
    "docs/ingest-archive.md": Page({"parallel-sorting": _files(SORTING, 300)}),
    "docs/ingest-babelstream.md": Page({"performance-portability": UOB.rsplit("/", 1)[0]}),
    "docs/ingest-benchpark.md": Page({"benchpark-root": _benchpark}),
    "docs/layout.md": Page(cwd_repo=True),
    "docs/machines.md": Page(),
    "docs/models.md": Page({"store": "xplat-store", "config.yml": _config,
                            "profiles.parquet": _profiles}),
    "docs/predict-profile.md": Page({"lulesh.cali": _first(LULESH), "regions.csv": _regions}),
    "docs/reproductions/adaptation.md": Page(),
    "docs/reproductions/vae-dnn.md": Page(),
    "docs/thicket.md": Page({"runs": QUARTZ}),
    "docs/usage.md": Page({"runs": QUARTZ, "h100-runs": H100, "db": HPCTOOLKIT, "lulesh": LULESH,
                           "samples.csv": _samples,
                           "mapping.toml": "repo:examples/table-mapping.toml",
                           "benchpark-root": _benchpark, "dane-update": _files(DANE, skip=2),
                           "criteria.toml": _guide_criteria, "schemas": "repo:schemas"}),
    "docs/zoo.md": Page(),
}  # fmt: skip


#: what a page about the checkout itself runs in: a copy of it
CHECKOUT = ("docs", "examples", "schemas", "xamm_data", "xamm_models", "ingest", "README.md",
            "pyproject.toml", "mkdocs.yml")  # fmt: skip


def _sandbox(page: str, root: Path, shared: Path, extra: dict) -> Path:
    """The page's folder with everything its layout names (``extra``: what fixtures made, by
    name)."""
    work = root / "work"
    work.mkdir(parents=True)
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared)  # ../shared/data, as the pages write it
    if PAGES[page].cwd_repo:
        ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
        for name in CHECKOUT:
            src = REPO / name
            (shutil.copytree(src, work / name, ignore=ignore) if src.is_dir()
             else shutil.copy(src, work / name))  # fmt: skip
    tomls = [code for lang, code in BLOCK.findall((REPO / page).read_text()) if lang == "toml"]
    for name, src in PAGES[page].layout.items():
        dst = work / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if callable(src):
            src(dst, shared)
        elif src.startswith("repo:"):
            what = REPO / src.removeprefix("repo:")
            (shutil.copytree if what.is_dir() else shutil.copy)(what, dst)
        elif src.startswith("toml:"):  # the page's own file, as it shows it
            dst.write_text(tomls[int(src.removeprefix("toml:"))])
        elif src in extra:
            dst.symlink_to(extra[src])
        else:
            dst.symlink_to(shared / src)
    return work


def blocks(page: str) -> list[tuple[str, str]]:
    """The page's code blocks that hold commands or Python: (language, code)."""
    out = []
    for lang, code in BLOCK.findall((REPO / page).read_text()):
        first = code.split(maxsplit=1)[0] if code.split() else ""
        if lang in ("bash", "python") or (not lang and first in ("xamm", "xamm-ingest")):
            out.append((lang or "bash", code))
    return out


def commands(code: str) -> list[str]:
    """A bash block's command lines, continuation lines joined, comment-only lines dropped."""
    joined = re.sub(r"\\\n\s*", "", code)
    return [
        ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]


def _comment(cmd: str) -> str:
    """The comment at the end of a command line, from its ``#`` outside quotes ("" when none)."""
    quote = None
    for i, ch in enumerate(cmd):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or cmd[i - 1].isspace()):
            return cmd[i:]
    return ""


@dataclass
class Tally:
    """What a page's test did: commands run, refusals expected, not run and why, blocks checked."""

    run: int = 0
    python: int = 0
    checked: int = 0
    abridged: int = 0
    refusals: int = 0
    needs: list[str] = field(default_factory=list)
    long: list[str] = field(default_factory=list)


def plan(page: str) -> Tally:
    """What the page's test runs, read from the page alone (what ``docs/docs-tested.md``
    counts)."""
    t = Tally()
    for lang, code in blocks(page):
        first = code.splitlines()[0]
        if is_install_block(lang, code) or code.startswith("python3 -m venv .venv && "):
            t.checked += 1
        elif lang == "python" and NEEDS.search(first):
            t.needs.append(first.lstrip("# "))
        elif lang == "python":
            t.abridged += "abridged" in first
            t.python += "abridged" not in first
        elif re.search(r"^\w+=", code, re.M):
            t.run += len(commands(code))
        else:
            for cmd in commands(code):
                said = _comment(cmd)
                bare = cmd[: len(cmd) - len(said)].strip() if said else cmd
                if NEEDS.search(said):
                    t.needs.append(f"{bare}\t{said.lstrip('# ')}")
                elif bare in LONG:
                    t.long.append(bare)
                else:
                    t.run += 1
                    t.refusals += bool(EXITS.search(said))
    return t


def _env(root: Path, hub, s3) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_HUB_OFFLINE", "AWS_"))}
    env.update(
        XAMM_HOME=str(root / "home"),
        HF_ENDPOINT=hub.endpoint,
        HF_TOKEN="hf_xamm_test_token",
        HF_HUB_DISABLE_XET="1",
        HF_HOME=str(root / "hf"),
        MPLBACKEND="Agg",
        PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        **s3,
    )
    return env


def run_page(page: str, root: Path, shared: Path, hub, s3: dict, extra: dict) -> Tally:
    """Every block of ``page`` in order in its sandbox; a failure names the page, the command and
    what it printed."""
    work = _sandbox(page, root, shared, extra)
    env, tally, commit = _env(root, hub, s3), Tally(), "main"
    for i, (lang, code) in enumerate(blocks(page), 1):
        where = f"{page} block {i}"
        if is_install_block(lang, code) or code.startswith("python3 -m venv .venv && "):
            missing = check_install_block(code) if is_install_block(lang, code) else []
            assert not missing, f"{where}: not in the README's set-up: {missing}"
            tally.checked += 1
            continue
        if lang == "python" and NEEDS.search(code.splitlines()[0]):
            tally.needs.append(code.splitlines()[0].lstrip("# "))
            continue
        if lang == "python":
            ran = _python(code, where, work, env)
            tally.python += ran
            tally.abridged += 1 - ran
            continue
        if re.search(r"^\w+=", code, re.M):  # shell variables: the block is one script
            r = as_written.run(code, work, env)
            assert r.returncode == 0, f"{where}:\n{code}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
            tally.run += len(commands(code))
            continue
        for cmd in commands(code):
            said = _comment(cmd)
            bare = cmd[: len(cmd) - len(said)].strip() if said else cmd
            if NEEDS.search(said):
                tally.needs.append(f"{bare}\t{said.lstrip('# ')}")
                continue
            if bare in LONG:
                assert TAKES.match(said), f"{where}: {bare}: the page does not say it takes long"
                _parses(bare)
                tally.long.append(bare)
                continue
            want = int(m.group(1)) if (m := EXITS.search(said)) else 0
            r = as_written.run(bare.replace("<commit>", commit), work, env)
            assert r.returncode == want, (
                f"{where}: {cmd}\nexit {r.returncode} ({r.where}), the page says {want}\n"
                f"{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
            )
            commit = m.group(1) if (m := COMMIT.search(r.stdout)) else commit
            env["_COMMIT"] = commit
            tally.run += 1
            tally.refusals += want != 0
    return tally


def _python(code: str, where: str, work: Path, env: dict) -> int:
    """Run a Python block (1), or check an abridged one against the file it names (0)."""
    first = code.splitlines()[0]
    if "abridged" in first:
        whole = REPO / re.search(r"in (\S+\.py)", first).group(1)
        text = whole.read_text()
        absent = [ln for ln in code.splitlines()[1:] if ln.strip() and not ln.startswith("#")
                  and not _in(ln.split("  #")[0], text)]  # fmt: skip
        assert not absent, f"{where}: abridged from {whole.name}, which lacks {absent}"
        return 0
    code = code.replace("<commit>", env.get("_COMMIT", "main"))
    r = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True,
                       text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, f"{where}:\n{code}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return 1


def _in(line: str, text: str) -> bool:
    """Whether a line of an abridged block is in the whole file: an import of some of the names
    the file imports from that module, or the line itself."""
    if m := re.match(r"from (\S+) import (.+)", line.strip()):
        found = re.findall(rf"from {re.escape(m.group(1))} import (\([^)]*\)|[^\n]+)", text)
        names = {n.strip(" ()\n") for part in found for n in part.split(",")}
        return set(map(str.strip, m.group(2).split(","))) <= names
    return " ".join(line.split()) in " ".join(text.split())


def _parses(cmd: str) -> None:
    from xamm_data.cli.commands import build_parser

    build_parser()[0].parse_args(shlex.split(cmd)[1:])  # SystemExit(2) on a usage error


def pages_with_code() -> list[str]:
    """README.md and every page under docs/ with a code block of commands or Python."""
    found = ["README.md"] + sorted(
        p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md")
    )
    return [p for p in found if p not in GENERATED and blocks(p)]


def test_every_page_with_code_has_a_sandbox():
    assert sorted(pages_with_code()) == sorted(PAGES)


def _s3(request) -> dict:
    """The local S3-compatible server's AWS_* variables, with a bucket ``bucket`` (the pages'
    ``s3://bucket/...``); started only for a page that names one."""
    env, client = request.getfixturevalue("s3")
    if "bucket" not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket="bucket")
    return env


@pytest.mark.data
@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_runs_as_written(page, shared_data, tmp_path, request):
    s3 = _s3(request) if "s3://" in (REPO / page).read_text() else {}
    extra = {}
    if "xplat-store" in PAGES[page].layout.values():  # the benchmark's store, built once
        extra["xplat-store"] = request.getfixturevalue("xplat_store").root
    from hub_server import LocalHub

    with LocalHub() as hub:  # a Hub of the page's own: pages push the same repo names as --help
        tally = run_page(page, tmp_path, shared_data, hub, s3, extra)
    assert tally == plan(page)  # everything the count says ran, ran


def test_the_count_page_is_what_the_pages_hold():
    assert REPORT.read_text() == render(), "run python tests/test_docs_as_written.py"


def render() -> str:
    """``docs/docs-tested.md``: per page, what its test runs and what it does not, and why."""
    rows, notes = [], []
    for page in sorted(PAGES):
        t = plan(page)
        rows.append(f"| {page} | {t.run} | {t.refusals} | {t.python} | {t.checked} | "
                    f"{t.abridged} | {len(t.needs)} | {len(t.long)} |")  # fmt: skip
        for n in t.needs:
            cmd, _, why = n.partition("\t")
            notes.append(f"* {page}: `{cmd}`: {why.split(':')[0]}" if why else f"* {page}: {n}")
        notes += [f"* {page}: `{c}`: {LONG[c]}" for c in t.long]
    total = [sum(plan(p).run for p in PAGES), sum(plan(p).python for p in PAGES)]
    head = (
        "# The docs are tests\n\n<!-- generated by python tests/test_docs_as_written.py; do not "
        "edit -->\n\nEvery command and Python snippet of README.md and docs/ runs as written in "
        "`tests/test_docs_as_written.py`, page by page, on the public runs laid out under the "
        "names the page gives them (pushes against a local Hub server, `s3://` against a local "
        f"S3 server): {total[0]} commands and {total[1]} Python snippets. A command the page shows "
        "refused (`# exits N`) must exit N. Install blocks are checked against the README's "
        "set-up command, which CI runs; an abridged block is checked line by line against the "
        "file it names.\n\n"
        "| page | commands run | of them refusals | Python run | install checked | abridged | "
        "not run: needs | not run: long |\n|---|---|---|---|---|---|---|---|\n"
    )
    return (
        head + "\n".join(rows) + "\n\nNot run, as each page says beside it, or because it "
        "takes long (the test that runs its code smaller):\n\n" + "\n".join(notes) + "\n"
    )


if __name__ == "__main__":
    REPORT.write_text(render())
    print(REPORT.read_text())


def test_a_page_is_read_as_bash_reads_it():
    """A comment starts at a ``#`` outside quotes; continuation lines are one command; a
    comment-only line, indented or not, is no command; what a comment says is held to."""
    assert _comment("xamm a '# not' b  # needs x") == "# needs x"
    assert _comment('echo "#x" a#b') == ""
    assert commands("a \\\n  b\n# c\n   # d\ne # f\n") == ["a b", "e # f"]
    assert NEEDS.search("# needs a Slurm cluster") and not NEEDS.search("# what it needs")
    assert EXITS.search("# exits 1: refused").group(1) == "1"
    assert TAKES.match("# minutes: all") and not TAKES.match("# all, in minutes")
