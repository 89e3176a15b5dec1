"""The canonical hardware-counter table.

Counter names differ across PAPI, perf, HPCToolkit and Caliper (and across machines); xamm maps
each to one canonical name. The table is defined here once and exported to
``schemas/counters.json`` (``xamm schemas export``). :func:`resolve` maps any known alias to its
canonical counter; unknown names return ``None`` and are kept raw by the ingestors.
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache


@dataclasses.dataclass(frozen=True, kw_only=True)
class Counter:
    """A canonical counter and the names it is known by (a declaration in code: a frozen
    dataclass, its names checked to be text when built)."""

    name: str
    unit: str
    description: str
    papi: tuple[str, ...] = ()
    perf: tuple[str, ...] = ()
    hpctoolkit: tuple[str, ...] = ()
    caliper: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for f in ("name", "unit", "description"):
            if not isinstance(getattr(self, f), str):
                raise TypeError(f"counter {self.name!r}: {f} is text")
        for f in ("papi", "perf", "hpctoolkit", "caliper"):
            names = tuple(getattr(self, f))
            if not all(isinstance(n, str) for n in names):
                raise TypeError(f"counter {self.name!r}: {f} holds names (text) only")
            object.__setattr__(self, f, names)

    def as_record(self) -> dict:
        """The counter as one row of ``schemas/counters.json`` and the counters table (its name
        lists as lists)."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)
        }

    def aliases(self) -> tuple[str, ...]:
        return self.papi + self.perf + self.hpctoolkit + self.caliper


def _k(name, unit, description, papi=(), perf=(), hpctoolkit=(), caliper=()) -> Counter:
    papi, perf = tuple(papi), tuple(perf)
    # HPCToolkit names PAPI and perf events by the event name; Caliper prefixes papi. / perf.
    hpctoolkit = tuple(dict.fromkeys((*hpctoolkit, *papi, *perf)))
    caliper = tuple(
        dict.fromkeys((*caliper, *(f"papi.{p}" for p in papi), *(f"perf.{p}" for p in perf)))
    )
    return Counter(
        name=name,
        unit=unit,
        description=description,
        papi=papi,
        perf=perf,
        hpctoolkit=hpctoolkit,
        caliper=caliper,
    )


