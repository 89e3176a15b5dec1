"""Certificates made in a test, without runs: the registry's rules (numbers, hashes, chain,
signatures) hold whatever a certificate judged, so these carry one made-up verdict each.

Synthetic data tests code paths here, never a claim about a machine."""

from __future__ import annotations

import hashlib

from xamm_models.compare.certificates import (
    Certificate,
    CertificateRegistry,
    Criteria,
    Criterion,
    Ground,
    GroupResult,
)
from xamm_models.compare.evidence import sources_sha256


def source_hashes(*names: str) -> list[str]:
    """Stand-ins for source-file hashes: the SHA-256 of each name."""
    return [hashlib.sha256(n.encode()).hexdigest() for n in names]


def certificate(machine: str = "newbox", verdict: str = "pass", relR: float = 0.9,
                sources: tuple[str, ...] = ("run-1",), device: str = "cpu") -> Certificate:  # fmt: skip
    """An unnumbered certificate of ``machine:device`` against quartz with one group's verdict."""
    shas = source_hashes(*sources)
    crit = Criteria(criterion=[Criterion(id="no-slow-group", kind="slowdown", at_most=0.1)])
    ground = Ground(target=f"{machine}:{device}", data_version=None, signature=None,
                    data_sha256=None, runs_sha256=sources_sha256(shas), sources=len(shas),
                    rows=10 * len(shas), state_sources=sorted(shas),
                    state_sha256=sources_sha256(shas))  # fmt: skip
    result = GroupResult(criterion="no-slow-group", ref="quartz:cpu", group="Stream", kernels=5,
                         basis="node", relR=relR, lo=relR * 0.9, hi=relR * 1.1, limit=1.1,
                         verdict=verdict, certain=True)  # fmt: skip
    return Certificate(machine=machine, new=f"{machine}:{device}", refs=["quartz:cpu"],
                       family="Base", verdict=verdict, criteria=crit, criteria_sha256="0" * 64,
                       grounds=[ground], results=[result], size_ratio=1.5)  # fmt: skip


def chain(root, n: int = 3, machine: str = "newbox", sign_key=None) -> CertificateRegistry:
    """A registry under ``root`` holding ``n`` certificates of ``machine``: pass, fail, pass, ..."""
    reg = CertificateRegistry(root)
    for i in range(n):
        verdict = "pass" if i % 2 == 0 else "fail"
        c = certificate(machine, verdict, relR=0.9 if verdict == "pass" else 1.2,
                        sources=(f"run-{i}",))
        reg.add(c, sign_key=sign_key)
    return reg
