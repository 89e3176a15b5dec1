"""``xamm-ingest babelstream``: BabelStream outputs into ``benchmark_runs`` as ``Stream_*`` rows.

Every file under the paths is read as text (:mod:`~xamm_ingest.readers.babelstream`); a file with
no BabelStream run in it (a job's other output) is ignored, a run that cannot be read rejects its
file naming the line. Each kernel line becomes one row: ``Stream_COPY``, ``_MUL``, ``_ADD``,
``_TRIAD``, ``_DOT`` (or ``_NSTREAM``) with bytes and flops per repetition from the array length and
precision, variant ``BabelStream_<implementation>``, tuning ``double`` or ``float``.

BabelStream records no machine, and no compiler. They come from ``--machine`` (and
``--compiler``), an ``xamm.toml`` beside the runs, or ``--path-pattern``: a regular expression
searched in each file's path under the ingest root whose named groups ``machine``, ``compiler``
and ``device`` supply those facts (an archive whose file names say them). The device is the one
the run names (its ``Using ... device`` line; CUDA and HIP run on GPUs), else ``--device``, else
the registry's record of a one-device platform; a run for which none says is rejected, naming how
to say it.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from xamm_data.machines import registry as machines
from xamm_ingest.choices import path_pattern_problem
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import find_config, load_config, source_machine
from xamm_ingest.readers import babelstream as bs
from xamm_ingest.readers.base import ReadResult, Source, provenance
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task, ingest_root, list_files

SKIPPED_NAMES = (".gitignore", "xamm.toml")
HOW = (
    'pass --machine NAME, put an xamm.toml with machine = "NAME" beside the runs, or give '
    "--path-pattern with a (?P<machine>...) group"
)


def prepare(opts: dict) -> dict:
    """The options, checked once before any file: each path pattern compiles and names only the
    groups it may supply (a ``ValueError`` naming the pattern)."""
    for pattern in opts.get("path_patterns") or ():
        if problem := path_pattern_problem(pattern):
            raise ValueError(f"path pattern {pattern!r}: {problem}")
    return opts


def plan(paths: list[Path], opts: dict) -> Plan:
    """Every file under ``paths`` is a task, carrying what its ``xamm.toml`` says (read once per
    directory); a bad ``xamm.toml`` rejects the files it covers, naming it."""
    out = Plan(root=ingest_root(paths))
    configs: dict[Path, tuple | IngestError] = {}
    for f in list_files(paths, out):
        if f.name in SKIPPED_NAMES:
            continue
        if f.parent not in configs:
            configs[f.parent] = _config_facts(f.parent, out.root)
        facts = configs[f.parent]
        if isinstance(facts, IngestError):
            out.rejected.append(Rejected(str(f), str(facts)))
            continue
        out.tasks.append(Task("babelstream", f, out.root, defaults=facts))
    return out


def _config_facts(directory: Path, root: Path) -> tuple | IngestError:
    """(name, value) pairs of the ``xamm.toml`` that applies to ``directory``'s files."""
    path = find_config(directory, root)
    if path is None:
        return ()
    try:
        cfg = load_config(path)
    except IngestError as e:
        return e
    return tuple(
        (k, v) for k in ("machine", "device", "compiler") if (v := getattr(cfg, k)) is not None
    )


def _facts(task: Task, src: Source, opts: dict) -> dict:
    """machine, device and compiler from the options, the xamm.toml, then the path pattern."""
    found: dict = {}
    for pattern in opts.get("path_patterns") or ():
        if m := re.search(pattern, src.rel_path):
            found = {k: v for k, v in m.groupdict().items() if v}
            break
    cfg: dict = dict(task.defaults)
    machine = opts.get("machine") or cfg.get("machine") or found.get("machine")
    if not machine:
        raise IngestError(task.path, f"BabelStream outputs name no machine; {HOW}")
    device = opts.get("device") or cfg.get("device") or found.get("device")
    if device not in (None, "cpu", "gpu"):
        raise IngestError(task.path, f"device {device!r} from the path; expected cpu or gpu")
    compiler = opts.get("compiler") or cfg.get("compiler") or found.get("compiler")
    return {
        "machine": source_machine(machine, task.path, "the machine name"),
        "device": device,
        "compiler": compiler,
        "implementation": opts.get("implementation"),
    }


