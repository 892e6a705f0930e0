"""The generated tasks: coverage, balance, determinism, disjoint prefix-stable splits, speed, documentation."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from repro.data import generated
from repro.data import TASKS


def test_every_registry_task_has_a_generator():
    assert set(generated.GENERATORS) == set(TASKS)
    with pytest.raises(KeyError, match="generated tasks: SST-2"):
        generated.generate("CoLA", 4)


def test_every_generated_task_has_its_section_in_the_book():
    page = (Path(__file__).resolve().parents[2] / "book" / "generated_tasks.md").read_text()
    assert not [t for t in generated.GENERATORS if f"\n### {t}\n" not in page]


def test_the_registry_refuses_unknown_tasks_and_second_generators(monkeypatch):
    from repro.data.generated import _registry

    monkeypatch.setattr(_registry, "GENERATORS", dict(_registry.GENERATORS))
    with pytest.raises(KeyError, match="'CoLA' is not a task; known tasks: SST-2"):
        _registry.generates("CoLA")(lambda r, y: ("x", None))
    with pytest.raises(KeyError, match="two generators for 'TREC'"):
        _registry.generates("TREC")(lambda r, y: ("x", None))


def test_data_modules_import_without_a_cycle():
    """tasks is a leaf; generated imports only tasks; loaders imports generated at top level."""
    import ast

    src = Path(generated.__file__).resolve().parents[1]
    def imports(path):
        return {n.module for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)
                and n.module and n.module.startswith("repro")}
    assert imports(src / "tasks.py") == set()
    for f in (src / "generated").glob("*.py"):
        assert imports(f) <= {"repro.data.tasks", "repro.data.generated", "repro.data.generated._registry",
                              "repro.data.generated._text"}, f.name
    assert "repro.data" not in {m for f in (src / "generated").glob("*.py") for m in imports(f)}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_generate_balanced_deterministic_well_formed(task):
    spec = TASKS[task]
    n = 30 * spec.num_labels
    data = generated.generate(task, n, seed=3)
    assert len(data) == n and Counter(e.label for e in data) == {i: 30 for i in range(spec.num_labels)}
    assert data == generated.generate(task, n, seed=3)
    assert data != generated.generate(task, n, seed=4)
    assert len({(e.text_a, e.text_b) for e in data}) == n  # distinct
    for e in data:
        assert e.text_a.strip() == e.text_a and e.text_a
        assert (e.text_b is not None) == spec.pair
        words = len(e.text_a.split()) + len((e.text_b or "").split())
        assert words <= (90 if task == "IMDb" else 60), (task, e)


@pytest.mark.parametrize("task", ["SST-2", "MPQA", "TREC", "QNLI", "MNLI", "QQP"])
def test_train_test_disjoint_balanced_prefix_stable(task):
    c = TASKS[task].num_labels
    train, test = generated.train_test(task, n_train=40 * c, n_test=10 * c, seed=0)
    assert Counter(e.label for e in train) == {i: 40 for i in range(c)}
    assert Counter(e.label for e in test) == {i: 10 for i in range(c)}
    key = lambda e: (e.text_a, e.text_b)  # noqa: E731
    assert not {key(e) for e in train} & {key(e) for e in test}
    big_train, same_test = generated.train_test(task, n_train=80 * c, n_test=10 * c, seed=0)
    assert same_test == test and {key(e) for e in train} <= {key(e) for e in big_train}
    assert generated.train_test(task, 40 * c, 10 * c, seed=1)[1] != test


def test_pool_size_and_speed():
    assert generated.pool_size("SST-2", 8) == 2 * generated.MIN_POOL_PER_LABEL
    assert generated.pool_size("TREC", 512) == 6 * generated.POOL_FACTOR * 512
    start = time.perf_counter()
    for task in TASKS:
        generated.generate(task, 600, seed=0)
    per_sec = 600 * len(TASKS) / (time.perf_counter() - start)
    assert per_sec > 2000, f"generation too slow: {per_sec:.0f} examples/s"


def test_sentiment_rules_are_compositional():
    """Contrast and negation make single keywords unreliable: both polarities' words occur under each label."""
    data = generated.generate("SST-2", 400, seed=0)
    with_great = Counter(e.label for e in data if " superb" in e.text_a or " brilliant" in e.text_a)
    assert with_great[0] > 0 and with_great[1] > 0
    negated = [e for e in data if " not " in f" {e.text_a} "]
    assert Counter(e.label for e in negated).keys() == {0, 1}
