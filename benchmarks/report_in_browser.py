"""``xamm report``'s site as a centre sees it: every page opened in headless Chromium, from the
filesystem (``file://``) and from ``python -m http.server``, a screenshot of each, and the checks a
reader's eye makes.

The site is the report of the acceptance guide's home (``examples/centre_acceptance.py``: dane
accepted against quartz and updated, quartz's bad update) with the LULESH profile predicted, built
fresh from the public runs; or ``--site DIR``, a report already written. Checks:

* every image loads (``naturalWidth > 0``) over both ways in;
* nothing is wider than the window: the page never scrolls sideways, and a table wider than its
  box sits in a box that scrolls;
* every link resolves: each ``href``/``src`` names a file of the site (served: answered 200);
* every page ``report.json`` lists is reached from ``index.html`` by links.

Needs Chromium and its driver (Debian: ``apt-get install chromium chromium-driver``) and
``selenium`` (the bench extra). Run: ``python benchmarks/report_in_browser.py [--out DIR]``;
screenshots go to ``DIR`` (default ``out/report-screens``), the findings to stdout and
``DIR/findings.json``; exit 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import io
import json
import os
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "examples"))
LULESH = "LLNL+thicket-tutorial/data/lulesh"
# measured in each page (selenium runs it)
PAGE_CHECKS = """
const out = {broken_images: [], too_wide: [], links: [], title: document.title};
for (const img of document.images) {
  if (!img.complete || img.naturalWidth === 0) out.broken_images.push(img.getAttribute('src'));
}
const root = document.documentElement;
if (root.scrollWidth > root.clientWidth + 1) out.too_wide.push('page: ' + root.scrollWidth);
for (const t of document.querySelectorAll('table')) {
  const box = t.closest('.scroll');
  const over = t.getBoundingClientRect().right > document.querySelector('main')
    .getBoundingClientRect().right + 1;
  if (over && !(box && getComputedStyle(box).overflowX === 'auto')) {
    out.too_wide.push('table: ' + t.innerText.slice(0, 60));
  }
}
for (const a of document.querySelectorAll('a[href]')) out.links.push(a.href);
return out;
"""


class _Refs(HTMLParser):
    """The ``href`` and ``src`` values of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.refs += [v for k, v in attrs if k in ("href", "src") and v]


def refs(page: Path) -> list[str]:
    """Every ``href``/``src`` of an HTML page."""
    p = _Refs()
    p.feed(page.read_text(encoding="utf-8"))
    return p.refs


def static_problems(site: Path) -> list[str]:
    """What is wrong with a written site without a browser: links or images naming no file of the
    site (or leaving it), pages ``report.json`` lists that are missing or not reached from the
    index, figures listed and not on disk."""
    data = json.loads((site / "report.json").read_text())
    problems = [f"{f}: listed, not written" for f in data["figures"] if not (site / f).is_file()]
    seen, todo = set(), ["index.html"]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        if not (site / page).is_file():
            problems.append(f"{page}: linked, not written")
            continue
        for ref in refs(site / page):
            if urlparse(ref).scheme or ref.startswith("/"):
                problems.append(f"{page}: {ref} leaves the site")
                continue
            target = (site / page).parent / urldefrag(ref)[0]
            rel = os.path.relpath(target, site)
            if rel.startswith(".."):
                problems.append(f"{page}: {ref} leaves the site")
            elif not target.is_file():
                problems.append(f"{page}: {ref} names no file")
            elif rel.endswith(".html"):
                todo.append(Path(rel).as_posix())
    problems += [f"{p}: not reached from index.html" for p in data["pages"] if p not in seen]
    return problems


def build_guide_site(data: Path, work: Path) -> Path:
    """The acceptance guide's home, and its report with the LULESH profile predicted."""
    import centre_acceptance

    os.environ["XAMM_HOME"] = str(work / "home")
    with contextlib.redirect_stdout(sys.stderr):
        centre_acceptance.steps(data, work / "runs")
    profile = sorted((data / LULESH).glob("*.cali"))[0]
    from xamm_data.cli.commands import main as xamm

    site = work / "site"
    argv = ["report", "--out", str(site), "--profile", str(profile), "--no-progress"]
    with contextlib.redirect_stdout(sys.stderr):
        if xamm(argv) != 0:
            raise SystemExit("xamm report failed")
    return site


