"""The report's pages: the index, a page per machine, a page per certificate and the predictions,
each linking the others by relative paths (the site opens from the filesystem)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from xamm_data.cli.summary import with_intervals
from xamm_models.compare.certificates.records import Certificate
from xamm_models.compare.history.drift_report import plot_drift
from xamm_models.report import markup as html
from xamm_models.report.figures import plot_programs, plot_signature_versions
from xamm_models.report.gather import MachineView, Prediction, TargetView

__all__ = ["CSS", "Writer", "machine_data", "prediction_data"]

CSS = html.CSS
NO_PLOT = "figure not drawn: matplotlib is not installed (pip install 'xamm[models]')"
#: the history's columns a page shows, under their headings
HISTORY = {
    "version": "version",
    "created": "built",
    "sources": "runs",
    "first_run": "first run",
    "last_run": "last run",
    "compilers": "compilers",
    "bandwidth_gbs": "GB/s",
    "accepted": "accepted",
    "changes": "what changed",
}
MOVED = (
    "variant",
    "group",
    "kernel",
    "problem_size",
    "trials_before",
    "trials_after",
    "ratio",
    "lo",
    "hi",
    "verdict",
)
VERDICTS = ("criterion", "ref", "group", "kernels", "basis", "relR", "lo", "hi", "limit",
            "verdict", "certain", "before", "why")  # fmt: skip
PROGRAMS = (
    "rank",
    "target",
    "basis",
    "relR",
    "relR_lo",
    "relR_hi",
    "p_fastest",
    "time_s",
    "time_lo_s",
    "time_hi_s",
    "assumes",
    "target_configuration",
)


def machine_page(machine: str) -> str:
    """A machine's page, relative to the site's root."""
    return f"machines/{machine}.html"


def certificate_page(machine: str, number: int) -> str:
    """A certificate's page, relative to the site's root."""
    return f"machines/{machine}/certificate-{number}.html"


def _rel(page: str, target: str) -> str:
    """``target`` (relative to the root) as seen from ``page`` (relative to the root)."""
    up = "../" * page.count("/")
    return up + target


def _cert_line(c: Certificate | None) -> str:
    if c is None:
        return "none yet"
    return f"{c.number}: {c.verdict} ({c.created[:10]}) against {', '.join(c.refs)}"


def _drift_table(tv: TargetView) -> pl.DataFrame:
    groups = tv.drift.groups if tv.drift is not None else pl.DataFrame()
    keep = [c for c in ("group", "kernels", "ratio", "lo", "hi", "verdict") if c in groups.columns]
    shown = groups.select(keep)
    if {"ratio", "lo", "hi"} <= set(keep):
        shown = with_intervals(shown, {"ratio": ("lo", "hi")}, digits=3)
    return shown


class Writer:
    """Writes the pages into the site's folder, recording each page and figure written."""

    def __init__(self, root: Path, pages: list[str], figures: list[str], *, predicted: bool):
        self.root, self.pages, self.figures, self.predicted = root, pages, figures, predicted

    def text(self, rel: str, text: str) -> None:
        """Write a file of the site."""
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")

    def _page(self, rel: str, title: str, body: list[str]) -> None:
        nav = [(_rel(rel, "index.html"), "xamm report: machines")]
        if self.predicted:
            nav.append((_rel(rel, "predictions.html"), "predictions"))
        self.text(rel, html.page(title, body, nav=nav, css=_rel(rel, "style.css")))
        self.pages.append(rel)

    def _figure(self, rel_page: str, name: str, draw, caption: str) -> str:
        """Draw ``figures/name`` with ``draw(path)`` (None: nothing to draw) and show it."""
        try:
            drawn = draw(self.root / "figures" / name)
        except ModuleNotFoundError:
            return html.figure(None, caption, missing=NO_PLOT)
        if drawn is None:
            return html.figure(None, caption, missing=f"nothing to draw: {caption}")
        self.figures.append(f"figures/{name}")
        return html.figure(_rel(rel_page, f"figures/{name}"), caption)

    # -- the index -------------------------------------------------------------------------

    def index(self, views: list[MachineView], pred, *, store_root: str, store_version) -> None:
        """``index.html``: a row per machine and device."""
        rows = []
        for v in views:
            for tv in v.targets or [TargetView(f"{v.machine}", note=v.note)]:
                versions = (
                    tv.history.get_column("version").to_list() if tv.history is not None else []
                )
                rows.append(
                    {
                        "machine": v.machine,
                        "target": tv.target,
                        "signature": f"{tv.target}@{max(versions)}" if versions else "none yet",
                        "newest certificate": _cert_line(v.newest),
                        "drift": tv.drift_state or v.note,
                        "chain problems": len(v.problems),
                    }
                )
        body = [
            html.paragraph(
                f"The machines of the store at {store_root} (benchmark_runs version "
                f"{store_version}): each device's newest physics signature, the machine's newest "
                "certificate and what moved since its acceptance. Each machine's page has its "
                "history."
            )
        ]
        if rows:
            links = {"machine": {v.machine: machine_page(v.machine) for v in views}}
            body.append(html.table(pl.DataFrame(rows), links=links))
        else:
            body.append(
                html.paragraph(
                    "The store holds no benchmark runs: ingest some with "
                    "`xamm-ingest rajaperf ./runs`.",
                    note=True,
                )
            )
        if pred is not None:
            body.append("<h2>Predictions</h2>")
            body.append(
                html.paragraph(
                    f"{pred.profile}: "
                    + f"predicted on {pred.programs.height} targets from {pred.source}"
                )
            )
            body.append(html.link("predictions.html", "the predicted time per target"))
        self._page("index.html", "Machines", body)

    # -- a machine -------------------------------------------------------------------------

    def machine(self, v: MachineView, pred: Prediction | None) -> None:
        """``machines/<machine>.html`` and a page per certificate."""
        rel = machine_page(v.machine)
        body = []
        if v.problems:
            body.append(
                html.paragraph(
                    f"The certificate chain check found {len(v.problems)} problem(s); a "
                    "certificate that does not verify is not shown (xamm accept verify "
                    f"{v.machine}):",
                    note=False,
                )
            )
            body.append(
                "<ul>" + "".join(f"<li>{html.status(p)}</li>" for p in v.problems) + "</ul>"
            )
        if v.note:
            body.append(html.paragraph(v.note, note=True))
        for tv in v.targets:
            body += self._target(rel, tv, pred)
        body += self._certificates(rel, v)
        self._page(rel, v.machine, body)
        for c in v.certificates:
            self.certificate(v.machine, c, v.signed.get(c.number or 0, "no"))

    def _target(self, rel: str, tv: TargetView, pred: Prediction | None) -> list[str]:
        slug = tv.target.replace(":", "-")
        body = [f'<h2 id="{slug}">{html.escape(tv.target)}</h2>', "<h3>Signature versions</h3>"]
        if tv.history is not None and tv.history.height:
            h = tv.history.select(c for c in HISTORY if c in tv.history.columns)
            body.append(html.table(h.rename(HISTORY, strict=False)))
        else:
            body.append(html.paragraph("no physics signature of this device yet", note=True))
        if tv.figures is not None:

            def draw(p):
                return plot_signature_versions(tv.figures, f"{tv.target}: physics figures", p)

            body.append(
                self._figure(
                    rel,
                    f"{slug}-signature.png",
                    draw,
                    "physics figures per signature version, 90% bootstrap "
                    "interval over the version's runs",
                )
            )
            body.append(html.table(_figure_table(tv.figures)))
        body += self._drift(rel, tv, slug)
        if pred is not None:
            mine = pred.programs.filter(pl.col("target") == tv.target)
            body.append("<h3>Predicted for the chosen profile</h3>")
            body.append(
                html.table(_programs(mine))
                if mine.height
                else html.paragraph(f"{tv.target} is not among the profile's targets", note=True)
            )
        return body

    def _drift(self, rel: str, tv: TargetView, slug: str) -> list[str]:
        body = ["<h3>Drift</h3>", html.paragraph(tv.drift_state)]
        if tv.drift is None:
            return body
        d = tv.drift
        body.append(
            html.paragraph(
                f"{d.after} against {d.before}: ratio = time per rep after / before, geometric "
                f"mean over trials, flagged when the whole {d.level:.0%} family-wise interval "
                f"lies beyond {d.tolerance:.0%}.",
                note=True,
            )
        )
        body.append(html.table(_drift_table(tv)))

        def draw(p):
            plot_drift(d, p)
            return p

        body.append(
            self._figure(
                rel,
                f"{slug}-drift.png",
                draw,
                f"ratio per kernel with its {d.level:.0%} interval, the "
                f"{d.tolerance:.0%} band shaded",
            )
        )
        moved = d.kernels.filter(pl.col("verdict") != "same")
        body.append("<h3>Kernels that moved</h3>")
        if moved.height:
            shown = with_intervals(
                moved.select(c for c in MOVED if c in moved.columns),
                {"ratio": ("lo", "hi")},
                digits=3,
            )
            body.append(html.table(shown))
        else:
            body.append(html.paragraph("none beyond the tolerance and the trials' spread"))
        return body

    def _certificates(self, rel: str, v: MachineView) -> list[str]:
        body = ["<h2>Certificates</h2>"]
        if not v.certificates:
            return body + [
                html.paragraph(
                    f"none yet: `xamm accept {v.machine} --against REF --criteria criteria.toml` "
                    "writes the first",
                    note=True,
                )
            ]
        rows = [
            {
                "certificate": str(c.number),
                "target": c.new,
                "against": ", ".join(c.refs),
                "criteria": c.criteria.name,
                "verdict": c.verdict,
                "created": c.created,
                "judged": (g.judged if (g := c.ground()) else ""),
                "changed": len(c.changed),
                "signed": v.signed.get(c.number or 0, "no"),
            }
            for c in v.certificates
        ]
        links = {
            str(c.number): _rel(rel, certificate_page(v.machine, c.number or 0))
            for c in v.certificates
        }
        return body + [html.table(pl.DataFrame(rows), links={"certificate": links})]

    # -- a certificate ---------------------------------------------------------------------

    def certificate(self, machine: str, c: Certificate, signed: str = "no") -> None:
        """``machines/<machine>/certificate-<n>.html``: what it rests on, its criteria, its
        verdicts and what changed against the certificate before it."""
        rel = certificate_page(machine, c.number or 0)
        body = [html.link(_rel(rel, machine_page(machine)), f"← {machine}")]
        body.append(html.table(_facts(c, signed)))
        body += ["<h2>Criteria</h2>", html.table(_criteria(c))]
        f = c.frame()
        body.append("<h2>Verdicts</h2>")
        if f.height:
            keep = [x for x in VERDICTS if x in f.columns]
            body.append(
                html.table(with_intervals(f.select(keep), {"relR": ("lo", "hi")}, digits=3))
            )
        body.append("<h2>What changed</h2>")
        if c.previous is None:
            body.append(html.paragraph("the first certificate of its target"))
        else:
            prev = html.link(
                _rel(rel, certificate_page(machine, c.previous)), f"certificate {c.previous}"
            )
            said = "".join(f"<li>{html.escape(x)}</li>" for x in c.changed)
            body.append(
                f"<p>against {prev}: "
                + (f"</p><ul>{said}</ul>" if said else "no verdict changed</p>")
            )
        self._page(rel, f"{machine}: certificate {c.number} ({c.verdict})", body)

    # -- predictions -----------------------------------------------------------------------

    def predictions(self, pred: Prediction, machines: list[str]) -> None:
        """``predictions.html``: the profile's predicted time per target."""
        rel = "predictions.html"
        body = [
            html.paragraph(
                f"{pred.profile}, measured on {pred.source}: the predicted time "
                "per target, fastest first (relR = time there / on the source, "
                "80% intervals), as `xamm predict` prints it."
            )
        ]
        links = {
            t: _rel(rel, machine_page(t.split(":")[0]))
            for t in pred.programs.get_column("target")
            if t.split(":")[0] in machines
        }
        body.append(html.table(_programs(pred.programs), links={"target": links}))

        def draw(p):
            return plot_programs(pred.programs, f"{pred.profile} from {pred.source}", p)

        body.append(
            self._figure(
                rel, "predictions.png", draw, "predicted time per target with its 80% interval"
            )
        )
        body.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in pred.notes) + "</ul>")
        self._page(rel, "Predictions", body)


