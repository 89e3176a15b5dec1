"""Benchpark and Ramble workspaces: where the experiments are, and what the workflow recorded of
each.

Layouts read from the tools' source (never guessed):

* **Ramble** (``GoogleCloudPlatform/ramble``, ``lib/ramble/docs/workspace.rst`` and
  ``ramble/workspace/workspace.py``): a workspace holds ``configs/ramble.yaml`` and
  ``experiments/``; an experiment runs in ``experiments/<application>/<workload>/<experiment>``
  (the keyword ``experiment_run_dir``). ``ramble workspace analyze -f json`` writes
  ``results.<date>.json`` at the workspace root and links ``results.latest.json`` to it:
  ``{"workspace_hash", "workspace_name", "experiments": [...]}``, each experiment
  (``ramble/experiment_result.py``) with ``name``, ``RAMBLE_STATUS``, ``N_REPEATS``, the key-level
  keywords hoisted to the top (``application_name``, ``workload_name``, ``experiment_name``,
  ``n_ranks``, ``n_nodes``, ``processes_per_node``, ``n_threads``, ...), ``CONTEXTS`` (figures of
  merit), ``RAMBLE_VARIABLES`` (expanded), ``RAMBLE_RAW_VARIABLES``, ``TAGS`` and
  ``EXPERIMENT_CHAIN``. Modifiers are listed under ``ramble: modifiers`` of ``ramble.yaml`` and of
  the files it ``include``\\ s.
* **Benchpark** (``LLNL/benchpark``, ``lib/benchpark/cmd/setup.py``): ``benchpark setup
  <experiment> <system> <experiments_root>`` makes the Ramble workspace
  ``<experiments_root>/<experiment>/<system>/workspace`` (an experiment id may have two parts,
  ``raja-perf/openmp``) and writes ``<experiments_root>/setup.sh``; its Caliper modifier writes
  ``{experiment_run_dir}/{experiment_name}.cali`` (``modifiers/caliper/modifier.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from xamm_ingest.errors import IngestError
from xamm_ingest.sniff import is_ramble_workspace

__all__ = ["RESULTS", "Workspace", "experiment_dirs", "find_workspaces", "inside", "workspace_of"]

RESULTS = "results.latest.json"
CONFIG = Path("configs") / "ramble.yaml"
#: the most a workspace's results (Ramble writes kilobytes an experiment) and a YAML file are read
MAX_RESULTS_BYTES = 64 * 2**20
MAX_YAML_BYTES = 4 * 2**20
#: key-level keywords Ramble hoists to the top of each experiment's result
KEYS = ("application_name", "workload_name", "experiment_name", "experiment_namespace",
        "n_ranks", "n_nodes", "processes_per_node", "n_threads")  # fmt: skip


def is_workspace(d: Path) -> bool:
    """A Ramble workspace: ``configs/ramble.yaml`` and ``experiments/``."""
    return is_ramble_workspace(d)


def find_workspaces(path: Path) -> list[Path]:
    """The Ramble workspaces at or under ``path`` (a workspace, a Benchpark experiment, an
    experiments root), sorted."""
    if is_workspace(path):
        return [path]
    return sorted(c.parent.parent for c in path.rglob("configs/ramble.yaml")
                  if is_workspace(c.parent.parent))  # fmt: skip


def experiment_dirs(ws: Path) -> list[Path]:
    """Every ``experiments/<application>/<workload>/<experiment>`` directory of a workspace."""
    return sorted(d for d in (ws / "experiments").glob("*/*/*") if d.is_dir())


def workspace_of(path: Path) -> tuple[Path, tuple[str, str, str]] | None:
    """The workspace a file of an experiment lies in, and the experiment's (application,
    workload, experiment) names; None outside one."""
    for exp in [path, *path.parents]:
        parts = exp.parents
        if len(parts) >= 4 and parts[2].name == "experiments" and is_workspace(parts[3]):
            return parts[3], (parts[1].name, parts[0].name, exp.name)
    return None


def inside(path: Path, ws: Path) -> bool:
    """Whether ``path``, links followed, lies in the workspace ``ws``."""
    try:
        return path.resolve().is_relative_to(ws.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def _capped(p: Path, ws: Path, cap: int, what: str) -> bytes:
    """The bytes of a workspace file: refused by name when it (or a link to it) leads out of the
    workspace, is not a regular file, or is larger than ``cap``."""
    if not inside(p, ws):
        raise IngestError(p, f"{what} leads out of the workspace {ws} (a link or an absolute "
                          "path); refused")  # fmt: skip
    try:
        if not p.resolve().is_file():
            raise IngestError(p, f"{what} is not a regular file")
        with open(p, "rb") as f:
            data = f.read(cap + 1)
    except OSError as e:
        raise IngestError(p, f"{what} cannot be read: {e}") from None
    if len(data) > cap:
        raise IngestError(p, f"{what} is larger than {cap // 2**20} MiB: not what Ramble writes")
    return data


def _modifiers(ws: Path) -> list[str]:
    """``name:mode`` of every modifier ``ramble.yaml`` and the files it includes list."""
    out: list[str] = []
    cfg = _yaml(ws / CONFIG, ws).get("ramble") or {}
    cfg = cfg if isinstance(cfg, dict) else {}
    docs = [cfg]
    includes = cfg.get("include") or []
    for inc in includes if isinstance(includes, list) else [includes]:
        p = ws / str(inc)  # relative to the workspace, as Ramble reads it; absolute stays so
        if not inside(p, ws):
            raise IngestError(ws / CONFIG, f"include {inc!r} lies outside the workspace; "
                              "refused (copy it into the workspace's configs/)")  # fmt: skip
        if p.is_file():
            docs.append(_yaml(p, ws))
    for d in docs:
        mods = d.get("modifiers") or []
        for m in mods if isinstance(mods, list) else []:
            if isinstance(m, dict) and m.get("name"):
                out.append(f"{m['name']}:{m['mode']}" if m.get("mode") else str(m["name"]))
    return out


def _yaml(p: Path, ws: Path) -> dict:
    data = _capped(p, ws, MAX_YAML_BYTES, "the Ramble configuration")
    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as e:
        raise IngestError(p, f"not a readable Ramble configuration: {e}") from None
    return doc if isinstance(doc, dict) else {}


def _benchpark(ws: Path) -> dict[str, str]:
    """Benchpark's system and experiment, from where ``benchpark setup`` put the workspace."""
    if ws.name != "workspace":
        return {}
    system_dir = ws.parent
    out = {"benchpark.system": system_dir.name}
    for root in system_dir.parents:
        if (root / "setup.sh").is_file():  # benchpark setup writes it at the experiments root
            out["benchpark.experiment"] = system_dir.parent.relative_to(root).as_posix()
            break
    return out