def _served(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status == 200
    except urllib.error.URLError:
        return False


def _quiet_serve(site: Path):
    """The site on 127.0.0.1, as ``python -m http.server -d SITE`` serves it, without its log."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def _one(driver, page: str, root: str, served: bool) -> list[str]:
    """Open ``page`` under ``root``; what is wrong with it."""
    driver.get(urljoin(root, page))
    found = driver.execute_script(PAGE_CHECKS)
    bad = [f"image {s} did not load" for s in found["broken_images"]]
    bad += [f"wider than the window: {t}" for t in found["too_wide"]]
    if not found["title"]:
        bad.append("no title (did it load?)")
    if served:
        bad += [f"{u} not answered" for u in found["links"] if not _served(urldefrag(u)[0])]
    return bad


def look(site: Path, shots: Path) -> dict:
    """Open every page over ``file://`` and over HTTP, screenshot each (served); per page and
    way, the problems found, and the site's own (:func:`static_problems`)."""
    from docs_in_browser import browser

    pages = json.loads((site / "report.json").read_text())["pages"]
    found: dict = {"site": static_problems(site), "pages": {}}
    httpd, base = _quiet_serve(site)
    driver = browser()
    shots.mkdir(parents=True, exist_ok=True)
    try:
        for page in pages:
            row = found["pages"][page] = {}
            for way, root in (("file", site.as_uri() + "/"), ("http", base)):
                row[way] = _one(driver, page, root, way == "http")
            row["screenshot"] = page.removesuffix(".html").replace("/", "_") + ".png"
            driver.save_screenshot(str(shots / row["screenshot"]))
            print(f"{page}: {row['screenshot']}", file=sys.stderr)
        found["browser"] = driver.capabilities.get("browserVersion", "")
    finally:
        driver.quit()
        httpd.shutdown()
    return found


def problems(found: dict) -> list[str]:
    """Every problem, one line each."""
    out = list(found["site"])
    for page, row in found["pages"].items():
        out += [f"{page} ({way}): {p}" for way in ("file", "http") for p in row[way]]
    return out


def report(found: dict) -> None:
    """The table ``docs/bench/report-browser.md`` holds: a line per page and way."""
    print(f"{'page':<36} {'file://':<8} {'http':<8} screenshot")
    for page, row in found["pages"].items():
        ok = ["ok" if not row[w] else f"{len(row[w])} bad" for w in ("file", "http")]
        print(f"{page:<36} {ok[0]:<8} {ok[1]:<8} {row['screenshot']}")
    print(f"site: {len(found['site'])} broken link(s) or missing page(s); Chromium "
          f"{found.get('browser', '?')}; {len(problems(found))} problem(s)")  # fmt: skip


PAGE = """# The report in a browser

<!-- generated by benchmarks/report_in_browser.py --record from docs/bench/report-browser.json -->

`xamm report` of [the acceptance guide's home](../guide/acceptance.md#4-see-it) (dane accepted
against quartz and updated, quartz's bad update, a LULESH profile predicted), opened page by page
in headless Chromium from the filesystem (`file://`) and from `python -m http.server`. A page is
`ok` when every image loaded, nothing is wider than the window (a wide table scrolls in its own
box) and, served, every link is answered; the site line counts links and images naming no file of
the site, and pages `report.json` lists that no link from the index reaches. The screenshots go to
`out/report-screens/`.

```text
{table}
```

Rerun: `python benchmarks/report_in_browser.py --record` (Debian's `chromium` and
`chromium-driver`, and `selenium` from the bench extra).
"""


def page(found: dict) -> str:
    """``docs/bench/report-browser.md`` from the findings."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report(found)
    return PAGE.format(table=out.getvalue().strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, help="a report already written (default: build one)")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=REPO / "out" / "report-screens")
    ap.add_argument("--record", action="store_true",
                    help="write docs/bench/report-browser.json and its page")  # fmt: skip
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or build_guide_site(args.data.resolve(), Path(tmp))
        found = look(site, args.out)
    (args.out / "findings.json").write_text(json.dumps(found, indent=1))
    if args.record:
        bench = REPO / "docs" / "bench"
        (bench / "report-browser.json").write_text(json.dumps(found, indent=1) + "\n")
        (bench / "report-browser.md").write_text(page(found))
    report(found)
    for p in problems(found):
        print(p)
    print(f"screenshots in {args.out}")
    return 1 if problems(found) else 0


if __name__ == "__main__":
    sys.exit(main())