def _facts(c: Certificate, signed: str) -> pl.DataFrame:
    """What a certificate judged and rests on, a fact per row."""
    g = c.ground()
    facts = [
        ("verdict", c.verdict),
        ("target", c.new),
        ("against", ", ".join(c.refs)),
        ("criteria", f"{c.criteria.name} (sha256 {c.criteria_sha256[:12]})"),
        ("created", c.created),
        ("judged", g.judged if g else ""),
        ("runs", f"{g.sources} run(s), store version {g.data_version}" if g else ""),
        ("signature", (g.signature or "") if g else ""),
        ("problem sizes matched within", f"{c.size_ratio:g}x" if c.size_ratio else ""),
        ("sha256", c.sha256 or ""),
        ("signed", signed),
        ("xamm", c.xamm_version),
    ]
    return pl.DataFrame(facts, schema=["fact", "value"], orient="row")


def _criteria(c: Certificate) -> pl.DataFrame:
    """The criteria a certificate was judged by, as the centre wrote them."""
    return pl.DataFrame(
        [
            {
                "criterion": k.id,
                "description": k.description,
                "kind": k.kind,
                "groups": ", ".join(k.groups),
            }
            for k in c.criteria.criterion
        ]
    )


def _figure_table(figures: pl.DataFrame) -> pl.DataFrame:
    """One row per figure, a column per version: ``value [lo, hi]``."""
    shown = with_intervals(
        figures.filter(pl.col("value").is_not_null()), {"value": ("lo", "hi")}, digits=3
    )
    wide = shown.pivot(on="version", index="figure", values="value", maintain_order=True)
    return wide.rename({c: f"version {c}" for c in wide.columns if c != "figure"})