def _device(run: bs.StreamRun, facts: dict, path: Path) -> str:
    said = bs.device_of(run)
    if said:
        return said
    if facts["device"]:
        return facts["device"]
    known = machines.canonical_id(facts["machine"])
    if known and len(devs := machines.get(known).devices) == 1:
        return devs[0]
    raise IngestError(
        path,
        f"the run at line {run.line} ({run.implementation or 'no implementation line'}) does "
        "not say whether it ran on a CPU or a GPU, and the machine "
        f"{facts['machine']!r} has both or is not in the registry; pass --device cpu|gpu",
        record=f"line {run.line}",
    )


def read(task: Task, opts: dict) -> ReadResult:
    """Read one file: every BabelStream run in it, one row per kernel line."""
    src = Source.of(task.path, task.root, task.sha256, task.link)  # the plan's hash and link
    text = task.path.read_bytes().decode("utf-8", errors="replace")
    try:
        runs = bs.parse(text)
    except bs.BabelStreamError as e:
        raise IngestError(task.path, f"{e}; expected BabelStream output") from None
    if not runs:
        return ReadResult(notes=[f"ignored {src.rel_path}: no BabelStream run in it"])
    facts = _facts(task, src, opts)
    res = ReadResult()
    for run in runs:
        _run_rows(run, facts, src, task.path, res)
    return res


def _run_rows(run: bs.StreamRun, facts: dict, src: Source, path: Path, res: ReadResult) -> None:
    for line, what, value, rule in run.problems:
        res.dropped_record(f"line {line} ({what})", "kernel", value, rule)
    if not run.kernels and run.problems:
        return
    if not run.kernels:
        res.dropped_record(
            f"line {run.line}", "kernel", "none", "the run printed no kernel results (cut short?)"
        )
        return
    try:
        n = run.elements()
    except bs.BabelStreamError as e:
        raise IngestError(path, str(e)) from None
    if n < 1:
        size, unit = run.array_printed or (0.0, "MB")
        res.dropped_record(
            f"line {run.line}",
            "problem_size",
            f"{size} {unit}",
            "the array size prints as 0 at 0.1 MB digits, too small to count its elements; "
            "BabelStream's --csv output states them (n_elements)",
        )
        return
    rf = bs.RunFacts(
        machine=facts["machine"],
        device=_device(run, facts, path),
        compiler=facts["compiler"],
        implementation=facts["implementation"],
    )
    fmt = "babelstream-csv" if run.csv else "babelstream"
    tools = {"babelstream": run.version} if run.version else None
    for k in run.kernels:
        if why := bs.printed_disagreement(run, k, n):
            res.dropped_record(f"line {k.line} ({k.name})", "time_per_rep_min_s", k.min_s, why)
            continue
        try:
            row = bs.kernel_row(run, k, n, rf)
        except bs.BabelStreamError as e:
            raise IngestError(path, str(e)) from None
        row.update(provenance(src, fmt, "xamm_ingest.readers.babelstream", tools))
        row["_device_name"] = device_name(run.device_name)
        res.rows.append(row)


def device_name(name: str | None) -> str | None:
    """The device a run names, as compared across runs: without a trailing ``(gpu)``/``(cpu)``
    tag some implementations add, spaces collapsed (``Iris Pro 580 [0x193b](gpu)`` and ``Iris Pro
    580 [0x193b]`` are one device)."""
    if not name:
        return None
    return re.sub(r"\s+", " ", re.sub(r"\((?:gpu|cpu)\)\s*$", "", name, flags=re.I)).strip()


