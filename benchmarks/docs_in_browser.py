"""The documentation site as a reader sees it: every page of the nav rendered by headless Chromium,
a screenshot of each, and the checks a reader's eye makes.

For each page of ``mkdocs.yml``'s nav (built with ``mkdocs build --strict`` and served on
127.0.0.1):

* no paragraph shows Markdown list markers as text (``* item`` run into one line: a list that
  needed a blank line before it);
* no code block hides text (the site wraps long lines: ``docs/stylesheets/extra.css``), and a table
  wider than the page scrolls;
* the header's repository link is the project's own (``pyproject.toml``'s ``Repository``).

The site-wide checks: every page under ``docs/`` is in the nav or listed in ``not_in_nav``.

Needs Chromium and its driver (Debian: ``apt-get install chromium chromium-driver``) and
``selenium`` (the bench extra). Run: ``python benchmarks/docs_in_browser.py [--out DIR]``;
screenshots go to ``DIR`` (default ``out/docs-screens``), the findings to stdout, exit 1 when a
check fails.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import http.server
import subprocess
import sys
import tempfile
import threading
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
# what a reader would see as broken, measured in the page (selenium runs it in each)
PAGE_CHECKS = """
const out = {inline_lists: [], cut: [], repo: null};
for (const p of document.querySelectorAll('article p')) {
  const t = p.innerText;
  if (/(^|\\n)\\s*[*-] \\S/.test(t) || /\\S \\* \\*\\*/.test(t) || /: \\* \\S/.test(t)) {
    out.inline_lists.push(t.slice(0, 120));
  }
}
// a code block shows all of its text (the site wraps long lines); a wide table may scroll
for (const el of document.querySelectorAll('article pre')) {
  const code = el.querySelector('code') || el;
  if (code.scrollWidth > code.clientWidth + 1) out.cut.push('code: ' + el.innerText.slice(0, 80));
}
for (const el of document.querySelectorAll('article table')) {
  let scrolls = false;  // the table itself (material) or a wrapper scrolls sideways
  for (let b = el; b && b.tagName !== 'ARTICLE'; b = b.parentElement) {
    if (['auto', 'scroll'].includes(getComputedStyle(b).overflowX)) scrolls = true;
  }
  const box = el.closest('article');
  if (el.getBoundingClientRect().right > box.getBoundingClientRect().right + 1 && !scrolls) {
    out.cut.push('table: ' + el.innerText.slice(0, 80));
  }
}
const a = document.querySelector('a.md-source');
out.repo = a ? a.href : null;
return out;
"""


def nav_pages(config: dict) -> list[str]:
    """The nav's Markdown pages, in order."""
    out: list[str] = []

    def walk(items) -> None:
        for item in items:
            if isinstance(item, str):
                out.append(item)
            else:
                for v in item.values():
                    walk(v) if isinstance(v, list) else out.append(v)

    walk(config["nav"])
    return out


def unlisted(config: dict) -> list[str]:
    """Pages under ``docs/`` in neither the nav nor ``not_in_nav``."""
    docs = REPO / config.get("docs_dir", "docs")
    listed = set(nav_pages(config))
    patterns = [p.strip() for p in (config.get("not_in_nav") or "").splitlines() if p.strip()]
    missing = []
    for md in sorted(docs.rglob("*.md")):
        rel = md.relative_to(docs).as_posix()
        if rel in listed:
            continue
        if any(rel.startswith(p.strip("/") + "/") or fnmatch.fnmatch("/" + rel, p)
               or "/" + rel == p for p in patterns):  # fmt: skip
            continue
        missing.append(rel)
    return missing


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def browser():
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
    # without these, Chromium keeps calling Google's hosts, which a closed network refuses
    flags += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
    for flag in [*flags, "--window-size=1280,1600"]:
        opts.add_argument(flag)
    return webdriver.Chrome(options=opts, service=webdriver.ChromeService(DRIVER))


def check_site(out_dir: Path) -> list[str]:
    """Build, serve and look at every page; the problems found (empty: all good)."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text().replace("!!python", "#"))
    repo = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    problems = [f"docs/{p}: not in the nav" for p in unlisted(config)]
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
            cwd=REPO, check=True, capture_output=True,
        )  # fmt: skip
        httpd, base = serve(site)
        driver = browser()
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            for page in nav_pages(config):
                url = base + ("" if page == "index.md" else page.removesuffix(".md") + "/")
                driver.get(url)
                found = driver.execute_script(PAGE_CHECKS)
                shot = out_dir / (page.removesuffix(".md").replace("/", "_") + ".png")
                driver.save_screenshot(str(shot))
                problems += [f"{page}: list shown as text: {t!r}" for t in found["inline_lists"]]
                problems += [f"{page}: cut (wider than its box): {t!r}" for t in found["cut"]]
                if found["repo"] and found["repo"].rstrip("/") != repo.rstrip("/"):
                    problems.append(f"{page}: header links {found['repo']}, not {repo}")
                print(f"{page}: {shot.name}", file=sys.stderr)
        finally:
            driver.quit()
            httpd.shutdown()
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "out" / "docs-screens")
    args = ap.parse_args(argv)
    problems = check_site(args.out)
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s); screenshots in {args.out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
