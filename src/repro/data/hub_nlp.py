"""P2's NLP tasks for the paper profile: the 7 T5 tasks and SuperGLUE RTE (the negation control), from the HF hub
by the names the official code uses (spec Part F): ``qasc``, ``wiki_qa``, ``quartz``, ``paws/labeled_final``,
``story_cloze/2016`` (manual download: ``$REPRO_STORY_CLOZE_DIR``), ``winogrande/winogrande_xl``,
``super_glue/wsc.fixed`` and ``super_glue/rte``.

Splits, as the official NLP code (spec D5): train = the hub train split (StoryCloze: the hub validation split);
the hub validation split (StoryCloze: test) shuffled with seed 42 gives ``val`` = its first 32 examples (α
selection, TaLoS calibration) and ``test`` = the rest.

Inputs and answers.  The official code renders promptsource template 0 and ranks the answer *texts*.  promptsource
is not a dependency, and our :class:`repro.models.t5.T5RankClassifier` ranks one fixed set of answer strings per
task, so each example is rendered by our own template into one input string (``Example.text_a``) that lists the
options of multiple-choice tasks with letters / numbers, and the answers are those fixed strings (yes/no, A-H,
1/2).  The scoring is the official one (summed answer log-probabilities, no length normalization).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any, Callable

from repro.data.tasks import Example, TaskSpec

LETTERS = tuple("ABCDEFGH")


@dataclass(frozen=True)
class NLPSource:
    """One hub dataset: path/config as the spec names it, the answer strings and a row → (input, label) renderer."""

    path: str
    config: str | None
    answers: tuple[str, ...]
    render: Callable[[dict[str, Any]], tuple[str, int]]
    train_split: str = "train"
    eval_split: str = "validation"


def _letters(row: dict, n: int) -> str:
    texts = row["choices"]["text"]
    return " ".join(f"({LETTERS[i]}) {t}" for i, t in enumerate(texts[:n]))


def _qasc(row: dict) -> tuple[str, int]:
    return f"Question: {row['question']} Options: {_letters(row, 8)} Answer:", LETTERS.index(row["answerKey"])


def _quartz(row: dict) -> tuple[str, int]:
    return (f"{row['para']} Question: {row['question']} Options: {_letters(row, 2)} Answer:",
            LETTERS.index(row["answerKey"]))


def _wiki_qa(row: dict) -> tuple[str, int]:
    return f"Question: {row['question']} Would this answer it? {row['answer']}", int(row["label"])


def _paws(row: dict) -> tuple[str, int]:
    return f"Sentence 1: {row['sentence1']} Sentence 2: {row['sentence2']} Same meaning?", int(row["label"])


def _story_cloze(row: dict) -> tuple[str, int]:
    story = " ".join(row[f"input_sentence_{i}"] for i in range(1, 5))
    return (f"{story} Which ending? (1) {row['sentence_quiz1']} (2) {row['sentence_quiz2']} Answer:",
            int(row["answer_right_ending"]) - 1)


def _winogrande(row: dict) -> tuple[str, int]:
    return (f"{row['sentence']} What does _ stand for? (1) {row['option1']} (2) {row['option2']} Answer:",
            int(row["answer"]) - 1)


def _wsc(row: dict) -> tuple[str, int]:
    return (f"{row['text']} In this passage, does the pronoun \"{row['span2_text']}\" refer to "
            f"{row['span1_text']}?", int(row["label"]))


def _rte(row: dict) -> tuple[str, int]:
    # SuperGLUE RTE: label 0 = entailment, 1 = not_entailment; our answers (yes, no) in that order
    return f"{row['premise']} Question: does this imply that \"{row['hypothesis']}\"?", int(row["label"])


#: hub sources by task name (the official code's keys); answers in label order
NLP_SOURCES: dict[str, NLPSource] = {
    "qasc": NLPSource("qasc", None, LETTERS, _qasc),
    "wiki_qa": NLPSource("wiki_qa", None, ("no", "yes"), _wiki_qa),
    "quartz": NLPSource("quartz", None, LETTERS[:2], _quartz),
    "paws": NLPSource("paws", "labeled_final", ("no", "yes"), _paws),
    "story_cloze": NLPSource("story_cloze", "2016", ("1", "2"), _story_cloze, train_split="validation",
                             eval_split="test"),
    "winogrande": NLPSource("winogrande", "winogrande_xl", ("1", "2"), _winogrande),
    "wsc": NLPSource("super_glue", "wsc.fixed", ("no", "yes"), _wsc),
    "rte": NLPSource("super_glue", "rte", ("yes", "no"), _rte),
}
N_VAL, SPLIT_SEED = 32, 42


def nlp_spec(task: str) -> TaskSpec:
    """The TaskSpec of a T5 task: the answers are both its labels and its options; the input is pre-rendered."""
    src = _source(task)
    return TaskSpec(task, tuple(src.answers), family="t5", template="{a}", options=tuple(src.answers),
                    label_prompts=tuple(src.answers))


def _source(task: str) -> NLPSource:
    if task not in NLP_SOURCES:
        raise KeyError(f"unknown T5 task {task!r}; choose one of {', '.join(NLP_SOURCES)}")
    return NLP_SOURCES[task]


def _rows_to_examples(rows: Any, render: Callable[[dict], tuple[str, int]]) -> list[Example]:
    out = []
    for row in rows:
        text, label = render(dict(row))
        if label >= 0:
            out.append(Example(text, label))
    return out


def load_nlp(task: str) -> tuple[TaskSpec, list[Example], list[Example], list[Example]]:
    """``(spec, train, val, test)`` of T5 task ``task`` from the hub (official splits, see the module doc)."""
    import datasets

    src = _source(task)
    args = (src.path, src.config) if src.config else (src.path,)
    kw: dict[str, Any] = {}
    if task == "story_cloze":
        kw["data_dir"] = os.environ.get("REPRO_STORY_CLOZE_DIR", "")
        if not kw["data_dir"]:
            raise FileNotFoundError("story_cloze/2016 is a manual download: set $REPRO_STORY_CLOZE_DIR to its folder")
    train = _rows_to_examples(datasets.load_dataset(*args, split=src.train_split, **kw), src.render)
    held = _rows_to_examples(datasets.load_dataset(*args, split=src.eval_split, **kw), src.render)
    order = list(range(len(held)))
    random.Random(SPLIT_SEED).shuffle(order)
    val = [held[i] for i in order[:N_VAL]]
    test = [held[i] for i in order[N_VAL:]]
    return nlp_spec(task), train, val, test
