#!/usr/bin/env python3
"""Open every page of the built book in headless Chromium and fail on what a reader would see as broken.

    python .ci/browser_check.py [book/_build/html] [--chromium /usr/bin/chromium] [--chromedriver /usr/bin/chromedriver]

Serves the HTML folder on 127.0.0.1 (a random free port), drives Debian's Chromium through chromedriver
(selenium; no browser download), and for every ``*.html`` page (``_static``/``_sources``/``_images`` excepted)
checks:

- every image loaded (``complete`` and ``naturalWidth > 0``);
- no unresolved references or markup: ``??``, unresolved cross-reference spans (``.xref`` outside a link),
  docutils error nodes (``.problematic``, ``.system-message``), raw MyST roles/directives (``{doc}`...``,
  ````{...}``), missing glue;
- every table has at least one body row with text;
- every local link points to a file that exists;
- no console error from the page's own (same-origin) resources;
- clean cells: no stderr output, no warning or traceback text, no absolute path (``/home/...``, ``/work/...``,
  ``C:\\...``) and no raw dict / list-of-dicts / object repr in any rendered notebook cell;
- no horizontal overflow at 1280 px: the main column does not scroll sideways, and no visible code block or
  cell output inside it hides its lines behind a horizontal scrollbar (the printed-table CSVs of the reference
  page, ``table.reference-table``, scroll sideways on purpose).

``--screenshot DIR`` also saves a 1280-px-wide full-page PNG of ``claims.html`` and of one section page
(``executed/p1_localization.html``; ``--shot-pages`` names others) into DIR, and prints each page's outline down
to its first visible code: headings, verdict boxes (admonitions), tables, figures, folded code cells, in order.

Exit status 1 and a list of problems per page if anything fails.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

SKIP_DIRS = {"_static", "_sources", "_images", ".doctrees"}
CHROME_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,1024"]
TEXT_MARKERS = [
    (re.compile(r"\?\?"), "unresolved reference text '??'"),
    (re.compile(r"\{(doc|ref|numref|glue|glue:text|glue:figure|glue:md|eq|term|download)\}`"), "raw MyST role"),
    (re.compile(r"```\s*\{"), "raw MyST directive"),
    (re.compile(r"(?i)missing[- ]reference|undefined label|unknown (directive|interpreted text role)"),
     "missing-reference marker"),
    (re.compile(r"(?i)glue key .* not found|could not find glue|MystNbGlue|<glue"), "missing glue output"),
]

PAGE_JS = r"""
const out = {images: [], xrefs: [], errors: [], tables: [], links: []};
for (const img of Array.from(document.images)) {
  if (!img.complete || img.naturalWidth === 0) out.images.push(img.currentSrc || img.src || img.outerHTML.slice(0, 120));
}
for (const el of Array.from(document.querySelectorAll('.xref'))) {
  if (!el.closest('a')) out.xrefs.push(el.textContent.trim().slice(0, 80));
}
for (const el of Array.from(document.querySelectorAll('.problematic, .system-message, .system-messages'))) {
  out.errors.push(el.textContent.trim().slice(0, 120));
}
const tables = Array.from(document.querySelectorAll('article table, main table, .bd-article table'));
tables.forEach((t, i) => {
  const rows = Array.from(t.querySelectorAll('tbody tr')).filter(r => r.textContent.trim().length > 0);
  if (rows.length === 0) {
    const cap = t.querySelector('caption');
    out.tables.push('table #' + (i + 1) + (cap ? ' (' + cap.textContent.trim().slice(0, 60) + ')' : ''));
  }
});
for (const a of Array.from(document.querySelectorAll('a[href]'))) out.links.push(a.href);
out.cells = [];
for (const cell of Array.from(document.querySelectorAll('div.cell'))) {
  const outputs = Array.from(cell.querySelectorAll('.cell_output'));
  out.cells.push({
    stderr: cell.querySelectorAll('.cell_output .stderr, .cell_output .output.stderr').length,
    text: cell.textContent,
    output: outputs.map(o => o.textContent).join('\n'),
    plain: Array.from(cell.querySelectorAll('.cell_output .output.text_plain, .cell_output .output.stream, '
                                             + '.cell_output pre')).map(o => o.textContent).join('\n'),
  });
}
out.overflow = [];
const main = document.querySelector('article.bd-article') || document.querySelector('main');
if (main) {
  if (main.scrollWidth > main.clientWidth + 1) {
    out.overflow.push('main column ' + main.scrollWidth + ' px wide in a ' + main.clientWidth + ' px column');
  }
  for (const el of Array.from(main.querySelectorAll('pre, .cell_output, div.output, table, .pst-scrollable-table-container'))) {
    if (el.offsetParent === null || el.closest('table.reference-table') || el.querySelector('table.reference-table')) continue;
    if (el.scrollWidth > el.clientWidth + 2) {
      out.overflow.push(el.tagName.toLowerCase() + '.' + (el.className || '').toString().split(' ')[0] + ': '
                        + el.scrollWidth + ' px of content behind a horizontal scrollbar ('
                        + el.clientWidth + ' px shown): ' + el.textContent.trim().slice(0, 60));
    }
  }
}
out.text = document.body.innerText;
out.title = document.title;
return out;
"""


CELL_MARKERS = [
    (re.compile(r"\b[A-Z]\w*(Warning|Error)\b|Traceback \(most recent call last\)"), "warning or error text"),
    (re.compile(r"(?<![\w.:/])(/(home|work|tmp|usr|opt|root|var|mnt|Users|private|srv)/[\w.-]+|[A-Za-z]:\\\w)"),
     "absolute path"),
]
RAW_MARKERS = [
    (re.compile(r"\{\s*'[^'\n]{1,60}'\s*:|\{\s*\"[^\"\n]{1,60}\"\s*:"), "raw dict"),
    (re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>"), "object repr"),
    (re.compile(r"\b[A-Z][A-Za-z]+\((\w+=[^,()]+, ){2,}"), "dataclass repr"),
]


def cell_problems(cells: list[dict]) -> list[str]:
    """Problems a reader sees in rendered notebook cells (see the module docstring)."""
    problems: list[str] = []
    for i, cell in enumerate(cells, 1):
        if cell.get("stderr"):
            problems.append(f"cell {i}: stderr output")
        for pattern, what in CELL_MARKERS:
            m = pattern.search(cell.get("output") or "")
            if m:
                problems.append(f"cell {i}: {what} in the output: {_around(cell['output'], m)!r}")
        m = CELL_MARKERS[1][0].search(cell.get("text") or "")
        if m:
            problems.append(f"cell {i}: absolute path: {_around(cell['text'], m)!r}")
        for pattern, what in RAW_MARKERS:
            m = pattern.search(cell.get("plain") or "")
            if m:
                problems.append(f"cell {i}: {what} in the output: {_around(cell['plain'], m)!r}")
    return problems


def _around(text: str, m: re.Match) -> str:
    return text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D401 - silence the access log
        pass


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html") if not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS))


def make_driver(chromium: str, chromedriver: str, profile_dir: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in CHROME_FLAGS + [f"--user-data-dir={profile_dir}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)
    driver.set_page_load_timeout(180)  # a loaded 2-core machine needs > 60 s for the reference tables
    return driver


def check_page(driver, base: str, root: Path, page: Path) -> list[str]:
    rel = page.relative_to(root).as_posix()
    url = f"{base}/{rel}"
    driver.get(url)
    deadline = time.time() + 20
    while time.time() < deadline:  # wait for the document and its images
        done = driver.execute_script(
            "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete);")
        if done:
            break
        time.sleep(0.1)
    info = driver.execute_script(PAGE_JS)
    problems: list[str] = []
    problems += [f"broken image: {src}" for src in info["images"]]
    problems += [f"unresolved cross-reference: {x!r}" for x in info["xrefs"]]
    problems += [f"docutils error in page: {x!r}" for x in info["errors"]]
    problems += [f"empty table: {t}" for t in info["tables"]]
    text = info["text"] or ""
    for pattern, what in TEXT_MARKERS:
        m = pattern.search(text)
        if m:
            s = max(0, m.start() - 40)
            problems.append(f"{what}: ...{text[s:m.end() + 40]!r}...")
    problems += cell_problems(info.get("cells") or [])
    problems += [f"horizontal overflow at 1280 px: {x}" for x in info.get("overflow") or []]
    if not (info["title"] or "").strip():
        problems.append("page has no title")
    for href in info["links"]:
        u = urlparse(href)
        if not href.startswith(base) or u.scheme not in ("http", "https"):
            continue
        target = root / unquote(u.path).lstrip("/")
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"broken local link: {u.path}")
    for entry in driver.get_log("browser"):
        msg = entry.get("message", "")
        if "/favicon.ico" in msg:  # requested by the browser itself, not by the page
            continue
        if entry.get("level") == "SEVERE" and base in msg:
            problems.append(f"console error: {msg[:200]}")
    return sorted(set(problems))


OUTLINE_JS = r"""
const main = document.querySelector('article.bd-article') || document.querySelector('main');
const out = [];
if (!main) return out;
const short = t => (t || '').replace(/\s+/g, ' ').trim().slice(0, 110);
const seen = new Set();
for (const el of Array.from(main.querySelectorAll('h1, h2, h3, h4, .admonition, table, img, div.cell, details, '
                                                  + 'div.highlight, p'))) {
  if (Array.from(seen).some(s => s.contains(el))) continue;  // parts of something already listed
  if (el.offsetParent === null && !el.closest('details')) continue;  // hidden
  const tag = el.tagName.toLowerCase();
  if (tag === 'details') {  // a closed dropdown: the reader sees its summary line only
    const summary = el.querySelector('summary');
    out.push('dropdown  ' + short(summary ? summary.textContent : ''));
    seen.add(el); continue;
  }
  if (tag === 'div' && el.classList.contains('highlight')) {  // a code block outside a notebook cell
    out.push('CODE BLOCK  ' + short(el.textContent).slice(0, 60));
    break;
  }
  if (/^h[1-4]$/.test(tag)) { out.push(tag + '  ' + short(el.textContent).replace(/#$/, '')); continue; }
  if (el.classList.contains('admonition')) {
    const title = el.querySelector('.admonition-title');
    const body = short(el.textContent.replace(title ? title.textContent : '', ''));
    out.push('box [' + Array.from(el.classList).filter(c => c !== 'admonition').join(' ') + ']  '
             + short(title ? title.textContent : '') + ' | ' + body);
    seen.add(el); continue;
  }
  if (tag === 'div' && el.classList.contains('cell')) {
    const input = el.querySelector('.cell_input');
    const folded = !input || input.closest('details') !== null || input.offsetParent === null;
    const outputs = [];
    if (el.querySelector('.cell_output table')) outputs.push('table');
    if (el.querySelector('.cell_output img')) outputs.push('figure');
    if (el.querySelector('.cell_output .admonition')) outputs.push('box');
    const text = el.querySelector('.cell_output .output.stream, .cell_output .text_plain');
    if (text && !outputs.length) outputs.push('text "' + short(text.textContent).slice(0, 60) + '"');
    if (!input) out.push('cell (code removed)  output: ' + (outputs.join(', ') || 'none'));
    else out.push((folded ? 'cell (code folded)' : 'CODE CELL (source shown)') + '  output: '
                  + (outputs.join(', ') || 'none'));
    for (const box of Array.from(el.querySelectorAll('.cell_output .admonition'))) {
      out.push('    box [' + Array.from(box.classList).filter(c => c !== 'admonition').join(' ') + ']  '
               + short(box.textContent));
    }
    seen.add(el);
    if (!folded) break;
    continue;
  }
  if (tag === 'table') {
    const head = Array.from(el.querySelectorAll('thead th')).map(th => short(th.textContent)).join(' | ');
    out.push('table (' + el.querySelectorAll('tbody tr').length + ' rows)  ' + head.slice(0, 100));
    seen.add(el); continue;
  }
  if (tag === 'img') { out.push('figure  ' + short(el.alt || el.src.split('/').pop())); continue; }
  if (tag === 'p' && short(el.textContent)) out.push('text  ' + short(el.textContent).slice(0, 90));
}
return out;
"""


def outline(driver, base: str, rel: str) -> list[str]:
    """What a reader meets on a page, in order, down to its first code cell whose source is shown."""
    driver.get(f"{base}/{rel}")
    time.sleep(0.5)
    return driver.execute_script(OUTLINE_JS)


def screenshot(driver, base: str, rel: str, folder: Path, width: int = 1280) -> Path:
    """A full-page PNG (up to 16000 px tall) of one page in a ``width``-px window (DevTools' capture beyond the
    viewport: no giant window, which a loaded machine cannot paint within chromedriver's 10-s screenshot limit)."""
    import base64

    folder.mkdir(parents=True, exist_ok=True)
    driver.set_window_size(width, 1024)
    driver.get(f"{base}/{rel}")
    time.sleep(1.0)
    for _ in range(50):  # let the theme's transitions (the sidebar sliding in) finish first
        if not driver.execute_script("return document.getAnimations().some(a => a.playState === 'running');"):
            break
        time.sleep(0.1)
    size = driver.execute_script("return [document.documentElement.clientWidth, "
                                 "Math.min(document.documentElement.scrollHeight, 16000)];")
    driver.command_executor.client_config.timeout = 600  # ~10 s per 1000 px on a loaded 2-core machine
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": int(size[0]), "height": int(size[1]), "scale": 1}})
    path = folder / (rel.replace("/", "_").replace(".html", "") + ".png")
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html", nargs="?", default="book/_build/html")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--chromedriver", default=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    ap.add_argument("--screenshot", "--shots", dest="shots", metavar="DIR",
                    help="save 1280-px full-page PNGs of the --shot-pages here and print their outlines")
    ap.add_argument("--shot-pages", nargs="*", default=["claims.html", "executed/p1_localization.html"],
                    metavar="PAGE", help="pages (relative to the HTML folder) to screenshot with --screenshot")
    ap.add_argument("--only", nargs="+", default=None, metavar="PAGE",
                    help="check only these pages (relative to the HTML folder); default: every page")
    args = ap.parse_args(argv)
    root = Path(args.html).resolve()
    if not (root / "index.html").exists():
        print(f"browser check: no book at {root} (build it first: repro book)", file=sys.stderr)
        return 2
    for exe in (args.chromium, args.chromedriver):
        if not shutil.which(exe):
            print(f"browser check: {exe} not found (apt-get install -y chromium chromium-driver)", file=sys.stderr)
            return 2
    all_pages = pages(root) if not args.only else [root / rel for rel in args.only]
    absent = [p.relative_to(root).as_posix() for p in all_pages if not p.exists()]
    if absent:
        print(f"browser check: no such page(s) {absent} in {root}", file=sys.stderr)
        return 2
    httpd, base = serve(root)
    profile_dir = tempfile.mkdtemp(prefix="repro-chromium-")
    driver = make_driver(args.chromium, args.chromedriver, profile_dir)
    failed = 0
    t0 = time.time()
    try:
        for page in all_pages:
            problems = check_page(driver, base, root, page)
            rel = page.relative_to(root).as_posix()
            if problems:
                failed += 1
                print(f"FAIL {rel}")
                for p in problems:
                    print(f"     - {p}")
            else:
                print(f"ok   {rel}")
        if args.shots:
            for rel in args.shot_pages:
                if not (root / rel).exists():
                    print(f"screenshot {rel}: no such page in {root}")
                    failed += 1
                    continue
                print(f"screenshot {rel} -> {screenshot(driver, base, rel, Path(args.shots))}")
                print(f"  {rel} from the top down to the first code shown:")
                for line in outline(driver, base, rel):
                    print(f"    {line}")
    finally:
        driver.quit()
        httpd.shutdown()
        shutil.rmtree(profile_dir, ignore_errors=True)
    verdict = f"{failed} of {len(all_pages)} pages FAILED" if failed else f"all {len(all_pages)} pages ok"
    print(f"browser check: {verdict} ({time.time() - t0:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
