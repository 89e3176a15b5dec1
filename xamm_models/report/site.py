"""``xamm report``: a static site for a centre, written from its home (no server; it opens from the
filesystem and from ``python -m http.server``).

The site::

    index.html                          every machine: newest signature, certificate, drift state
    machines/<machine>.html             per device: signature versions (a plot), drift since the
                                        accepted state (a plot with intervals), kernels that moved;
                                        every certificate; the prediction for the chosen profile
    machines/<machine>/certificate-<n>.html   verdicts, criteria, what it rests on, what changed
    predictions.html                    the chosen profile's predicted time per target (--profile)
    figures/*.png, style.css, report.json     (report.json: what the pages show, machine-readable)

The site is built in a folder beside ``out`` and moved into place whole: a report being replaced
stays whole until the new one is complete, and a folder that is not a report is never replaced.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xamm_data._version import __version__
from xamm_data.identifiers import check_name, is_name
from xamm_data.store.store import as_store
from xamm_models.compare.certificates.records import CertificateRegistry
from xamm_models.errors import NotAReportError
from xamm_models.machines.signatures import SignatureRegistry
from xamm_models.report import pages
from xamm_models.report.gather import MachineView, Prediction, gather_machine, gather_prediction

__all__ = ["Site", "build_site"]

MARK = "report.json"  # a folder holding it (with "xamm_report") is a report xamm may replace
TABLE = "benchmark_runs"


@dataclass
class Site:
    """A written site: its folder, its pages and figures (relative to it), and its data."""

    out: Path
    pages: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)


def _check_out(out: Path) -> None:
    """Refuse an ``out`` that holds anything but an earlier report."""
    if out.exists() and not out.is_dir():
        raise NotAReportError(f"{out} is a file, not a folder for the report")
    if out.is_dir() and any(out.iterdir()):
        mark = out / MARK
        try:
            ok = "xamm_report" in json.loads(mark.read_text())
        except (OSError, ValueError, TypeError, RecursionError):
            ok = False
        if not ok:
            raise NotAReportError(
                f"{out} holds files and no {MARK} of an earlier xamm report: the report replaces "
                "the folder it writes, so name a new or empty folder"
            )


def _swap(built: Path, out: Path) -> None:
    """Move the finished site into ``out``, replacing an earlier report only once it is whole."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.rename(old / "site")
    built.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def machines_of(store, certs: CertificateRegistry, wanted: list[str] | None) -> list[str]:
    """The machines reported: those named (each checked, and with runs in the store or a
    certificate), else every machine with runs in the store or a certificate."""
    st = as_store(store)
    have = set(st.machines(TABLE) if st.version(TABLE) is not None else [])
    if certs.root.is_dir():  # a machine whose every certificate fails its check is shown too
        have |= {d.name for d in certs.root.iterdir() if d.is_dir() and is_name(d.name)}
    if not wanted:
        return sorted(have)
    for m in wanted:
        check_name(m, where="--machine")
    missing = [m for m in wanted if m not in have]
    if missing:
        raise KeyError(
            f"no runs or certificates of {', '.join(missing)} (the store at {st.root} "
            f"and the certificates hold {', '.join(sorted(have)) or 'none'})"
        )
    return list(dict.fromkeys(wanted))


def build_site(
    out: str | Path,
    *,
    store=None,
    machines: list[str] | None = None,
    profile: str | Path | None = None,
    source: str | None = None,
    model: str = "xamm/default",
    public_key=None,
    progress: Callable[[str], None] = lambda m: None,
) -> Site:
    """Write the report.

    Args:
        out: the site's folder (new, empty, or an earlier report, which is replaced).
        store: the local store (default ``$XAMM_HOME/store``).
        machines: the machines to show (default: every machine with runs in the store).
        profile: a profile to predict on every target (``xamm predict``'s answer, on a page).
        source: where the profile was measured (default: its own machine).
        model: the predictor for the profile.
        public_key: the centre's Ed25519 public key every certificate must be signed by.
        progress: called with a line per step.

    Returns:
        The :class:`Site`.
    """
    out = Path(out).absolute()
    _check_out(out)
    st = as_store(store)
    reg, certs = SignatureRegistry.default(), CertificateRegistry.default()
    names = machines_of(st, certs, machines)
    views: list[MachineView] = []
    for m in names:
        progress(f"{m}: reading its history and certificates")
        views.append(
            gather_machine(
                m,
                store=st,
                registry=reg,
                certificates=certs,
                public_key=public_key,
                progress=progress,
            )
        )
    pred = None
    if profile is not None:
        progress(f"predicting {profile}")
        pred = gather_prediction(profile, source=source, model=model, store=st)
    out.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        site = _write(built, store, views, pred, progress)
        _swap(built, out)
    except BaseException:
        shutil.rmtree(built, ignore_errors=True)
        raise
    site.out = out
    return site


def _write(d: Path, store, views: list[MachineView], pred: Prediction | None, progress) -> Site:
    """Every page, figure and the data file into ``d``."""
    site, st = Site(d), as_store(store)
    (d / "figures").mkdir()
    (d / "machines").mkdir()
    w = pages.Writer(d, site.pages, site.figures, predicted=pred is not None)
    w.text("style.css", pages.CSS)
    for v in views:
        progress(f"{v.machine}: writing its pages")
        w.machine(v, pred)
    if pred is not None:
        w.predictions(pred, [v.machine for v in views])
    shown = "$XAMM_HOME/store" if store is None else str(st.root)
    w.index(views, pred, store_root=shown, store_version=st.version(TABLE))
    site.data = {
        "xamm_report": 1,
        "xamm_version": __version__,
        "store": shown,
        "store_version": st.version(TABLE),
        "machines": [pages.machine_data(v) for v in views],
        "prediction": pages.prediction_data(pred),
        "pages": sorted(site.pages),
        "figures": sorted(site.figures),
    }
    (d / MARK).write_text(json.dumps(site.data, indent=1, default=str))
    return site