def finish(frame: pl.DataFrame, report, opts: dict) -> pl.DataFrame:
    """Runs stored under one machine must be of the devices that machine has:

    * two names of one kind (an MI210 and an MI250X under one ``--machine``) are refused unless
      ``--one-device`` says the names are one device;
    * a CPU and a GPU named under one machine are refused unless ``--one-node`` says they are one
      node's, or the registry records the machine with both;
    * a run on a device kind the registry says the machine does not have (a SYCL run that picked
      the host CPU of a GPU platform) is refused.

    Each refusal names the devices and their files."""
    if frame.is_empty() or "_device_name" not in frame.columns:
        return frame
    bad: dict[str, str] = {}
    if not opts.get("one_device"):
        bad |= _same_kind(frame)
    if not opts.get("one_node"):
        bad |= _both_kinds(frame)
    bad |= _registry_kinds(frame)
    for f, problem in sorted(bad.items()):
        report.rejected.append(Rejected(f, f"{f}: {problem}", problem))
    return frame.filter(~pl.col("source_path").is_in(sorted(bad))) if bad else frame


def _files_by_name(rows: pl.DataFrame, names: list[str]) -> dict[str, list[str]]:
    return {n: sorted(set(rows.filter(pl.col("_device_name") == n)["source_path"].to_list()))
            for n in names}  # fmt: skip


def _said(files: dict[str, list[str]]) -> str:
    return "; ".join(f"{n!r} in {', '.join(fs[:2])}" + (" ..." if len(fs) > 2 else "")
                     for n, fs in files.items())  # fmt: skip


GIVE_EACH = ("give each its machine (--path-pattern with a (?P<machine>...) group, an xamm.toml "
             "per folder, or one --machine per ingest)")  # fmt: skip


def _same_kind(frame: pl.DataFrame) -> dict[str, str]:
    """The files of a machine whose runs name two devices of one kind, each with the problem."""
    named = frame.filter(pl.col("_device_name").is_not_null())
    clash = (
        named.group_by("machine", "device")
        .agg(pl.col("_device_name").unique().sort())
        .filter(pl.col("_device_name").list.len() > 1)
    )
    bad: dict[str, str] = {}
    for machine, device, names in clash.iter_rows():
        rows = named.filter((pl.col("machine") == machine) & (pl.col("device") == device))
        files = _files_by_name(rows, names)
        problem = (f"the runs given machine {machine!r} name {len(names)} {device} devices "
                   f"({_said(files)}); {GIVE_EACH}, or pass --one-device if the names are one "
                   "device")  # fmt: skip
        bad |= {f: problem for fs in files.values() for f in fs}
    return bad


def _both_kinds(frame: pl.DataFrame) -> dict[str, str]:
    """The files of a machine whose runs name a CPU and a GPU when the registry does not record
    the machine with both (a node's host and its GPU, or two machines' runs mixed)."""
    named = frame.filter(pl.col("_device_name").is_not_null())
    kinds = named.group_by("machine").agg(pl.col("device").n_unique().alias("n"))
    bad: dict[str, str] = {}
    for machine in kinds.filter(pl.col("n") > 1).get_column("machine").to_list():
        known = machines.canonical_id(machine)
        if known and set(machines.get(known).devices) == {"cpu", "gpu"}:
            continue
        rows = named.filter(pl.col("machine") == machine)
        names = sorted(set(rows["_device_name"].to_list()))
        files = _files_by_name(rows, names)
        problem = (f"the runs given machine {machine!r} name a CPU and a GPU ({_said(files)}) and "
                   "no registry record says the machine has both; pass --one-node if they are one "
                   f"node's (or record it: xamm machines add {machine} --cpu ... --gpu ...), else "
                   f"{GIVE_EACH}")  # fmt: skip
        bad |= {f: problem for fs in files.values() for f in fs}
    return bad


def _registry_kinds(frame: pl.DataFrame) -> dict[str, str]:
    """The files of runs on a device kind the registry says their machine does not have."""
    bad: dict[str, str] = {}
    for (machine,), rows in frame.group_by(["machine"]):
        known = machines.canonical_id(machine)
        if not known:
            continue
        has = machines.get(known).devices
        wrong = rows.filter(~pl.col("device").is_in(list(has)))
        for device, name, f in (
            wrong.select("device", "_device_name", "source_path").unique().rows()
        ):
            ran = f" ({name})" if name else ""
            bad[f] = (f"the run ran on a {device}{ran}, and the registry records {machine!r} with "
                      f"its {' and '.join(has)} only; give the run its machine (the device it "
                      "ran on), or correct the registry")  # fmt: skip
    return bad
