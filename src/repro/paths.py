"""Every location the package reads or writes, in one place (a leaf: it imports nothing from repro).

The repository root is ``$REPRO_ROOT``, else the clone this package is installed from in editable mode. Relative
paths are resolved against it, so a notebook writes to the same place whether JupyterLab runs it from
``notebooks/`` or papermill from elsewhere.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Sequence
import tempfile


def project_root() -> Path | None:
    """The repository root (``$REPRO_ROOT``, else the folder above ``src/``), or None outside a clone."""
    env = os.environ.get("REPRO_ROOT")
    if env:
        return Path(env).resolve()
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir() else None


def repo_root() -> Path:
    """:func:`project_root`, or a clear error when the package does not run from a clone."""
    root = project_root()
    if root is None:
        raise FileNotFoundError("the notebooks and the book live in a clone of the repository: run from a clone "
                                "with `pip install -e .`, or set REPRO_ROOT to the clone")
    return root


def resolve_path(path: str | Path) -> Path:
    """A relative path is taken relative to the repository root; absolute paths are kept."""
    path = Path(path).expanduser()
    if path.is_absolute():
        return path
    root = project_root()
    return (root / path) if root else path.resolve()


def source_dir() -> Path:
    """``src/repro`` of the clone (hashed into the notebook cache key)."""
    return repo_root() / "src" / "repro"


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def book_dir() -> Path:
    return repo_root() / "book"


def reference_dir() -> Path:
    """The folder holding the papers' printed tables as CSV (``$REPRO_REFERENCE_DIR`` overrides)."""
    env = os.environ.get("REPRO_REFERENCE_DIR")
    if env:
        path = Path(env)
    else:
        path = (project_root() or Path(__file__).resolve().parents[2]) / "book" / "reference"
    if not path.is_dir():
        raise FileNotFoundError(
            f"reference tables not found at {path}; run from a clone of the repository (editable install) or set "
            f"REPRO_REFERENCE_DIR to its book/reference folder")
    return path


#: where a batch kernel's :class:`repro.jobcall.ChapterJobs` writes how many of its declared jobs it has obtained
#: (and their share of the plan's cost), for the runner's progress lines (:mod:`repro.runner.watch`)
JOBS_PROGRESS_ENV = "REPRO_JOBS_PROGRESS"


def artifacts_dir(override: str | Path | None = None) -> Path:
    """The artifact store's root (``override``, else ``$REPRO_ARTIFACTS``, else ``artifacts/``)."""
    return resolve_path(override or os.environ.get("REPRO_ARTIFACTS", "artifacts"))


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of a file's bytes (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: the done-markers' folder under the artifacts root (``repro job run`` writes them, the workflow reads them)
DONE_DIR = "jobs"


def done_path(job_id: str, root: str | Path | None = None) -> Path:
    """``<artifacts>/jobs/<id>.done.json``: the done-marker of one job."""
    return artifacts_dir(root) / DONE_DIR / f"{job_id}.done.json"


def results_path(output_dir: str | Path, profile: str, notebook: str) -> Path:
    """Where a notebook's results JSON lives: ``<output_dir>/<profile>/<notebook>.json``."""
    return resolve_path(output_dir) / profile / f"{notebook}.json"


def data_root(override: str | Path | None = None) -> Path:
    """Where ``repro fetch`` writes the hub datasets and the paper profile reads them (``override``, else
    ``$REPRO_DATA``, else ``data/`` in the repository): the ``--data`` layout, see :mod:`repro.fetch`."""
    return resolve_path(override or os.environ.get("REPRO_DATA", "data"))


def models_root(override: str | Path | None = None) -> Path:
    """Where ``repro fetch`` writes the pre-trained weights and the model builders read them (``override``, else
    ``$REPRO_MODELS``, else ``models/`` in the repository)."""
    return resolve_path(override or os.environ.get("REPRO_MODELS", "models"))


#: environment that keeps the HF hub / datasets / open_clip from reaching the network: runs read fetched files only
OFFLINE_ENV: dict[str, str] = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
#: set to 1: every Workbench opens its artifact store read-only (`repro run --read-only-store`; issue 23)
STORE_READ_ONLY_ENV = "REPRO_STORE_READ_ONLY"


def folder_digest(folder: str | Path, exclude: Sequence[str] = ()) -> str:
    """sha256 (16 hex digits) of a data folder's content: every regular file below it that is not hidden, by
    relative path and bytes, following symlinked folders once.  What cache keys hold for a ``--data`` folder, so
    a file edited in place (a flipped label) changes the key while moving or renaming the folder does not.
    ``exclude``: top-level entries left out (the workbench leaves out the fetched P2 ``nlp/`` and ``vision/``
    folders, which its text tasks never read).
    """
    root = Path(os.path.realpath(folder))  # never raises (a symlink loop hashes as empty; loading names it)
    seen: set[str] = set()
    entries: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop, or the same folder linked twice
            dirnames[:] = []
            continue
        seen.add(real)
        top = os.path.realpath(dirpath) == str(root)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (top and d in exclude))
        for name in filenames:
            f = Path(dirpath) / name
            if not name.startswith(".") and f.is_file():
                entries.append((f.relative_to(root).as_posix(), f))
    h = hashlib.sha256(b"folder_digest/v1")
    for rel, f in sorted(entries):
        h.update(f"\0{rel}\0".encode() + _file_digest(f))
    return h.hexdigest()[:16]


_BIG_FILE = 1 << 20
_BIG_DIGESTS: dict[tuple, bytes] = {}


def _file_digest(f: Path) -> bytes:
    """sha256 of a file; files over 1 MiB (fetched datasets) are hashed once per process and (size, mtime, ctime,
    inode): rewriting one changes its ctime.  Small files (a hand-edited train.jsonl) are always re-read."""
    st = f.stat()
    if st.st_size <= _BIG_FILE:
        return hashlib.sha256(f.read_bytes()).digest()
    key = (str(f), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if key not in _BIG_DIGESTS:
        h = hashlib.sha256()
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
        _BIG_DIGESTS[key] = h.digest()
    return _BIG_DIGESTS[key]



def unwritable_reason(path: str | Path, what: str, folder: bool = True) -> str | None:
    """Why ``path`` cannot be written (None when it can): checked before any work starts, so a bad output path is
    one line up front, not a traceback after the run.  ``folder``: ``path`` is a folder to create or fill, else a
    file to create or replace (it must then be a regular file if it exists: ``/dev/full`` is refused).  Nothing
    is created: the nearest existing folder is probed with an unnamed temporary file."""
    p = Path(os.path.abspath(os.path.expanduser(str(path))))
    if os.path.lexists(p) and not p.exists():
        return f"{what} {p} is a symlink that loops or points nowhere; point it at a real folder"
    if p.exists():
        if folder and not p.is_dir():
            return f"{what} {p} is a file, not a folder"
        if not folder and not p.is_file():
            return f"{what} {p} is not a regular file (a folder or a device); give the path of a file to write"
    cur = p if folder else p.parent
    while not os.path.lexists(cur):
        cur = cur.parent
    if not cur.is_dir():
        return (f"{what} {p} cannot be created: {cur} is "
                + ("a symlink that loops or points nowhere" if os.path.islink(cur) else "a file, not a folder"))
    try:
        with tempfile.TemporaryFile(dir=cur):
            pass
    except OSError as e:
        return f"{what} {p} is not writable ({cur}: {e.strerror or type(e).__name__})"
    return None
