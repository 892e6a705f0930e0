"""The generated data is pinned bit for bit: any refactor of repro.data.generated must keep these digests.

Pinned at commit 0ac6178, before generated.py was split into a package (every cached artifact and printed number
of the cpu/smoke profiles depends on these texts).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from repro.data import TASKS, generated

PINNED = {
    "AGNews": "1a47b7610449d560", "CR": "bb30b78150404910", "IMDb": "fcd83349bd7b5cf0", "MNLI": "bbb4cc997e577a0c",
    "MPQA": "46d52752405d74b4", "MR": "edf615b2dc624faf", "MRPC": "3bff62142da1a650", "QNLI": "b4d1016db5cc6c75",
    "QQP": "0100524c67f6dc20", "RTE": "074aed9cad454668", "SNLI": "428f8db78f7b18ea", "SST-2": "a0b3a138d0167904",
    "Subj": "5c1db4c93e82c7e0", "TREC": "95697bc3ac2a84f3", "Yelp": "dd717711aef7fa4c",
}


@pytest.mark.parametrize("task", sorted(PINNED))
def test_generated_splits_are_bit_identical_to_the_pinned_digest(task):
    c = TASKS[task].num_labels
    train, test = generated.train_test(task, 20 * c, 8 * c, seed=13)
    pool = generated.generate(task, 6 * c, seed=2)
    blob = json.dumps([[(e.text_a, e.label, e.text_b) for e in s] for s in (train, test, pool)])
    assert hashlib.sha256(blob.encode()).hexdigest()[:16] == PINNED[task]


def test_every_task_is_pinned():
    assert set(PINNED) == set(TASKS)