@dataclass
class Workspace:
    """What a workspace's files say of its experiments."""

    root: Path
    common: dict[str, str] = field(default_factory=dict)
    experiments: dict[tuple[str, str, str], dict[str, str]] = field(default_factory=dict)
    note: str = ""

    def metadata(self, names: tuple[str, str, str]) -> list[dict[str, str]]:
        """(name, value) pairs of one experiment, workspace-level ones first."""
        own = self.experiments.get(names)
        base = {"ramble.application": names[0], "ramble.workload": names[1],
                "ramble.experiment": names[2]}  # fmt: skip
        merged = {**self.common, **base, **(own or {})}
        if own is None:
            merged["ramble.results"] = self.note or f"no result for this experiment in {RESULTS}"
        return [{"name": k, "value": v} for k, v in merged.items()]


def _text(v) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _experiment(e: dict) -> tuple[tuple[str, str, str], dict[str, str]]:
    names = (str(e["application_name"]), str(e["workload_name"]), str(e["experiment_name"]))
    variables, tags = e.get("RAMBLE_VARIABLES") or {}, e.get("TAGS") or []
    if not isinstance(variables, dict) or not isinstance(tags, list):
        raise ValueError("RAMBLE_VARIABLES is not a mapping or TAGS not a list")
    meta = {"ramble.status": str(e.get("RAMBLE_STATUS")), "ramble.name": str(e.get("name"))}
    meta |= {f"ramble.{k}": _text(e[k]) for k in KEYS[3:] if e.get(k) is not None}
    if tags:
        meta["ramble.tags"] = ";".join(map(str, tags))
    meta |= {f"ramble.variable.{k}": _text(v)
             for k, v in sorted(variables.items(), key=lambda kv: str(kv[0]))}  # fmt: skip
    return names, meta


@lru_cache(maxsize=64)
def read_workspace(ws: Path) -> Workspace:
    """A workspace's metadata: Benchpark's system and experiment, the modifiers, and per
    experiment what ``results.latest.json`` recorded (read once per process).

    Raises:
        IngestError: a results file or configuration that cannot be read, naming it and the
            record.
    """
    out = Workspace(ws, {**_benchpark(ws)})
    mods = _modifiers(ws)
    if mods:
        out.common["ramble.modifiers"] = ";".join(mods)
    res = ws / RESULTS
    if not res.exists() and not res.is_symlink():
        out.note = f"no {RESULTS} (run `ramble workspace analyze -f json` for the variables)"
        return out
    try:
        doc = json.loads(_capped(res, ws, MAX_RESULTS_BYTES, RESULTS).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise IngestError(res, f"not Ramble's results JSON: {e}") from None
    exps = doc.get("experiments") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not isinstance(exps, list | type(None)):
        raise IngestError(res, "expected {\"experiments\": [...]} as Ramble's analyze writes; "
                          f"found {type(doc).__name__}")  # fmt: skip
    if doc.get("workspace_name"):
        out.common["ramble.workspace"] = _text(doc["workspace_name"])
    for i, exp in enumerate(exps or []):
        what = f"experiment {i}"
        missing = [k for k in KEYS[:3] if not isinstance(exp, dict) or
                   not isinstance(exp.get(k), str | int)]  # fmt: skip
        if missing:
            raise IngestError(res, f"{what} has no {', '.join(missing)} (as text): not what "
                              "Ramble's analyze writes")  # fmt: skip
        try:
            names, meta = _experiment(exp)
        except ValueError as e:
            raise IngestError(res, f"{what} ({exp.get('name', '?')}): {e}") from None
        out.experiments[names] = meta
    return out
