"""Task registry, local loader, LM-BFF k-shot sampler, balanced test capping, hub loader (mocked), load_task."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from repro.data import (HUB_SOURCES, DataError, LABEL_ORDERS, OOD_ONLY, TASKS, Example, balanced_sample, fixed_subset, get_spec,
                        kshot_split, load_hub, load_local, load_task)
from repro.models.prompt_lm import render_segments
from repro.profiles import get_profile

PAPER_TASKS = ("SST-2", "MR", "CR", "MPQA", "Subj", "TREC", "AGNews", "IMDb", "Yelp", "QNLI", "MNLI", "SNLI", "RTE",
               "MRPC", "QQP")


# ---- registry ------------------------------------------------------------------------------------------------
def test_registry_covers_paper_tasks_with_complete_verbalizers():
    assert set(TASKS) == set(PAPER_TASKS)
    for name, spec in TASKS.items():
        assert spec.name == name and LABEL_ORDERS[name] == spec.labels
        c = spec.num_labels
        assert len(spec.label_prompts) == c and len(spec.label_words) == c and len(spec.options) == c, name
        assert len(set(spec.label_words)) == c and len(set(o.split()[0] for o in spec.options)) == c, name
        assert spec.metric == ("f1" if name in ("MRPC", "QQP") else "acc")
        ex = Example("Is this a test sentence?", 0, "The test sentence is short." if spec.pair else None)
        for template in (spec.template, spec.gpt2_prompt):
            segs = render_segments(template, ex, name)
            assert any(s.kind == "sent" for s in segs)
        assert sum(s.kind == "mask" for s in render_segments(spec.template, ex, name)) == 1


def test_registry_label_orders_and_verbalizers_by_meaning():
    assert TASKS["MNLI"].labels == TASKS["SNLI"].labels == ("entailment", "neutral", "contradiction")
    assert TASKS["MNLI"].label_words == ("Yes", "Maybe", "No")  # LM-BFF words mapped by label name
    assert TASKS["QNLI"].labels == TASKS["RTE"].labels == ("entailment", "not_entailment")
    assert TASKS["QNLI"].label_words == ("Yes", "No") and TASKS["QNLI"].template == "{a-}?{mask}, {b_lower}"
    assert TASKS["TREC"].labels == ("DESC", "ENTY", "ABBR", "HUM", "LOC", "NUM")
    assert TASKS["TREC"].label_words[2] == "Expression" and TASKS["TREC"].options[4] == " location"
    assert TASKS["Subj"].options == (" subject", " object")  # official GPT-2 bug (reversed) not reproduced
    assert TASKS["MRPC"].template == "{a}{mask}, {b_lower}" and TASKS["MRPC"].label_words == ("No", "Yes")
    assert TASKS["SST-2"].template == "{a} It was{mask}." and TASKS["AGNews"].template == "{mask}: {a}"
    assert TASKS["MNLI"].options == (" true", " neither", " false")


def test_get_spec_errors_list_valid_names():
    assert get_spec("SST-2") is TASKS["SST-2"]
    with pytest.raises(KeyError, match="valid task names: SST-2"):
        get_spec("sst2")


def test_registry_matches_shared_label_files(shared_data: Path):
    checked = 0
    for name in PAPER_TASKS:
        path = shared_data / name / "LABELS.json"
        if path.exists():
            assert tuple(json.loads(path.read_text())) == TASKS[name].labels, name
            checked += 1
    assert checked >= 10


# ---- local files ---------------------------------------------------------------------------------------------
def _write(root: Path, task: str, labels, train=None, test=()):
    d = root / task
    d.mkdir(parents=True)
    (d / "LABELS.json").write_text(json.dumps(list(labels)))
    if train is not None:
        (d / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))


def test_load_local_roundtrip_and_validation(tmp_path: Path):
    _write(tmp_path, "SST-2", ["negative", "positive"], train=[{"text": "bad", "label": 0}, {"text": "good", "label": 1}],
           test=[{"text": "fine", "label": 1}])
    _write(tmp_path / "pairs", "QNLI", ["entailment", "not_entailment"], train=[
        {"text_a": "Who?", "text_b": "Him.", "label": 0}, {"text_a": "Who?", "text_b": "No.", "label": "not_entailment"}],
        test=[{"text_a": "Why?", "text_b": "No.", "label": 1}])
    assert load_local("QNLI", tmp_path / "pairs")[0][1].label == 1  # label names are accepted
    train, test = load_local("SST-2", tmp_path)
    assert train == [Example("bad", 0), Example("good", 1)] and test == [Example("fine", 1)]
    train, test = load_local("QNLI", tmp_path / "pairs")
    assert train[0] == Example("Who?", 0, "Him.") and test[0].text_b == "No."

    _write(tmp_path, "MNLI", ["contradiction", "entailment", "neutral"], train=[], test=[])
    with pytest.raises(ValueError, match="repro's order for MNLI"):
        load_local("MNLI", tmp_path)
    _write(tmp_path, "IMDb", ["negative", "positive"], train=None, test=[{"text": "ok", "label": 1}])
    assert load_local("IMDb", tmp_path) == ([], [Example("ok", 1)])
    _write(tmp_path, "CR", ["negative", "positive"], train=None, test=[{"text": "ok", "label": 1}])
    with pytest.raises(DataError, match="train.jsonl is missing"):
        load_local("CR", tmp_path)
    _write(tmp_path, "MR", ["negative", "positive"], train=[{"text": "x", "label": 2}], test=[])
    with pytest.raises(ValueError, match="not an index"):
        load_local("MR", tmp_path)
    _write(tmp_path, "RTE", ["entailment", "not_entailment"], train=[{"text_a": "x", "label": 0}], test=[])
    with pytest.raises(ValueError, match="text_b"):
        load_local("RTE", tmp_path)
    with pytest.raises(DataError, match="no folder"):
        load_local("TREC", tmp_path)
    assert set(OOD_ONLY) == {"IMDb", "Yelp"}


def test_load_local_shared_data(shared_data: Path):
    train, test = load_local("TREC", shared_data)
    assert len(train) == 5441 and len(test) == 500
    assert Counter(e.label for e in test)[2] == 9  # ABBR is label 2 in the LM-BFF order


# ---- samplers ------------------------------------------------------------------------------------------------
def _pool(counts: dict[int, int]) -> list[Example]:
    return [Example(f"ex {lab} {i}", lab) for lab, n in counts.items() for i in range(n)]


def test_kshot_split_sizes_determinism_disjointness():
    pool = _pool({0: 50, 1: 40, 2: 30})
    train, dev = kshot_split(pool, 8, seed=13)
    assert Counter(e.label for e in train) == {0: 8, 1: 8, 2: 8} == Counter(e.label for e in dev)
    assert not set(train) & set(dev)
    assert kshot_split(pool, 8, seed=13) == (train, dev)
    assert kshot_split(pool, 8, seed=21)[0] != train


def test_kshot_split_reproduces_lmbff_global_seed_shuffle():
    pool = _pool({1: 20, 0: 25})
    lines = list(pool)
    np.random.seed(42)
    np.random.shuffle(lines)  # LM-BFF: np.random.seed(seed); np.random.shuffle(train_lines)
    buckets: dict[int, list[Example]] = {}
    for ex in lines:
        buckets.setdefault(ex.label, []).append(ex)
    want_train = [ex for b in buckets.values() for ex in b[:4]]
    want_dev = [ex for b in buckets.values() for ex in b[4:8]]
    assert kshot_split(pool, 4, seed=42) == (want_train, want_dev)


def test_kshot_split_short_labels():
    pool = _pool({0: 30, 1: 11})
    with pytest.raises(ValueError, match="fewer than 2k"):
        kshot_split(pool, 8, seed=1)
    report: dict = {}
    train, dev = kshot_split(pool, 8, seed=1, allow_short=True, report=report)
    assert report["short_labels"] == {1: 11}
    assert Counter(e.label for e in train) == {0: 8, 1: 8} and Counter(e.label for e in dev) == {0: 8, 1: 3}
    with pytest.raises(ValueError):
        kshot_split(pool, 0, seed=1)


def test_balanced_sample():
    pool = _pool({0: 100, 1: 10, 2: 60})
    out = balanced_sample(pool, 60, seed=0)
    assert len(out) == 60 and Counter(e.label for e in out) == {0: 25, 1: 10, 2: 25}
    assert out == sorted(out, key=pool.index)  # original order kept
    assert balanced_sample(pool, 60, seed=0) == out and balanced_sample(pool, 60, seed=1) != out
    assert balanced_sample(pool, 0) == pool and balanced_sample(pool, 10_000) == pool
    assert Counter(e.label for e in balanced_sample(pool, 31, seed=3)) == {0: 11, 1: 10, 2: 10}


def test_fixed_subset_is_the_seed_0_balanced_sample():
    pool = _pool({0: 100, 1: 10, 2: 60})
    assert fixed_subset(pool, 60) == balanced_sample(pool, 60, seed=0) == fixed_subset(pool, 60)
    assert fixed_subset(pool, 60, seed=1) == balanced_sample(pool, 60, seed=1)
    assert fixed_subset(pool, None) == fixed_subset(pool, 0) == fixed_subset(pool, 10_000) == pool


# ---- hub (datasets.load_dataset mocked with in-memory Datasets) -------------------------------------------------
@pytest.fixture
def fake_hub(monkeypatch):
    datasets = pytest.importorskip("datasets")
    tables = {
        ("CogComp/trec", None, "train"): {"text": ["What is X ?", "Who is Y ?", "What does NASA stand for ?",
                                                   "Where is Z ?"], "coarse_label": [2, 3, 0, 4]},
        ("CogComp/trec", None, "test"): {"text": ["How far is it ?"], "coarse_label": [5]},
        ("stanfordnlp/snli", None, "validation"): {"premise": ["A man sleeps.", "A dog runs.", "Kids play."],
                                             "hypothesis": ["A man rests.", "A cat runs.", "Kids are outside."],
                                             "label": [0, 2, -1]},
        ("SetFit/subj", None, "train"): {"text": ["it is great .", "he moves to rome ."], "label": [1, 0],
                                         "label_text": ["subjective", "objective"]},
        ("nyu-mll/glue", "mnli", "validation_matched"): {"premise": ["p1", "p2"], "hypothesis": ["h1", "h2"],
                                                         "label": [1, 2], "idx": [0, 1]},
        ("nyu-mll/glue", "sst2", "train"): {"sentence": [f"s{i}" for i in range(40)], "label": [i % 2 for i in range(40)],
                                            "idx": list(range(40))},
        ("nyu-mll/glue", "sst2", "validation"): {"sentence": [f"t{i}" for i in range(30)], "label": [i % 2 for i in range(30)],
                                                 "idx": list(range(30))},
    }
    calls = []

    def load_dataset(path, name=None, split=None, **kw):
        calls.append((path, name, split))
        return datasets.Dataset.from_dict(tables[(path, name, split)])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_load_hub_maps_labels_to_our_order(fake_hub):
    trec = load_hub("TREC", "train")  # HF coarse order ABBR, ENTY, DESC, HUM, LOC, NUM -> ours DESC, ENTY, ABBR, ...
    assert [TASKS["TREC"].labels[e.label] for e in trec] == ["DESC", "HUM", "ABBR", "LOC"]
    assert load_hub("TREC", "test")[0].label == TASKS["TREC"].labels.index("NUM")
    snli = load_hub("SNLI", "test")
    assert [(e.text_a, e.text_b, e.label) for e in snli] == [("A man sleeps.", "A man rests.", 0),
                                                             ("A dog runs.", "A cat runs.", 2)]  # -1 dropped
    subj = load_hub("Subj", "train")  # by the label_text column, whatever the integers are
    assert [e.label for e in subj] == [0, 1]
    mnli = load_hub("MNLI", "test")
    assert [e.label for e in mnli] == [1, 2] and ("nyu-mll/glue", "mnli", "validation_matched") in fake_hub
    with pytest.raises(ValueError, match="unknown split"):
        load_hub("SST-2", "dev")
    assert set(HUB_SOURCES) == set(TASKS)


def test_load_task_hub_profile_reads_the_fetched_copy(fake_hub, tmp_path, monkeypatch):
    from repro.data.loaders import fetch_text

    monkeypatch.setenv("REPRO_DATA", str(tmp_path))
    prof = get_profile("paper")
    with pytest.raises(DataError, match="run `repro fetch --profile paper --family text`"):
        load_task("SST-2", prof)
    assert fetch_text("SST-2")["splits"] == {"train": 40, "test": 30}
    calls = len(fake_hub)
    d = load_task("SST-2", prof, seed=13, k=4, n_test=10)
    assert len(d.train) == len(d.dev) == 8 and len(d.test) == 10 and len(fake_hub) == calls  # files only
    assert d.meta["source"] == "hub:nyu-mll/glue/sst2" and d.meta["test_label_counts"] == [5, 5]


# ---- load_task ------------------------------------------------------------------------------------------------
def test_load_task_smoke_profile_generated():
    prof = get_profile("smoke")
    d = load_task("SST-2", prof, seed=13)
    k = prof.k_shot
    assert Counter(e.label for e in d.train) == {0: k, 1: k} == Counter(e.label for e in d.dev)
    assert len(d.test) == prof.n_test and d.meta["test_label_counts"] == [prof.n_test // 2] * 2
    assert d.meta["source"].startswith("generated") and d.spec is TASKS["SST-2"]
    texts = {e.text_a for e in d.test}
    assert not texts & {e.text_a for e in d.train + d.dev}
    again = load_task("SST-2", prof, seed=13)
    assert again.train == d.train and again.test == d.test
    other = load_task("SST-2", prof, seed=21)
    assert other.train != d.train and other.test == d.test  # the test set does not depend on the k-shot seed
    q = load_task("QNLI", prof, seed=13, k=4, n_test=10)
    assert len(q.train) == 8 and all(e.text_b for e in q.train) and len(q.test) == 10


def test_load_task_local_dir_and_errors(tmp_path: Path):
    rows = [{"text": f"t{i}", "label": i % 2} for i in range(30)]
    _write(tmp_path, "MR", ["negative", "positive"], train=rows, test=rows[:9])
    d = load_task("MR", get_profile("smoke"), seed=1, k=3, data_dir=tmp_path, n_test=0)
    assert len(d.train) == len(d.dev) == 6 and len(d.test) == 9 and d.meta["source"].startswith("local:")
    _write(tmp_path, "Yelp", ["negative", "positive"], test=rows[:4])
    y = load_task("Yelp", get_profile("smoke"), data_dir=tmp_path)
    assert y.train == [] and y.dev == [] and len(y.test) == 4
    with pytest.warns(UserWarning, match="fewer than 2k"):
        short = load_task("MR", get_profile("smoke"), k=10, data_dir=tmp_path)
    assert short.meta["short_labels"] == {"negative": 15, "positive": 15}
    with pytest.raises(ValueError, match="data_source 'local'"):
        load_task("MR", get_profile("smoke", data_source="local"))
    with pytest.raises(KeyError, match="valid task names"):
        load_task("nope", get_profile("smoke"))


def test_load_task_shared_data(shared_data: Path):
    d = load_task("MNLI", get_profile("smoke"), seed=13, k=8, data_dir=shared_data, n_test=30)
    assert Counter(e.label for e in d.train) == {0: 8, 1: 8, 2: 8} and len(d.test) == 30
    assert d.meta["test_label_counts"] == [10, 10, 10] and d.meta["pool_size"] == 15130


# ---- C1: classes with fewer than k examples (P1 4096-shot on RTE, MRPC, CR, Subj, MPQA) -------------------------
def test_kshot_split_class_smaller_than_k_keeps_a_dev_split():
    """LM-BFF's slices give a class with n <= k examples an empty dev split (train = all n); the P1 4096-shot runs on
    RTE (~1,245 per class) then crashed at their first dev check.  Dev is never empty: the paper's own rule for
    data sizes beyond a class (App. B.2, Table 5: a random 95 % / 5 % split) holds 5 % out."""
    pool = _pool({0: 40, 1: 100})  # RTE-like at k = 64: class 0 has fewer than k, class 1 fewer than 2k
    report: dict = {}
    train, dev = kshot_split(pool, 64, seed=13, allow_short=True, report=report)
    tr, dv = Counter(e.label for e in train), Counter(e.label for e in dev)
    assert dv[0] == 2 and tr[0] == 38  # 95 % / 5 % of the 40 (ceil)
    assert tr[1] == 64 and dv[1] == 36  # LM-BFF where its dev share is at least 5 %
    assert not set(train) & set(dev) and report["short_labels"] == {0: 40, 1: 100}


def test_kshot_split_empty_dev_crash_is_gone(tmp_path: Path):
    """The crash itself: a task whose classes hold fewer than k examples trains and scores dev without error."""
    from repro.core.finetune import train
    from repro.profiles import FinetuneRecipe
    from repro.workbench import Workbench

    rows = [{"text": f"sentence number {i}", "label": i % 2} for i in range(24)]
    _write(tmp_path, "RTE", ["entailment", "not_entailment"], train=[dict(r, text_b="b") for r in rows],
           test=[dict(r, text_b="b") for r in rows[:6]])
    wb = Workbench("smoke", data_dir=tmp_path, artifacts_dir=tmp_path / "a")
    data = wb.task("RTE", k=32)  # 12 per class < k
    assert data.dev and {e.label for e in data.dev} == {0, 1}
    train(wb.model, {"RTE": data.train}, FinetuneRecipe(steps=2, batch_size=2, eval_every=1), wb.names(),
          dev_data={"RTE": data.dev}, progress=False)
    wb.restore_pre()


def test_kshot_sizes_rule_and_impossible_splits():
    from repro.data import DataError, kshot_sizes, check_kshot

    assert kshot_sizes({0: 10_000, 1: 5_000}, 4096) == {0: (4096, 4096), 1: (4096, 904)}
    assert kshot_sizes({0: 1249, 1: 1241}, 4096) == {0: (1186, 63), 1: (1178, 63)}
    assert kshot_sizes({0: 2}, 4096) == {0: (1, 1)}
    with pytest.raises(DataError, match=r"RTE.*k = 4096.*not_entailment.*1"):
        check_kshot("RTE", {0: 1249, 1: 1}, 4096)
    with pytest.raises(DataError, match=r"MRPC.*equivalent.*0"):
        check_kshot("MRPC", {0: 1194}, 4096)  # a label absent from the pool
    check_kshot("RTE", {0: 1249, 1: 1241}, 4096)  # fine


def test_check_splits_fails_when_the_plan_is_built(tmp_path: Path):
    """A plan's (task, k) requests are checked against the data before anything trains."""
    from repro.data import DataError, check_splits

    pair = [{"text": f"p{i}", "text_b": "h", "label": i % 2} for i in range(40)]
    _write(tmp_path, "RTE", ["entailment", "not_entailment"], train=pair, test=pair[:4])
    odd = [{"text": f"s{i}", "label": 0} for i in range(30)] + [{"text": "one", "label": 1}]
    _write(tmp_path, "MR", ["negative", "positive"], train=odd, test=odd[:4])
    _write(tmp_path, "Yelp", ["negative", "positive"], test=odd[:4])
    prof = get_profile("smoke")
    sizes = check_splits(prof, [("RTE", 8), ("RTE", 4096)], data_dir=tmp_path)
    assert sizes[("RTE", 8)] == {"entailment": (8, 8), "not_entailment": (8, 8)}
    assert sizes[("RTE", 4096)] == {"entailment": (19, 1), "not_entailment": (19, 1)}
    with pytest.raises(DataError, match=r"MR at k = 4096.*positive.*negative: 30, positive: 1"):
        check_splits(prof, [("RTE", 4096), ("MR", 4096)], data_dir=tmp_path)
    with pytest.raises(DataError, match="test-only"):
        check_splits(prof, [("Yelp", 8)], data_dir=tmp_path)
    assert check_splits(prof, [("SST-2", 8)])[("SST-2", 8)] == {"negative": (8, 8), "positive": (8, 8)}


