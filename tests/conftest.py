"""Shared fixtures: a tiny random-init BERT classifier with two registered tasks, and small example sets."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from repro.data import Example, TaskSpec

torch.set_num_threads(1)  # tiny models: threading overhead dominates, and CI machines are small

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

SENTIMENT = TaskSpec("sent", ("negative", "positive"), label_prompts=("It was terrible.", "It was great."))
TOPIC = TaskSpec("topic", ("sports", "business", "science"),
                 label_prompts=("This is about sports.", "This is about business.", "This is about science."))


@pytest.fixture
def tiny_model():
    from repro.models import build_tiny_bert

    torch.manual_seed(0)
    model = build_tiny_bert(seed=0)
    model.add_task(SENTIMENT)
    model.add_task(TOPIC)
    return model


@pytest.fixture
def sent_examples() -> list[Example]:
    pos = ["a great and moving film", "i loved every minute", "wonderful acting and a fine plot", "truly superb"]
    neg = ["a dull and boring film", "i hated every minute", "awful acting and a weak plot", "truly terrible"]
    return [Example(t, 1) for t in pos] + [Example(t, 0) for t in neg]


@pytest.fixture
def topic_examples() -> list[Example]:
    return [Example("the team won the match", 0), Example("stocks fell on monday", 1),
            Example("a new planet was found", 2), Example("the striker scored twice", 0),
            Example("the bank raised rates", 1), Example("cells divide in the lab", 2)]


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip("../shared/data is not present (it is only on the team's machines)")
    return SHARED_DATA
