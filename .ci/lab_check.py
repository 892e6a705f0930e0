#!/usr/bin/env python3
"""JupyterLab as a user meets it, in headless Chromium: open a notebook with a double click, run it, save it.

    python .ci/lab_check.py [--notebook p2_sensitivity] [--timeout 600] [--require-store] [--keep DIR]
                            [--chromium /usr/bin/chromium] [--chromedriver /usr/bin/chromedriver]

Starts ``jupyter lab`` the way ``make lab`` does (``JUPYTER_CONFIG_PATH=.jupyter``, root ``notebooks/``; here also
headless, on 127.0.0.1, a free port, a fixed token, empty user settings and workspace folders of its own so that
nothing of the user's JupyterLab leaks in), drives Debian's Chromium through chromedriver (selenium, as
``.ci/browser_check.py`` does), and checks, in order:

1. a double click on ``p2_sensitivity.md`` in the file browser opens a notebook (the repository's labconfig makes
   the Jupytext Notebook the default viewer for Markdown), not the text editor: a notebook panel with cells and a
   ``python3`` kernel session;
2. the whole notebook runs (Run > Run All Cells) on the ``smoke`` profile: every code cell gets an execution
   count and no cell shows an error or stderr text (JupyterLab renders both as the same red block);
3. the run reuses the artifacts the smoke book left in the store (``$REPRO_ARTIFACTS``, else ``artifacts/``):
   no file of ``<store>/smoke`` is added or rewritten by the run (checked when that store holds artifacts; on an
   empty store the run computes them and the check says so, or fails with ``--require-store``, as in CI);
4. saving (Ctrl+S) after the run writes the file (its modification time changes) and leaves it byte for byte as
   it was before, and as committed when it was clean (``git diff --exit-code``), with no new untracked file in
   ``notebooks/``: a page's cache key holds the notebook's whole text (``repro.runner.execute.cache_key``), so
   there is nothing a save may change.

How the run picks the smoke profile.  The notebook reads its profile only from its parameters cell
(``profile: str = "cpu"``; papermill overrides it for ``repro run`` / ``repro book``); the package offers no
environment variable or other way to change it without editing the file, and the committed cpu profile would
train for minutes.  So the check does what a user would: it edits that line in the browser to
``profile: str = "smoke"`` (keyboard, in the cell's editor), runs all cells, then undoes the edit (Ctrl+Z in the
cell until it reads as committed) and saves.  The saved file must then equal the committed one: the run's outputs,
execution counts and kernel metadata must not reach it (``notebooks/jupytext.toml``).

The check leaves the checkout as it found it: the run writes ``results/smoke/<notebook>.json`` as any run of the
notebook does, and the check puts back the file that was there (or removes the new one), so that the next
``repro book --profile smoke`` still finds the book's own results; it removes the checkpoint copy the save made in
``notebooks/.ipynb_checkpoints/`` (git ignores it) and, when a save did change the notebook, writes its earlier
text back after reporting the change.  The server and its kernel are always stopped (SIGTERM included).

Prints what it checked with timings; exit status 1 with a one-line reason on any failure (2: nothing to run
with).  ``--keep DIR``: on failure, a screenshot of the browser and the server's log go there.  About 50 s on 2
cores with the smoke book's store in place (a 30-s run of the notebook; JupyterLab's start and load 15 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "repro-lab-check"
PROFILE = "smoke"
CHROME_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1400,1000"]
#: the parameters-cell line the check edits, and what it makes of it
PARAM_LINE = 'profile: str = "cpu"'
PARAM_VALUE = '"cpu"'


class CheckFailed(Exception):
    """One line: why the check failed."""


def _stop(signum, frame):  # a CI timeout's SIGTERM: still stop the server (the finally blocks run)
    raise SystemExit(f"lab check: stopped by signal {signum}")


# --------------------------------------------------------------------------------------------------------
# the server
# --------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(tmp: Path, port: int, log_path: Path) -> subprocess.Popen:
    """``jupyter lab`` as ``make lab`` starts it, headless; in its own process group (its kernels too)."""
    extra = os.environ.get("JUPYTER_CONFIG_PATH")
    env = {**os.environ,
           "JUPYTER_CONFIG_PATH": str(ROOT / ".jupyter") + (f":{extra}" if extra else ""),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime")}
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={ROOT / 'notebooks'}", "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI runs as root
        cmd.append("--allow-root")
    return subprocess.Popen(cmd, env=env, cwd=str(ROOT), stdout=open(log_path, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def api(base: str, path: str, timeout: float = 5.0):
    req = urllib.request.Request(f"{base}{path}", headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read().decode())


def wait_for_server(server: subprocess.Popen, base: str, log_path: Path, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if server.poll() is not None:
            raise CheckFailed(f"jupyter lab exited with status {server.returncode} before answering: "
                              f"{_last_line(log_path)}")
        try:
            api(base, "/api/status", timeout=2)
            return
        except Exception:  # not up yet
            time.sleep(0.5)
    raise CheckFailed(f"jupyter lab did not answer on {base} within {timeout:.0f} s: {_last_line(log_path)}")


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux /proc; elsewhere none): its kernels run in sessions of their own."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def stop_lab(server: subprocess.Popen) -> None:
    """SIGTERM (the server shuts its kernels down), then SIGKILL to its process group and to any kernel left."""
    below = descendants(server.pid)
    if server.poll() is None:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    for kill in [lambda: os.killpg(server.pid, signal.SIGKILL)] + [
            lambda p=p: os.kill(p, signal.SIGKILL) for p in below]:
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass
    server.wait()


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no server log)"
    return lines[-1][:300] if lines else "(empty server log)"


# --------------------------------------------------------------------------------------------------------
# the browser
# --------------------------------------------------------------------------------------------------------
def make_driver(chromium: str, chromedriver: str, profile_dir: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in CHROME_FLAGS + [f"--user-data-dir={profile_dir}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)
    driver.set_page_load_timeout(180)
    return driver


def wait_until(what: str, fn, timeout: float, interval: float = 0.25):
    """``fn()`` until it returns something truthy; CheckFailed naming ``what`` after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.time() > deadline:
            raise CheckFailed(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


NOTEBOOK_STATE_JS = r"""
const name = arguments[0];
const tab = Array.from(document.querySelectorAll('#jp-main-dock-panel .lm-TabBar-tab'))
  .find(t => (t.querySelector('.lm-TabBar-tabLabel') || {}).textContent === name);
const panel = document.querySelector('#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)');
const editor = document.querySelector('#jp-main-dock-panel .jp-FileEditor:not(.lm-mod-hidden)');
const out = {tab: !!tab, current: !!(tab && tab.classList.contains('lm-mod-current')),
             dirty: !!(tab && tab.classList.contains('jp-mod-dirty')), notebook: !!panel, editor: !!editor,
             cells: 0, code: 0, prompts: [], stderr: [], kernel: ''};
if (!panel) return out;
const k = panel.querySelector('.jp-Toolbar-kernelName');
out.kernel = k ? k.textContent.trim() : '';
out.cells = panel.querySelectorAll('.jp-Cell').length;
const code = Array.from(panel.querySelectorAll('.jp-CodeCell'));
out.code = code.length;
code.forEach((cell, i) => {
  const p = cell.querySelector('.jp-InputPrompt');
  out.prompts.push(p ? p.textContent.trim() : '');
  // JupyterLab renders a traceback (an "error" output) and stderr text alike, as application/vnd.jupyter.stderr
  for (const e of cell.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')) {
    out.stderr.push([i + 1, e.textContent.trim()]);
  }
});
return out;
"""

#: the notebook shown in the main area, and its code cells
NOTEBOOK_PANEL = "#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)"
CODE_CELLS = f"{NOTEBOOK_PANEL} .jp-CodeCell"
CELL_LINES_JS = r"""
const cell = Array.from(document.querySelectorAll(arguments[1]))[arguments[0]];
return cell ? Array.from(cell.querySelectorAll('.jp-InputArea-editor .cm-line')).map(l => l.textContent) : null;
"""


def notebook_state(driver, name: str) -> dict:
    return driver.execute_script(NOTEBOOK_STATE_JS, name)


def cell_lines(driver, index: int) -> list[str] | None:
    return driver.execute_script(CELL_LINES_JS, index, CODE_CELLS)


def code_cell(driver, index: int):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, CODE_CELLS)[index]


