"""Deterministic generated English classification tasks mirroring the paper tasks (cpu / smoke profiles).

Nothing is downloaded: every task is built compositionally from small vocabulary lists and sentence templates, so
the same ``(task, n, seed)`` always gives the same examples, on any machine, in milliseconds.

**Layout.**  One module per task family (:mod:`.sentiment`, :mod:`.topic`, :mod:`.pairs`) registers its
generators with ``@generates`` (:mod:`._registry`); this module is the engine: streams, hash routing, splits.

**Design.**  Each task has one generator per label, ``gen(rng, label) -> (text_a, text_b)``.  Labels are
assigned *by construction* (no label noise), but the label is never given away by a single keyword: the
generators use graded polarity words, negation of the opposite polarity ("not bad", "hardly brilliant", "far
from perfect"), contrast clauses whose *main* clause carries the label ("the plot was dull, but the acting was
superb"; "the acting was superb, even though the plot was dull"), neutral distractor sentences, cross-topic
vocabulary, and, for the pair tasks, hypotheses / questions that share most of their words with the first
sentence whatever the label.  ``book/generated_tasks.md`` gives the recipe of each task.

**Splits.**  :func:`train_test` draws one stream of examples per label and routes each text to *test* (about
one in five, decided by a hash of the text) or to the *train pool*; texts are de-duplicated within each split,
so train and test are disjoint, both exactly label-balanced (when the size is a multiple of the number of
labels), and each is a prefix-stable function of ``seed``: a larger train pool extends a smaller one and does
not change the test set.  :func:`repro.data.load_task` then draws the LM-BFF k-shot train/dev from the pool.
"""

from __future__ import annotations

import hashlib
import random

# importing the family modules registers their generators (in this order: the order of GENERATORS)
from repro.data.generated import sentiment  # noqa: F401  isort: skip
from repro.data.generated import topic  # noqa: F401  isort: skip
from repro.data.generated import pairs  # noqa: F401  isort: skip
from repro.data.generated._registry import GENERATORS, Gen
from repro.data.tasks import TASKS, Example

#: test size used when a profile asks for "all" test examples (n_test = 0)
DEFAULT_TEST_SIZE = 1000
#: train pool per label = POOL_FACTOR · k (at least MIN_POOL_PER_LABEL), so k-shot seeds draw different examples
POOL_FACTOR = 4
MIN_POOL_PER_LABEL = 256
_TEST_EVERY = 5  # about 1 in 5 generated texts goes to the test stream


def _check(task: str) -> Gen:
    if task not in GENERATORS:
        raise KeyError(f"no generator for task {task!r}; generated tasks: {', '.join(GENERATORS)}")
    return GENERATORS[task]


def _stream(task: str, label: int, seed: int):
    """Endless stream of (text_a, text_b) for one label; a deterministic function of (task, label, seed)."""
    gen = _check(task)
    r = random.Random(f"repro.generated|{task}|{label}|{seed}")
    while True:
        yield gen(r, label)


def _key(a: str, b: str | None) -> str:
    return a if b is None else a + "\x1f" + b


def _is_test(key: str) -> bool:
    h = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(h, "little") % _TEST_EVERY == 0


def _per_label(n: int, c: int) -> list[int]:
    base, extra = divmod(n, c)
    return [base + (1 if i < extra else 0) for i in range(c)]


def _collect(task: str, label: int, seed: int, n: int, want_test: bool | None) -> list[Example]:
    """First ``n`` distinct examples of a label's stream routed to test (True), train (False) or either (None)."""
    out: list[Example] = []
    seen: set[str] = set()
    misses = 0
    for a, b in _stream(task, label, seed):
        if len(out) >= n:
            break
        key = _key(a, b)
        if want_test is not None and _is_test(key) != want_test:
            continue
        if key in seen and misses < 50 * (n + 10):  # the vocabulary is exhausted: accept repeats after a while
            misses += 1
            continue
        seen.add(key)
        out.append(Example(a, label, b))
    return out


def _interleave(task: str, seed: int, per_label: list[list[Example]], tag: str) -> list[Example]:
    out = [ex for group in per_label for ex in group]
    random.Random(f"repro.generated|{task}|{seed}|{tag}").shuffle(out)
    return out


def generate(task: str, n: int, seed: int = 0) -> list[Example]:
    """``n`` label-balanced examples of a generated task (shuffled; distinct texts while the vocabulary allows)."""
    _check(task)
    c = TASKS[task].num_labels
    groups = [_collect(task, lab, seed, m, None) for lab, m in enumerate(_per_label(n, c))]
    return _interleave(task, seed, groups, "all")


def train_test(task: str, n_train: int, n_test: int, seed: int = 0) -> tuple[list[Example], list[Example]]:
    """Disjoint, label-balanced ``(train pool, test)`` of sizes ``n_train`` and ``n_test`` (see module docstring)."""
    _check(task)
    c = TASKS[task].num_labels
    train = [_collect(task, lab, seed, m, False) for lab, m in enumerate(_per_label(n_train, c))]
    test = [_collect(task, lab, seed, m, True) for lab, m in enumerate(_per_label(n_test, c))]
    return _interleave(task, seed, train, "train"), _interleave(task, seed, test, "test")


def pool_size(task: str, k: int) -> int:
    """Train-pool size :func:`repro.data.load_task` asks for: POOL_FACTOR·k per label (≥ MIN_POOL_PER_LABEL)."""
    return TASKS[task].num_labels * max(POOL_FACTOR * int(k), MIN_POOL_PER_LABEL, 2 * int(k))
