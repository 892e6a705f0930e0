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


def two_task_setup(spec_a: TaskSpec, spec_b: TaskSpec, scale: float):
    """Tiny BERT with two tasks, θ_pre over its maskable set, two random task vectors (τ2 on half the tensors) of
    standard deviation ``scale``, and four examples per task: the inputs of the ξ (P2 Eq. 10) tests."""
    from repro.core.taskvec import TaskVector
    from repro.models import build_tiny_bert

    model = build_tiny_bert(seed=0)
    model.add_task(spec_a)
    model.add_task(spec_b)
    names = model.maskable_names()
    pre = {n: p.detach().clone() for n, p in model.param_dict(names).items()}
    g = torch.Generator().manual_seed(0)
    tau1 = TaskVector({n: scale * torch.randn(pre[n].shape, generator=g) for n in names})
    tau2 = TaskVector({n: scale * torch.randn(pre[n].shape, generator=g) for n in names[: len(names) // 2]})
    d1 = [Example(t, i % 2) for i, t in enumerate(["a great film", "a dull film", "i loved it", "i hated it"])]
    d2 = [Example(t, i % 2) for i, t in enumerate(["the team won", "stocks fell", "a late goal", "rates rose"])]
    return model, pre, tau1, tau2, d1, d2