COUNTERS: tuple[Counter, ...] = (
    _k(
        "tot_ins",
        "instructions",
        "Instructions retired",
        ["PAPI_TOT_INS"],
        ["instructions", "inst_retired.any"],
    ),
    _k(
        "tot_cyc",
        "cycles",
        "Core cycles",
        ["PAPI_TOT_CYC"],
        ["cycles", "cpu-cycles", "cpu_clk_unhalted.thread"],
    ),
    _k(
        "ref_cyc",
        "cycles",
        "Reference cycles",
        ["PAPI_REF_CYC"],
        ["ref-cycles", "cpu_clk_unhalted.ref_tsc"],
    ),
    _k(
        "br_ins",
        "instructions",
        "Branch instructions",
        ["PAPI_BR_INS"],
        ["branches", "branch-instructions", "br_inst_retired.all_branches"],
    ),
    _k(
        "br_msp",
        "instructions",
        "Mispredicted branches",
        ["PAPI_BR_MSP"],
        ["branch-misses", "br_misp_retired.all_branches"],
    ),
    _k(
        "ld_ins",
        "instructions",
        "Load instructions",
        ["PAPI_LD_INS"],
        ["mem_inst_retired.all_loads", "mem_uops_retired.all_loads"],
    ),
    _k(
        "sr_ins",
        "instructions",
        "Store instructions",
        ["PAPI_SR_INS"],
        ["mem_inst_retired.all_stores", "mem_uops_retired.all_stores"],
    ),
    _k("int_ins", "instructions", "Integer arithmetic instructions", ["PAPI_INT_INS"]),
    _k("fp_ins", "instructions", "Floating-point instructions (any precision)", ["PAPI_FP_INS"]),
    _k("fp_ops", "flop", "Floating-point operations (any precision)", ["PAPI_FP_OPS"]),
    _k(
        "sp_ops",
        "flop",
        "Single-precision floating-point operations",
        ["PAPI_SP_OPS", "PAPI_VEC_SP"],
    ),
    _k(
        "dp_ops",
        "flop",
        "Double-precision floating-point operations",
        ["PAPI_DP_OPS", "PAPI_VEC_DP"],
    ),
    _k("l1_dcm", "misses", "L1 data-cache misses", ["PAPI_L1_DCM"], ["L1-dcache-misses"]),
    _k("l1_ldm", "misses", "L1 load misses", ["PAPI_L1_LDM"], ["L1-dcache-load-misses"]),
    _k("l1_stm", "misses", "L1 store misses", ["PAPI_L1_STM"], ["L1-dcache-store-misses"]),
    _k("l2_dcm", "misses", "L2 data-cache misses", ["PAPI_L2_DCM"]),
    _k("l2_ldm", "misses", "L2 load misses", ["PAPI_L2_LDM"], ["l2_rqsts.demand_data_rd_miss"]),
    _k("l2_stm", "misses", "L2 store misses", ["PAPI_L2_STM"], ["l2_rqsts.rfo_miss"]),
    _k(
        "l3_tcm",
        "misses",
        "Last-level cache misses",
        ["PAPI_L3_TCM"],
        ["cache-misses", "LLC-load-misses", "longest_lat_cache.miss"],
    ),
    _k(
        "l3_tca",
        "accesses",
        "Last-level cache accesses",
        ["PAPI_L3_TCA"],
        ["cache-references", "longest_lat_cache.reference"],
    ),
    _k(
        "tlb_dm",
        "misses",
        "Data TLB misses",
        ["PAPI_TLB_DM"],
        ["dTLB-load-misses", "dtlb_load_misses.miss_causes_a_walk"],
    ),
    _k(
        "ept_walk_cyc",
        "cycles",
        "Extended page table walk cycles",
        [],
        ["ept.walk_pending", "ept.walk_cycles"],
    ),
    _k(
        "mem_stall_cyc",
        "cycles",
        "Cycles stalled on memory",
        ["PAPI_MEM_SCY", "PAPI_RES_STL"],
        ["cycle_activity.stalls_mem_any", "stalled-cycles-backend"],
    ),
    _k("page_faults", "faults", "Page faults", [], ["page-faults", "faults"]),
    _k(
        "io_read_bytes",
        "B",
        "Bytes read by I/O calls",
        [],
        [],
        ["IO_BYTES_READ", "io:read bytes"],
        ["io.bytes.read"],
    ),
    _k(
        "io_write_bytes",
        "B",
        "Bytes written by I/O calls",
        [],
        [],
        ["IO_BYTES_WRITTEN", "io:write bytes"],
        ["io.bytes.written"],
    ),
)


@lru_cache(maxsize=8192)
def _norm(name: str) -> str:
    """Normalise a metric name so spelling variants compare equal (cached: every profile of a
    corpus names the same metrics).

    Strips HPCToolkit decorations (``PAPI_TOT_INS (I)``, ``cycles:Sum (E)``, ``PAPI_TOT_INS:Sum``),
    Caliper aggregation prefixes (``sum#papi.PAPI_TOT_INS``) and case.
    """
    n = name.strip()
    n = re.sub(r"\s*\((I|E|inc|exc)\)\s*$", "", n, flags=re.I)
    n = n.split("#")[-1]
    n = re.sub(r":(sum|mean|min|max|stddev|cfvar|count)$", "", n, flags=re.I)
    return n.lower()


@lru_cache(maxsize=1)
def _alias_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for c in COUNTERS:
        for alias in (c.name, *c.aliases()):
            key = _norm(alias)
            if index.get(key, c.name) != c.name:
                raise ValueError(
                    f"counter alias {alias!r} maps to both {index[key]!r} and {c.name!r}"
                )
            index[key] = c.name
    return index


@lru_cache(maxsize=4096)
def resolve(metric_name: str) -> str | None:
    """Return the canonical counter for ``metric_name`` (any known alias), or ``None`` if
    unknown."""
    return _alias_index().get(_norm(metric_name))


def get(name: str) -> Counter:
    """Return the canonical counter ``name``; the error lists the known names."""
    for c in COUNTERS:
        if c.name == name:
            return c
    raise KeyError(
        f"unknown counter {name!r}; known counters: {', '.join(c.name for c in COUNTERS)}"
    )