def _programs(programs: pl.DataFrame) -> pl.DataFrame:
    keep = [c for c in PROGRAMS if c in programs.columns]
    bounds = {"relR": ("relR_lo", "relR_hi"), "time_s": ("time_lo_s", "time_hi_s")}
    return with_intervals(programs.select(keep), bounds, digits=3)


def machine_data(v: MachineView) -> dict:
    """A machine's part of ``report.json``."""
    return {
        "machine": v.machine,
        "page": machine_page(v.machine),
        "note": v.note,
        "problems": v.problems,
        "certificates": [
            {
                "number": c.number,
                "target": c.new,
                "verdict": c.verdict,
                "created": c.created,
                "page": certificate_page(v.machine, c.number or 0),
            }
            for c in v.certificates
        ],
        "targets": [
            {
                "target": tv.target,
                "drift_state": tv.drift_state,
                "basis": tv.basis,
                "versions": tv.history.get_column("version").to_list()
                if tv.history is not None
                else [],
                "drift": tv.drift.to_dict() if tv.drift is not None else None,
            }
            for tv in v.targets
        ],
    }


def prediction_data(pred: Prediction | None) -> dict | None:
    """The prediction's part of ``report.json``."""
    if pred is None:
        return None
    return {
        "profile": pred.profile,
        "source": pred.source,
        "notes": pred.notes,
        "programs": pred.programs.to_dicts(),
    }
