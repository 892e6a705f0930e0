"""Task specifications, examples and batching shared by every model family and both papers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass(frozen=True)
class TaskSpec:
    """What a classifier needs to know about a task (labels, how to verbalize it, how to score it).

    ``label_prompts`` are the zero-shot head sentences of the cpu/smoke profile (one per label, embedded by the
    sentence encoder).  ``template`` / ``label_words`` are the LM-BFF prompt (paper profile, RoBERTa MLM):
    ``{a}``, ``{b}`` are the sentences, ``{mask}`` the mask token.  ``options`` are GPT-2 / T5 answer strings.
    """

    name: str
    labels: tuple[str, ...]
    pair: bool = False
    metric: str = "acc"  # "acc" or "f1" (MRPC/QQP: F1 of the positive class)
    family: str = ""  # sentiment / subjectivity / topic / question / nli / paraphrase
    label_prompts: tuple[str, ...] = ()
    template: str = "{a} It was{mask}."
    label_words: tuple[str, ...] = ()
    gpt2_prompt: str = ""
    options: tuple[str, ...] = ()

    @property
    def num_labels(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class Example:
    text_a: str
    label: int
    text_b: str | None = None


@dataclass
class TaskData:
    """One task's splits. ``train``/``dev`` are the k-shot splits; ``test`` is the evaluation split."""

    spec: TaskSpec
    train: list[Example]
    dev: list[Example]
    test: list[Example]
    meta: dict = field(default_factory=dict)

    def split(self, name: str) -> list[Example]:
        if name not in ("train", "dev", "test"):
            raise ValueError(f"unknown split {name!r}; choose train, dev or test")
        return getattr(self, name)


def chunks(examples: Sequence[Example], batch_size: int) -> list[list[Example]]:
    """Consecutive batches of at most ``batch_size`` examples."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    return [list(examples[i : i + batch_size]) for i in range(0, len(examples), batch_size)]