EDITING_JS = r"""
const cell = Array.from(document.querySelectorAll(arguments[1]))[arguments[0]];
const nb = cell && cell.closest('.jp-Notebook');
const content = cell && cell.querySelector('.jp-InputArea-editor .cm-content');
return !!(nb && nb.classList.contains('jp-mod-editMode') && content && content.contains(document.activeElement));
"""


CURSOR_JS = r"""
const sel = document.getSelection();
if (!sel || !sel.focusNode) return null;
const el = sel.focusNode.nodeType === 1 ? sel.focusNode : sel.focusNode.parentElement;
const line = el && el.closest('.cm-line');
if (!line) return null;
const lines = Array.from(line.parentElement.children).filter(e => e.classList.contains('cm-line'));
const r = document.createRange();
r.setStart(line, 0);
r.setEnd(sel.focusNode, sel.focusOffset);
return [lines.indexOf(line), r.toString().length, sel.toString()];
"""


def cursor(driver) -> tuple[int, int, str] | None:
    """The focused editor's cursor as the browser's selection shows it: ``(row, column, selected text)``."""
    pos = driver.execute_script(CURSOR_JS)
    return tuple(pos) if pos else None


def edit_cell(driver, index: int) -> None:
    """Click into code cell ``index``'s editor, as a user does, until the notebook is in edit mode with the cursor
    in that cell (keys typed in command mode are commands: ``m`` makes the cell Markdown)."""
    from selenium.webdriver.common.by import By

    cell = code_cell(driver, index)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", cell)

    def editing():
        if not driver.execute_script(EDITING_JS, index, CODE_CELLS):
            cell.find_element(By.CSS_SELECTOR, ".jp-InputArea-editor .cm-content").click()
            time.sleep(0.3)
        return driver.execute_script(EDITING_JS, index, CODE_CELLS)

    wait_until(f"code cell {index + 1}'s editor focused (edit mode) after a click", editing, 30)


