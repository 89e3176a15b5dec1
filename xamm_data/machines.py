"""The machine registry: one table of the machines xamm knows.

Rows are the 16 platforms of the xAMM paper (Section V-E and Table III) plus the machines the
public data in xamm's tests covers. Facts carry their source. Machines the sources do not name get
an id derived from the processor, never an invented name.

A CPU and a GPU of the same node are different prediction targets: they are addressed as
``<machine>:cpu`` and ``<machine>:gpu`` (:func:`split_target`); benchmark rows carry a ``device``
column (``cpu`` for Seq/OpenMP variants, ``gpu`` for CUDA/HIP/SYCL/OpenMPTarget variants) that
selects the rows of each target.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from xamm_data.plugins import load
from xamm_data.registry import Registry, UnknownNameError
from xamm_data.targets import Target

PAPER = "xAMM paper (Dhakal et al.), Section V-E"
PAPER_T3 = "xAMM paper (Dhakal et al.), Table III"
DATA = "shared/data MANIFEST.md and the files' own metadata"


class Machine(BaseModel):
    """A registry record: what the machine is and where the facts come from."""

    model_config = ConfigDict(frozen=True)

    id: str
    aliases: tuple[str, ...] = ()
    cpu: str | None = None
    cores_per_node: int | None = None
    gpu: str | None = None
    gpus_per_node: int | None = None
    in_paper: bool = False
    source: str
    notes: str = ""
    # a platform of a performance-portability study: one device is measured, the other not
    only: Literal["cpu", "gpu"] | None = None

    @property
    def devices(self) -> tuple[str, ...]:
        if self.only:
            return (self.only,)
        return ("cpu", "gpu") if self.gpu else ("cpu",)

    def signature(self, version: int | None = None, device: str | None = None, registry=None):
        """This machine's AMM signature (latest version unless ``version``); ``device`` when it has
        two.

        Signatures are model-side (:mod:`xamm_models.machines.signatures`), found through the
        ``xamm.signatures`` hook.
        """
        lookup = load("xamm.signatures", "lookup", "AMM signatures")
        return lookup(self.id + (f":{device}" if device else ""), version, registry)


MACHINES: tuple[Machine, ...] = (
    Machine(
        id="quartz",
        aliases=("Quartz", "M1"),
        cpu="Intel Xeon E5-2695 v4",
        cores_per_node=36,
        in_paper=True,
        source=f"{PAPER_T3}; {DATA} (cluster=quartz)",
    ),
    Machine(
        id="ruby",
        aliases=("Ruby", "M2"),
        cpu="Intel Xeon CLX-8276L",
        cores_per_node=56,
        in_paper=True,
        source=PAPER_T3,
    ),
    Machine(
        id="corona",
        aliases=("Corona", "M3"),
        cpu="AMD Rome",
        cores_per_node=48,
        gpu="AMD MI50",
        gpus_per_node=8,
        in_paper=True,
        source=f"{PAPER_T3}; Section V-E lists it as '121 nodes AMD Rome'",
    ),
    Machine(
        id="lassen",
        aliases=("Lassen",),
        cpu="IBM POWER9",
        gpu="NVIDIA V100",
        in_paper=True,
        source=f"{PAPER} (IBM Power9); the VAE-DNN paper (V100); {DATA} "
        "(cluster=lassen, Base_CUDA runs)",
        notes="The paper benchmarks its IBM Power9 CPU; the public data has "
        "its V100 GPU (Base_CUDA).",
    ),
    Machine(
        id="xeon-gold",
        aliases=("Intel Xeon Gold",),
        cpu="Intel Xeon Gold",
        in_paper=True,
        source=PAPER,
        notes="The paper gives no model number.",
    ),
    Machine(
        id="xeon-e5-2695-v2",
        aliases=("Intel Xeon E5-2695 v2",),
        cpu="Intel Xeon E5-2695 v2",
        in_paper=True,
        source=PAPER,
    ),
    Machine(
        id="epyc-7742", aliases=("AMD EPYC 7742",), cpu="AMD EPYC 7742", in_paper=True, source=PAPER
    ),
    Machine(
        id="xeon-platinum-8479",
        aliases=("Intel(R) Xeon(R) Platinum 8479", "Intel Xeon Platinum 8479"),
        cpu="Intel Xeon Platinum 8479",
        in_paper=True,
        source=PAPER,
    ),
    Machine(
        id="xeon-platinum-8000-skylake-sp",
        aliases=("Intel Xeon Platinum 8000 series (Skylake-SP)",),
        cpu="Intel Xeon Platinum 8000 series (Skylake-SP)",
        in_paper=True,
        source=PAPER,
    ),
    Machine(
        id="epyc-7r13", aliases=("AMD EPYC 7R13",), cpu="AMD EPYC 7R13", in_paper=True, source=PAPER
    ),
    Machine(
        id="xeon-8375c",
        aliases=("Intel Xeon 8375C",),
        cpu="Intel Xeon 8375C",
        in_paper=True,
        source=PAPER,
    ),
    Machine(
        id="xeon-e5-2695",
        aliases=("Intel Xeon E5-2695",),
        cpu="Intel Xeon E5-2695",
        in_paper=True,
        source=PAPER,
        notes="Listed separately from the v2 and v4 parts; the paper gives no version.",
    ),
    Machine(
        id="amd-trento", aliases=("AMD Trento",), cpu="AMD Trento", in_paper=True, source=PAPER
    ),
    Machine(
        id="xeon-skylake-96vcpu",
        aliases=("96 custom Intel Xeon Scalable (Skylake) vCPUs",),
        cpu="Intel Xeon Scalable (Skylake), 96 vCPUs",
        cores_per_node=96,
        in_paper=True,
        source=PAPER,
        notes="A cloud instance; cores_per_node counts vCPUs.",
    ),
    Machine(
        id="xeon-gold-6140",
        aliases=("Intel Xeon Gold 6140",),
        cpu="Intel Xeon Gold 6140",
        in_paper=True,
        source=PAPER,
    ),
    Machine(
        id="xeon-8275cl",
        aliases=("Intel Cascade Lake 8275CL",),
        cpu="Intel Xeon Platinum 8275CL (Cascade Lake)",
        in_paper=True,
        source=PAPER,
    ),
    Machine(
        id="dane",
        aliases=("Dane",),
        cpu="Intel Xeon Platinum 8480+ (Sapphire Rapids)",
        cores_per_node=112,
        source=f"{DATA} (LLNL/thicket dane runs: the processor, and 112 ranks of one node); "
        "Intel's specification of the 8480+ (56 cores), two sockets a node",
        notes="Its RAJAPerf runs use one rank per core of a whole node.",
    ),
    Machine(
        id="h100-node",
        aliases=("H100", "RPBenchmark_H100"),
        gpu="NVIDIA H100",
        source=f"{DATA}: an LLNL node with NVIDIA H100 GPUs, 4 MPI ranks; no hostname in the files",
        notes="Host CPU model not stated in the files; its CPU target is the Base_Seq rows.",
    ),
    Machine(
        id="mi300a-spx",
        aliases=("MI300A", "MI300A-SPX", "RPBenchmark_MI300A"),
        cpu="AMD MI300A (Zen 4 cores)",
        cores_per_node=96,
        gpu="AMD MI300A (CDNA 3, SPX mode)",
        gpus_per_node=4,
        source=f"{DATA}: an AMD MI300A APU node in SPX mode, 4 ranks; no hostname in the files. "
        "LLNL's MI300A nodes (El Capitan class) hold 4 APUs of 24 Zen 4 cores; in SPX mode each "
        "APU is one GPU",
        notes="An APU: CPU and GPU share one package and memory; CPU target = "
        "Base_Seq rows, GPU target = HIP rows.",
    ),
)


UOB = (
    "UoB-HPC/performance-portability benchmarking results (shared/data MANIFEST.md): the "
    "platform is named by the results' directory (2019) or file names (2022-2024)"
)
# (id, processor, device) of each platform of the UoB study; the ids are the study's own names
UOB_PLATFORMS: tuple[tuple[str, str, str], ...] = (
    ("ampere-zoo", "Ampere eMAG", "cpu"),
    ("bdw-swan", "Intel Broadwell", "cpu"),
    ("gtx2080ti-zoo", "NVIDIA GeForce RTX 2080 Ti", "gpu"),
    ("k20-bcp3", "NVIDIA Tesla K20", "gpu"),
    ("k20x-swan", "NVIDIA Tesla K20X", "gpu"),
    ("knl-swan", "Intel Xeon Phi (Knights Landing)", "cpu"),
    ("naples-oracle", "AMD EPYC (Naples)", "cpu"),
    ("p100-isambard", "NVIDIA Tesla P100", "gpu"),
    ("power9-isambard", "IBM POWER9", "cpu"),
    ("radeonvii-zoo", "AMD Radeon VII", "gpu"),
    ("skl-horizon", "Intel Skylake", "cpu"),
    ("skl-swan", "Intel Skylake", "cpu"),
    ("tx2-foxconn", "Marvell ThunderX2", "cpu"),
    ("tx2-isambard", "Marvell ThunderX2", "cpu"),
    ("v100-bluegem", "NVIDIA Tesla V100", "gpu"),
    ("v100-isambard", "NVIDIA Tesla V100", "gpu"),
    ("a100", "NVIDIA A100 40GB", "gpu"),
    ("a100-80g", "NVIDIA A100 80GB", "gpu"),
    ("a64fx", "Fujitsu A64FX", "cpu"),
    ("graviton2", "AWS Graviton2", "cpu"),
    ("graviton3", "AWS Graviton3", "cpu"),
    ("graviton3e", "AWS Graviton3E", "cpu"),
    ("icl", "Intel Ice Lake", "cpu"),
    ("irispro580", "Intel Iris Pro Graphics 580", "gpu"),
    ("mi100", "AMD Instinct MI100", "gpu"),
    ("mi210", "AMD Instinct MI210", "gpu"),
    ("mi250x", "AMD Instinct MI250X", "gpu"),
    ("milan", "AMD EPYC (Milan)", "cpu"),
    ("tx2", "Marvell ThunderX2", "cpu"),
    ("uhdp630", "Intel UHD Graphics P630", "gpu"),
    ("v100", "NVIDIA Tesla V100", "gpu"),
)
MACHINES += tuple(
    Machine(
        id=mid,
        cpu=proc if dev == "cpu" else None,
        gpu=proc if dev == "gpu" else None,
        aliases=("a100_80g",) if mid == "a100-80g" else (),  # the study's file names
        only=dev,  # type: ignore[arg-type]
        source=UOB,
        notes="Only its " + dev.upper() + " is measured in the study.",
    )
    for mid, proc, dev in UOB_PLATFORMS
)


class UnknownMachineError(UnknownNameError):
    """A machine name that is in no registry; the message lists the known ids and the closest
    one."""


REGISTRY: Registry[Machine] = Registry("machine", error=UnknownMachineError)
for _m in MACHINES:
    REGISTRY.add(_m.id, _m, aliases=_m.aliases)


def list_machines(pattern: str = "*") -> list[str]:
    """Registry ids matching a shell-style ``pattern`` (e.g. ``"xeon*"``), sorted."""
    return REGISTRY.list(pattern)


def canonical_id(name: str) -> str | None:
    """The registry id for an id or alias (case-insensitive), else ``None``."""
    return REGISTRY.canonical(name)


def get(name: str) -> Machine:
    """The registry record for ``name`` (id or alias); raises :class:`UnknownMachineError` listing
    valid ids."""
    return REGISTRY.get(name)


def split_target(target: str) -> tuple[str, str | None]:
    """Split ``"lassen:gpu"`` into ``("lassen", "gpu")``; a bare name gives device ``None`` (see
    :class:`Target`)."""
    t = Target.parse(target)
    return t.machine, t.device