def test_snli_is_tested_on_its_dev_split():
    """S11: LM-BFF's SNLI test file has 9,842 rows, SNLI's validation split (the hub test split has 9,824)."""
    assert HUB_SOURCES["SNLI"].splits == {"train": "train", "test": "validation"}
    glue = [t for t, s in HUB_SOURCES.items() if s.path == "nyu-mll/glue"]
    assert all(HUB_SOURCES[t].splits["test"].startswith("validation") for t in glue)


def test_family_sources_are_registered_in_sources():
    """P2's family sources go through the one registry (repro.data.SOURCES), like the text sources."""
    from repro.data import SOURCES
    from repro.data.families import FAMILY_SOURCES, FamilySource

    assert {"generated", "hub", *FAMILY_SOURCES} <= set(SOURCES)
    assert all(isinstance(SOURCES[n], FamilySource) for n in FAMILY_SOURCES)
    prof = get_profile("smoke").with_(data_source="synthetic-images")
    saved = dict(TASKS)
    try:
        data = load_task("MNIST", prof, n_test=4)
    finally:  # a family task registers its spec; other tests expect the registry as shipped
        TASKS.clear()
        TASKS.update(saved)
    assert data.meta["source"] == "synthetic-images" and len(data.test) == 4 and data.spec.family == "vision"
