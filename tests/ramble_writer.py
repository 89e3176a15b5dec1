"""What ``benchpark setup`` and Ramble leave on disk for a RAJAPerf experiment (test fixtures).

Every layout here is derived from the tools' source, not guessed:

* ``LLNL/benchpark`` @ 7ae16bb (2024-10-24), ``lib/benchpark/cmd/setup.py``: the workspace is
  ``<experiments_root>/<experiment>/<system>/workspace`` with ``configs/`` (the system's
  ``variables.yaml``, the experiment's ``ramble.yaml``, the modifier's ``modifier.yaml``) and
  ``logs/``; ``<experiments_root>/setup.sh`` is written once. ``experiments/raja-perf/openmp/
  ramble.yaml`` (its ``include`` list, ``modifiers: [allocation]``, the ``suite`` workload and the
  experiment ``suite_{n_nodes}_{n_ranks}_{n_threads_per_proc}``), ``modifiers/caliper/configs/
  modifier.yaml`` and ``configs/LLNL-Dane-DELL-sapphirerapids-OmniPath/variables.yaml`` are
  reproduced in their structure.
* ``GoogleCloudPlatform/ramble`` @ e2d88e88: experiments run in
  ``experiments/<application>/<workload>/<experiment>`` (``keywords.py``: ``experiment_run_dir``);
  ``ramble workspace analyze -f json`` writes ``results.<date>.json`` and the link
  ``results.latest.json`` (``workspace.py``: ``dump_results``) holding ``workspace_hash``,
  ``workspace_name`` and ``experiments``, each as ``ExperimentResult.to_dict`` writes it
  (``experiment_result.py``): ``name``, ``RAMBLE_STATUS``, ``N_REPEATS``, the key-level keywords
  hoisted, ``CONTEXTS``, ``RAMBLE_VARIABLES``, ``RAMBLE_RAW_VARIABLES``, ``TAGS``,
  ``EXPERIMENT_CHAIN``; Ramble also writes ``ramble_inventory.json`` and ``execute_experiment``
  in each experiment directory.

The RAJAPerf Caliper files themselves are real ones, copied in by the caller.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

SYSTEM = "LLNL-Dane-DELL-sapphirerapids-OmniPath"
EXPERIMENT = "raja-perf/openmp"
RAMBLE_YAML = """\
ramble:
  include:
  - ./configs/software.yaml
  - ./configs/variables.yaml
  - ./configs/modifier.yaml

  config:
    deprecated: true
    spack_flags:
      install: '--add --keep-stage'
      concretize: '-U -f'

  modifiers:
  - name: allocation

  applications:
    raja-perf:
      workloads:
        suite:
          variables:
            n_ranks: '112'
          experiments:
            suite_{n_nodes}_{n_ranks}_{n_threads_per_proc}:
              variants:
                package_manager: spack
              variables:
                env_name: raja-perf
                n_nodes: '1'
                n_threads_per_proc: '1'
"""
MODIFIER_YAML = """\
variables:
  modifier_package_name: 'caliper'
  modifier_spack_variant: '+caliper'

modifiers:
  - name: caliper
    mode: time

software:
  packages:
    caliper:
      pkg_spec: caliper+adiak+mpi~libunwind~libdw~papi
"""
VARIABLES_YAML = """\
variables:
  timeout: "120"
  scheduler: "slurm"
  sys_cores_per_node: "112"
  max_request: "1000"  # n_ranks/n_nodes cannot exceed this
  n_ranks: '1000001'  # placeholder value
  n_nodes: '1000001'  # placeholder value
  batch_submit: "placeholder"
  mpi_command: "placeholder"
"""


def result(ws: Path, name: str, status: str = "SUCCESS") -> dict:
    """One experiment as ``ExperimentResult.to_dict`` writes it."""
    run_dir = ws / "experiments" / "raja-perf" / "suite" / name
    variables = {
        "workspace_name": "workspace",
        "application_run_dir": str(ws / "experiments" / "raja-perf"),
        "experiment_run_dir": str(run_dir),
        "env_name": "raja-perf",
        "n_threads_per_proc": "1",
        "sys_cores_per_node": "112",
        "scheduler": "slurm",
        "timeout": "120",
        "batch_submit": f"sbatch {run_dir}/execute_experiment",
        "mpi_command": "srun -N 1 -n 112",
        "modifier_package_name": "caliper",
        "modifier_spack_variant": "+caliper",
    }
    return {
        "name": f"raja-perf.suite.{name}",
        "RAMBLE_STATUS": status,
        "N_REPEATS": 0,
        "application_name": "raja-perf",
        "application_namespace": "raja-perf",
        "workload_name": "suite",
        "workload_namespace": "raja-perf.suite",
        "experiment_name": name,
        "experiment_namespace": f"raja-perf.suite.{name}",
        "experiment_status": status,
        "n_ranks": "112",
        "n_nodes": "1",
        "processes_per_node": "112",
        "CONTEXTS": [
            {
                "name": "null",
                "display_name": "Default Context",
                "foms": [
                    {
                        "name": "All tests pass",
                        "value": "DONE",
                        "units": "",
                        "origin": "raja-perf",
                        "origin_type": "application",
                    }
                ],
            }
        ],  # fmt: skip
        "RAMBLE_VARIABLES": variables,
        "RAMBLE_RAW_VARIABLES": {**variables, "experiment_run_dir": "{workspace_root}/..."},
        "TAGS": ["asc", "single-node", "raja"],
        "EXPERIMENT_CHAIN": [],
    }


def write_workspace(root: Path, cali: list[Path], *, results: bool = True) -> Path:
    """A Benchpark experiments root holding one RAJAPerf workspace on dane, one experiment per
    Caliper file given (``suite_1_112_1``, then ``suite_1_112_1.2``, ...); the workspace."""
    ws = root / EXPERIMENT / SYSTEM / "workspace"
    (ws / "configs" / "auxiliary_software_files").mkdir(parents=True)
    (ws / "logs").mkdir()
    (ws / "experiments").mkdir()
    (root / "setup.sh").write_text(
        'if [ -n "${_BENCHPARK_INITIALIZED:-}" ]; then\n  return 0\nfi\n'
    )
    (ws / "configs" / "ramble.yaml").write_text(RAMBLE_YAML)
    (ws / "configs" / "modifier.yaml").write_text(MODIFIER_YAML)
    (ws / "configs" / "variables.yaml").write_text(VARIABLES_YAML)
    (ws / "configs" / "software.yaml").write_text("software:\n  packages: {}\n")
    names = []
    for i, f in enumerate(cali):
        name = "suite_1_112_1" + ("" if i == 0 else f".{i + 1}")
        d = ws / "experiments" / "raja-perf" / "suite" / name
        d.mkdir(parents=True)
        shutil.copy(f, d / f.name)
        (d / "execute_experiment").write_text(
            f"#!/bin/bash\ncd {d}\nsrun -N 1 -n 112 raja-perf.exe\n"
        )
        (d / "ramble_inventory.json").write_text(json.dumps({"attributes": [], "inputs": []}))
        (d / f"{name}.out").write_text("DONE!!!....\n")
        names.append(name)
    if results:
        doc = {"workspace_hash": "0" * 64, "workspace_name": "workspace",
               "experiments": [result(ws, n) for n in names]}  # fmt: skip
        (ws / "results.2025-05-14_15.50.00.json").write_text(json.dumps(doc, indent=1))
        (ws / "results.latest.json").symlink_to(ws / "results.2025-05-14_15.50.00.json")
    return ws