def command_mode(driver) -> None:
    """Escape, until the notebook is in command mode."""
    from selenium.webdriver.common.keys import Keys

    press(driver, Keys.ESCAPE)
    wait_until("command mode after Escape", lambda: driver.execute_script(
        "return !!document.querySelector(arguments[0]);", f"{NOTEBOOK_PANEL} .jp-Notebook.jp-mod-commandMode"), 10)


def click_menu(driver, menu: str, item: str) -> None:
    """Main menu ``menu`` > ``item``, clicked as a user does."""
    from selenium.webdriver.common.by import By

    def find(selector: str, label: str):
        for el in driver.find_elements(By.CSS_SELECTOR, selector):
            if el.text.strip() == label and el.is_displayed():
                return el
        return None

    wait_until(f"the {menu!r} menu", lambda: find("#jp-menu-panel .lm-MenuBar-itemLabel", menu), 30).click()
    wait_until(f"the {menu} > {item!r} menu item", lambda: find(".lm-Menu .lm-Menu-itemLabel", item), 30).click()


def press(driver, *keys) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def chord(driver, modifier, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).key_down(modifier).send_keys(key).key_up(modifier).perform()


# --------------------------------------------------------------------------------------------------------
# the checkout
# --------------------------------------------------------------------------------------------------------
def store_snapshot(store: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (size, mtime_ns)}`` of the store's artifact files, ``<kind>/<key>.*``: its hidden
    housekeeping (``.locks/``, where a load takes a lock; the ``.keys-v<N>`` marker the first Workbench on a store
    writes; ``.quarantine/``) left out."""
    if not store.is_dir():
        return {}
    out = {}
    for p in sorted(store.rglob("*")):
        rel = p.relative_to(store)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = (p.stat().st_size, p.stat().st_mtime_ns)
    return out


def git(*args: str) -> subprocess.CompletedProcess:
    """``git *args`` in the checkout (no git, or not a clone: status 127 / 128, nothing on stdout)."""
    try:
        return subprocess.run(["git", *args], cwd=str(ROOT), text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    except FileNotFoundError:
        return subprocess.CompletedProcess(["git", *args], 127, "", "git not found")


def artifacts_root() -> Path:
    """Where the notebook's Workbench finds the store: ``$REPRO_ARTIFACTS`` (relative: to the repository root),
    else ``artifacts/`` (repro.paths.artifacts_dir, restated: this script does not import the package)."""
    p = Path(os.environ.get("REPRO_ARTIFACTS", "artifacts")).expanduser()
    return p if p.is_absolute() else ROOT / p


# --------------------------------------------------------------------------------------------------------
# the check
# --------------------------------------------------------------------------------------------------------
def run_check(driver, base: str, notebook: str, timeout: float, log, require_store: bool = False) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    name = f"{notebook}.md"
    path = ROOT / "notebooks" / name
    before = path.read_bytes()
    clean = git("diff", "--quiet", "--", str(path)).returncode == 0
    untracked = git("status", "--porcelain", "--untracked-files=all", "--", "notebooks").stdout
    store = artifacts_root() / PROFILE
    snap = store_snapshot(store)
    if require_store and not snap:
        raise CheckFailed(f"no {PROFILE} artifacts in {store} to reuse (--require-store: build the smoke book first, "
                          "repro book --profile smoke)")
    t = time.time()

    # 1. a double click in the file browser opens a notebook
    driver.get(f"{base}/lab?reset&token={TOKEN}")

    def item():
        for el in driver.find_elements(By.CSS_SELECTOR, ".jp-DirListing-item .jp-DirListing-itemText"):
            if el.text.strip() == name:
                return el
        return None

    el = wait_until(f"{name} in JupyterLab's file browser", item, 120)
    log(f"JupyterLab loaded, {name} listed in the file browser ({time.time() - t:.1f} s)")
    t = time.time()
    ActionChains(driver).double_click(el).perform()
    st = wait_until(f"a tab for {name} after a double click",
                    lambda: (s := notebook_state(driver, name))["tab"] and (s["notebook"] or s["editor"]) and s, 60)
    if not st["notebook"]:
        raise CheckFailed(f"a double click opened {name} in the text editor, not as a notebook "
                          "(is JUPYTER_CONFIG_PATH=.jupyter's labconfig read? is jupytext's lab extension enabled?)")
    st = wait_until(f"the notebook's cells for {name}", lambda: (s := notebook_state(driver, name))["code"] and s, 60)

    def session():
        try:
            return next((s for s in api(base, "/api/sessions") if s.get("path") == name), None)
        except Exception:
            return None

    sess = wait_until(f"a kernel session for {name}", session, 60)
    kernel = sess["kernel"]["name"]
    if kernel != "python3":
        raise CheckFailed(f"{name} started kernel {kernel!r}, not python3 (the kernelspec its header names)")
    wait_until(f"the {kernel} kernel idle after starting",
               lambda: (s := session()) and s["kernel"].get("execution_state") == "idle", 120)
    st = notebook_state(driver, name)
    log(f"double click on {name}: a notebook opened ({st['cells']} cells, {st['code']} code cells), "
        f"kernel {kernel} ({st['kernel'] or '?'}) idle ({time.time() - t:.1f} s)")

    # 2. the parameters cell on the smoke profile, edited as a user edits it
    t = time.time()
    index = next((i for i in range(st["code"]) if any(PARAM_LINE in ln for ln in cell_lines(driver, i) or [])), None)
    if index is None:
        raise CheckFailed(f"no code cell of {name} holds {PARAM_LINE!r} (the parameters cell changed? "
                          "update PARAM_LINE in .ci/lab_check.py)")
    original = cell_lines(driver, index)
    row = next(r for r, ln in enumerate(original) if PARAM_LINE in ln)
    col = original[row].index(PARAM_LINE) + PARAM_LINE.index(PARAM_VALUE) + 1  # inside the quotes
    edit_cell(driver, index)
    # keys as a user presses them, to the cursor inside the quotes; the browser's selection says where it landed
    # (on a slow machine a key can land before the editor settles: then the keys are pressed again, at most 3 times)
    for attempt in range(1, 4):
        chord(driver, Keys.CONTROL, Keys.HOME)  # the cell's first character, then down, Home and right to "cpu"
        press(driver, *([Keys.DOWN] * row), Keys.HOME, *([Keys.RIGHT] * col))
        try:
            wait_until(f"the cursor at line {row + 1}, column {col + 1}",
                       lambda: (cursor(driver) or (None, None))[:2] == (row, col), 3)
            break
        except CheckFailed:
            log(f"attempt {attempt}: the cursor landed at {cursor(driver)} (row, column, selection), "
                f"not ({row}, {col}): pressing the keys again")
            edit_cell(driver, index)
    else:
        raise CheckFailed(f"the cursor never reached line {row + 1}, column {col + 1} of the parameters cell")
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(*([Keys.RIGHT] * (len(PARAM_VALUE) - 2))) \
        .key_up(Keys.SHIFT).perform()
    wait_until(f"{PARAM_VALUE[1:-1]!r} selected", lambda: (cursor(driver) or ("", "", ""))[2] == PARAM_VALUE[1:-1], 5)
    press(driver, PROFILE)
    expected = original[row].replace(PARAM_LINE, PARAM_LINE.replace(PARAM_VALUE, f'"{PROFILE}"'))
    try:
        wait_until("the edited line", lambda: (cell_lines(driver, index) or [""] * (row + 1))[row] == expected, 10)
    except CheckFailed:
        now = cell_lines(driver, index)
        raise CheckFailed(f"typing in the parameters cell gave line {row + 1} "
                          f"{(now[row] if now and len(now) > row else now)!r}, not {expected!r}") from None
    edited = cell_lines(driver, index)
    if edited[:row] + edited[row + 1:] != original[:row] + original[row + 1:]:
        raise CheckFailed(f"editing line {row + 1} of the parameters cell changed other lines: {edited!r}")
    command_mode(driver)
    log(f"parameters cell (code cell {index + 1}), line {row + 1} edited in the browser to "
        f"{expected.split('#')[0].strip()!r} ({time.time() - t:.1f} s)")

    # 3. Run > Run All Cells, until every code cell has run or one failed
    t = time.time()
    click_menu(driver, "Run", "Run All Cells")
    started = False
    deadline = time.time() + timeout
    while True:
        prompts = notebook_state(driver, name)["prompts"]
        busy = [i + 1 for i, p in enumerate(prompts) if "*" in p]
        ran = [bool(re.search(r"\[\d+\]", p)) for p in prompts]
        started = started or bool(busy) or any(ran)
        if all(ran) or (started and not busy):  # done, or stopped at a failing cell
            break
        if time.time() > deadline:
            raise CheckFailed(f"the run did not finish within {timeout:.0f} s: {sum(ran)} of {len(prompts)} code "
                              f"cells ran, cell {busy[0] if busy else '?'} running")
        time.sleep(0.5)
    st = notebook_state(driver, name)
    if st["stderr"]:  # an exception's traceback, or text on stderr: what a user sees as a red block
        i, text = st["stderr"][0]
        lines = [ln for ln in text.splitlines() if ln.strip()] or ["(empty)"]
        stopped = not all(ran) and i == max(k + 1 for k, r in enumerate(ran) if r)
        what = "raised" if stopped or "Traceback" in text else "wrote to stderr"
        raise CheckFailed(f"code cell {i} {what}: {(lines[-1] if what == 'raised' else lines[0]).strip()[:300]}")
    if not all(ran):
        raise CheckFailed(f"the run stopped before code cell {ran.index(False) + 1} of {len(ran)} (no error shown)")
    wait_until("the kernel idle after the run",
               lambda: (s := session()) and s["kernel"].get("execution_state") == "idle", 60)
    log(f"Run All Cells: all {len(ran)} code cells ran on the {PROFILE} profile, no error or stderr output "
        f"({time.time() - t:.1f} s)")

    # 4. the store: nothing added or rewritten
    after = store_snapshot(store)
    if snap:
        added = sorted(set(after) - set(snap))
        changed = sorted(k for k in snap if k in after and after[k] != snap[k])
        if added or changed:
            raise CheckFailed(f"the run did not reuse the {PROFILE} store {store}: {len(added)} file(s) added, "
                              f"{len(changed)} rewritten, e.g. {(added + changed)[0]}")
        log(f"artifact store {store}: the run reused its {len(snap)} files (none added or rewritten)")
    else:
        log(f"artifact store {store} was empty: reuse not checked (the run wrote {len(after)} files; "
            "build the smoke book first: repro book --profile smoke)")

    # 5. undo the edit, save, and the file is as it was
    t = time.time()
    edit_cell(driver, index)
    for presses in range(1, 11):
        chord(driver, Keys.CONTROL, "z")
        time.sleep(0.2)
        if cell_lines(driver, index) == original:
            break
    else:
        raise CheckFailed(f"10 x Ctrl+Z did not bring the parameters cell back to its committed text: "
                          f"{cell_lines(driver, index)[row]!r}")
    command_mode(driver)
    mtime = path.stat().st_mtime_ns
    chord(driver, Keys.CONTROL, "s")
    wait_until(f"{name} saved (Ctrl+S: its modification time changes, the tab is no longer dirty)",
               lambda: path.stat().st_mtime_ns != mtime and not notebook_state(driver, name)["dirty"], 60)
    time.sleep(0.5)  # a save in flight
    log(f"Ctrl+Z x{presses} restored the parameters cell; Ctrl+S saved {name} ({time.time() - t:.1f} s)")
    saved = path.read_bytes()
    if saved != before:
        old, now = before.decode(errors="replace").splitlines(), saved.decode(errors="replace").splitlines()
        first = next((f"line {i + 1} {a!r} became {b!r}" for i, (a, b) in enumerate(zip(old, now)) if a != b),
                     f"{len(old)} lines became {len(now)}")
        raise CheckFailed(f"saving after the run changed {name} (and so the page's cache key): {first}")
    if clean:
        d = git("diff", "--exit-code", "--stat", "--", "notebooks")
        if d.returncode:
            raise CheckFailed(f"git diff --exit-code -- notebooks/ after the save: {d.stdout.strip()}")
    new = sorted(set(git("status", "--porcelain", "--untracked-files=all", "--", "notebooks").stdout.splitlines())
                 - set(untracked.splitlines()))
    if new:
        raise CheckFailed(f"the session left new files in notebooks/: {new}")
    log(f"{name} after the save: byte for byte as before" + (" and as committed (git diff --exit-code clean)"
                                                             if clean else " (it had local edits)"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notebook", default="p2_sensitivity", help="the notebook to open, run and save")
    ap.add_argument("--timeout", type=float, default=600, help="seconds the notebook's run may take")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--chromedriver", default=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    ap.add_argument("--require-store", action="store_true",
                    help="fail when the smoke store holds no artifacts before the run (CI: the smoke book ran)")
    ap.add_argument("--keep", metavar="DIR", help="on failure, save a screenshot and the server log here")
    args = ap.parse_args(argv)
    for exe in (args.chromium, args.chromedriver):
        if not shutil.which(exe):
            print(f"lab check: {exe} not found (apt-get install -y chromium chromium-driver)", file=sys.stderr)
            return 2
    if not (ROOT / "notebooks" / f"{args.notebook}.md").is_file():
        print(f"lab check: no notebook notebooks/{args.notebook}.md", file=sys.stderr)
        return 2
    for mod in ("selenium", "jupyterlab", "jupytext"):
        try:
            __import__(mod)
        except ImportError:
            print(f"lab check: {mod} is not installed (pip install -e '.[lab]' selenium)", file=sys.stderr)
            return 2
    signal.signal(signal.SIGTERM, _stop)

    t0 = time.time()
    log = lambda msg: print(f"[{time.time() - t0:5.1f} s] {msg}", flush=True)  # noqa: E731
    tmp = Path(tempfile.mkdtemp(prefix="repro-lab-check-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    results = ROOT / "results" / PROFILE / f"{args.notebook}.json"
    kept = results.read_bytes() if results.is_file() else None
    kept_stat = results.stat() if results.is_file() else None
    made_dirs = [d for d in (results.parent, results.parent.parent) if not d.exists()]  # what a run creates
    checkpoints = ROOT / "notebooks" / ".ipynb_checkpoints"  # JupyterLab's copy at a save (git ignores it)
    checkpoint = checkpoints / f"{args.notebook}-checkpoint.md"
    made_checkpoint = [p for p in (checkpoint, checkpoints) if not p.exists()]
    notebook = ROOT / "notebooks" / f"{args.notebook}.md"
    committed = notebook.read_bytes()
    server = driver = None
    failure = None
    try:
        server = start_lab(tmp, port, tmp / "server.log")
        wait_for_server(server, base, tmp / "server.log")
        log(f"jupyter lab answering on {base} (JUPYTER_CONFIG_PATH=.jupyter, root notebooks/)")
        driver = make_driver(args.chromium, args.chromedriver, str(tmp / "chromium"))
        run_check(driver, base, args.notebook, args.timeout, log, args.require_store)
    except CheckFailed as e:
        failure = str(e)
    except Exception as e:  # selenium, the server: still a one-line reason
        failure = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    finally:
        if failure and args.keep and driver is not None:
            keep = Path(args.keep)
            keep.mkdir(parents=True, exist_ok=True)
            try:
                driver.save_screenshot(str(keep / "lab_check.png"))
            except Exception:
                pass
            shutil.copy(tmp / "server.log", keep / "lab_check_server.log")
            print(f"lab check: screenshot and server log in {keep}", flush=True)
        if driver is not None:
            driver.quit()
        if server is not None:
            stop_lab(server)
        if kept is not None:  # the book's results JSON, as it was
            results.write_bytes(kept)
            os.utime(results, ns=(kept_stat.st_atime_ns, kept_stat.st_mtime_ns))
        else:
            results.unlink(missing_ok=True)
            for d in made_dirs:
                try:
                    d.rmdir()
                except OSError:  # not empty, or never made
                    pass
        shutil.rmtree(tmp, ignore_errors=True)
        for p in made_checkpoint:
            try:
                p.rmdir() if p.is_dir() else p.unlink(missing_ok=True)
            except OSError:  # the folder holds other checkpoints
                pass
        if notebook.read_bytes() != committed:  # a failed save check: leave the checkout as it was
            notebook.write_bytes(committed)
            print(f"lab check: put notebooks/{notebook.name} back as it was before the check", flush=True)
    if failure:
        print(f"lab check FAILED: {failure}", flush=True)
        return 1
    print(f"lab check: ok ({time.time() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
