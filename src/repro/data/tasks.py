"""Task specifications, examples, batching and the k-shot samplers shared by every model family and both papers
(a leaf: it imports nothing from repro).

**Registry.**  :data:`TASKS` holds one :class:`TaskSpec` per paper task name (P1: SST-2, MR, CR, MPQA, Subj, TREC,
AGNews, QNLI, MNLI, SNLI, RTE, MRPC, QQP; OOD targets IMDb, Yelp).  Label orders are *ours* and fixed
(:data:`LABEL_ORDERS`): GLUE / HF order for the NLI tasks (MNLI, SNLI: entailment, neutral, contradiction; QNLI,
RTE: entailment, not_entailment), the LM-BFF order for TREC (DESC, ENTY, ABBR, HUM, LOC, NUM) and Subj
(subjective, objective).  Every verbalizer below is written in that order.

- ``template`` / ``label_words``: the LM-BFF RoBERTa prompts of the official P1 scripts (spec B2), in the
  placeholder format of :mod:`repro.models.prompt_lm`: ``{a}``/``{b}`` the sentences, ``{mask}`` the mask
  token, ``{a-}`` = LM-BFF ``*sent-_0*`` (drop the sentence's last character, so ``{a-}?`` turns a final "." or
  "?" into "?"), ``{b_lower}`` = ``*sentl_1*`` (lower-case the first character).  Spacing is LM-BFF's: no space
  before ``{mask}`` (label words carry the leading space).  LM-BFF lists MNLI/SNLI labels as (contradiction,
  entailment, neutral); the words (No, Yes, Maybe) are mapped *by label name* into our order (Yes, Maybe, No).
- ``gpt2_prompt`` / ``options``: the GPT-2 prompts of the official ``gpt2_processors`` (spec B5), mapped by
  label meaning into our order.  Two official bugs are **not** reproduced: (1) Subj maps LM-BFF label 0
  (subjective) to " object"; we map subjective → " subject", objective → " object".  (2) TREC's options
  (" a description.", " an entity.", " a location.", ...) are listed in an order that disagrees with the LM-BFF
  label ids and collapse to the first tokens " a" / " an"; we use one-word options (" description",
  " entity", " abbreviation", " person", " location", " number") in our label order, whose first tokens are
  distinct.
- ``label_prompts``: one natural sentence per label, embedded by the sentence encoder of the cpu/smoke profiles
  (zero-shot head of :class:`repro.models.SentenceEmbeddingClassifier`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import Any, Mapping, Sequence

import numpy as np

class DataError(ValueError):
    """Bad task data (a malformed data folder, a split that cannot be used); the message names the file, the line
    and the fix in one line."""


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


@dataclass(frozen=True)
class ImageExample:
    """One image example: a PIL image, an image path, or a preprocessed ``[3, H, W]`` tensor, and its label."""

    image: Any
    label: int


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


class MissingSplit(list):
    """The train / dev split of a test-only task (an OOD target without ``train.jsonl``): empty, and any use of it
    (iterating, indexing, ``len``, truth value) raises :class:`DataError`, so a run that would train on nothing
    stops at once instead of running to the end."""

    def __init__(self, task: str, split: str, source: str) -> None:
        super().__init__()
        self.message = (f"{task} has no {split} split in {source} (a test-only task): it cannot be trained on; "
                        f"add {task}/train.jsonl to the data folder or train on another task")

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise DataError(self.message)

    __iter__ = __len__ = __bool__ = __getitem__ = _fail


def chunks(examples: Sequence[Example], batch_size: int) -> list[list[Example]]:
    """Consecutive batches of at most ``batch_size`` examples."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    return [list(examples[i : i + batch_size]) for i in range(0, len(examples), batch_size)]


# ==============================================================================================================
# the task registry
# ==============================================================================================================
_SENTIMENT_LABELS = ("negative", "positive")
_SENT_TEMPLATE = "{a} It was{mask}."  # LM-BFF *cls**sent_0*_It_was*mask*.*sep+*
_SENT_WORDS = ("terrible", "great")
_SENT_GPT2 = '"{a}" has a tone that is'
_SENT_OPTIONS = (" negative", " positive")
_SENT_PROMPTS = ("It was terrible.", "It was great.")
_NLI_TEMPLATE = "{a-}?{mask}, {b_lower}"  # LM-BFF *cls**sent-_0*?*mask*,*+sentl_1**sep+*
_PARA_TEMPLATE = "{a}{mask}, {b_lower}"  # LM-BFF *cls**sent_0**mask*,*+sentl_1**sep+*
_TOPIC_TEMPLATE = "{mask}: {a}"  # LM-BFF *cls**mask*:*+sent_0**sep+*
_TF_GPT2 = " {a}\n question: {b} true or false?\n answer:"
_TFN_GPT2 = " {a}\n question: {b} true, false, or neither?\n answer:"


def _sentiment(name: str, prompts: tuple[str, ...] = _SENT_PROMPTS) -> TaskSpec:
    return TaskSpec(name, _SENTIMENT_LABELS, family="sentiment", label_prompts=prompts, template=_SENT_TEMPLATE,
                    label_words=_SENT_WORDS, gpt2_prompt=_SENT_GPT2, options=_SENT_OPTIONS)


_NLI3_LABELS = ("entailment", "neutral", "contradiction")
_NLI3_PROMPTS = ("Yes, that is true.", "Maybe, it is possible.", "No, that is false.")
_RTE_PROMPTS = ("Yes, that is true.", "No, that does not follow.")

TASKS: dict[str, TaskSpec] = {
    t.name: t
    for t in (
        _sentiment("SST-2"),
        _sentiment("MR"),
        _sentiment("CR"),
        _sentiment("MPQA"),
        _sentiment("IMDb"),  # OOD target of SST-2 / MPQA (scripts: the SST-2 template and words)
        _sentiment("Yelp"),  # OOD target
        TaskSpec("Subj", ("subjective", "objective"), family="subjectivity",
                 label_prompts=("This is a personal opinion.", "This is a factual description."),
                 template="{a} This is{mask}.", label_words=("subjective", "objective"),
                 gpt2_prompt=_SENT_GPT2, options=(" subject", " object")),
        TaskSpec("TREC", ("DESC", "ENTY", "ABBR", "HUM", "LOC", "NUM"), family="question",
                 label_prompts=("The answer is a description or explanation.",
                                "The answer is a thing, such as an object, animal or color.",
                                "The answer is what an abbreviation stands for.",
                                "The answer is a person.",
                                "The answer is a place.",
                                "The answer is a number, date or amount."),
                 template=_TOPIC_TEMPLATE,
                 label_words=("Description", "Entity", "Expression", "Human", "Location", "Number"),
                 gpt2_prompt=" {a} The answer to this question will be",
                 options=(" description", " entity", " abbreviation", " person", " location", " number")),
        TaskSpec("AGNews", ("World", "Sports", "Business", "Sci/Tech"), family="topic",
                 label_prompts=("This is news about world politics.", "This is news about sports.",
                                "This is news about business and the economy.",
                                "This is news about science and technology."),
                 template=_TOPIC_TEMPLATE, label_words=("World", "Sports", "Business", "Tech"),
                 gpt2_prompt=" summary: {a}\n topic:", options=(" World", " Sports", " Business", " Science")),
        TaskSpec("QNLI", ("entailment", "not_entailment"), pair=True, family="nli",
                 label_prompts=("Yes, the sentence answers the question.",
                                "No, the sentence does not answer the question."),
                 template=_NLI_TEMPLATE, label_words=("Yes", "No"), gpt2_prompt=_TF_GPT2,
                 options=(" true", " false")),
        TaskSpec("RTE", ("entailment", "not_entailment"), pair=True, family="nli", label_prompts=_RTE_PROMPTS,
                 template=_NLI_TEMPLATE, label_words=("Yes", "No"), gpt2_prompt=_TF_GPT2,
                 options=(" true", " false")),
        TaskSpec("MNLI", _NLI3_LABELS, pair=True, family="nli", label_prompts=_NLI3_PROMPTS,
                 template=_NLI_TEMPLATE, label_words=("Yes", "Maybe", "No"), gpt2_prompt=_TFN_GPT2,
                 options=(" true", " neither", " false")),
        TaskSpec("SNLI", _NLI3_LABELS, pair=True, family="nli", label_prompts=_NLI3_PROMPTS,
                 template=_NLI_TEMPLATE, label_words=("Yes", "Maybe", "No"), gpt2_prompt=_TFN_GPT2,
                 options=(" true", " neither", " false")),
        TaskSpec("MRPC", ("not_equivalent", "equivalent"), pair=True, metric="f1", family="paraphrase",
                 label_prompts=("No, they say different things.", "Yes, they say the same thing."),
                 template=_PARA_TEMPLATE, label_words=("No", "Yes"), gpt2_prompt=_TF_GPT2,
                 options=(" false", " true")),
        TaskSpec("QQP", ("not_duplicate", "duplicate"), pair=True, metric="f1", family="paraphrase",
                 label_prompts=("No, these are different questions.", "Yes, these ask the same question."),
                 template=_PARA_TEMPLATE, label_words=("No", "Yes"), gpt2_prompt=_TF_GPT2,
                 options=(" false", " true")),
    )
}

#: our label order per task (what ``LABELS.json`` of a local data directory must contain)
LABEL_ORDERS: dict[str, tuple[str, ...]] = {name: spec.labels for name, spec in TASKS.items()}

#: tasks that are only used as OOD test sets (a local copy may have no train.jsonl)
OOD_ONLY: tuple[str, ...] = ("IMDb", "Yelp")


def get_spec(name: str) -> TaskSpec:
    """The registered :class:`TaskSpec` of a paper task name; unknown names fail with the valid choices."""
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; valid task names: {', '.join(TASKS)}")
    return TASKS[name]


# ==============================================================================================================
# samplers
# ==============================================================================================================
#: the dev share of a class too small for LM-BFF's k train + k dev: P1 App. B.2 (Table 5) makes "a random 95 % - 5 %
#: split of the training set to have a validation set" where k exceeds what a class holds
SHORT_DEV_FRACTION = 0.05
#: the largest k of LM-BFF's k-shot splits in P1 (4096); a larger k is Table 5's full-shot regime (App. B.2)
LMBFF_MAX_K = 4096


def kshot_sizes(counts: Mapping[int, int], k: int) -> dict[int, tuple[int, int]]:
    """``{label: (n_train, n_dev)}`` that :func:`kshot_split` takes from a class of ``counts[label]`` examples.

    A class with at least 2k examples: LM-BFF's k + k.  A smaller class: LM-BFF's slices (train = the first k, dev =
    the rest) wherever they leave dev at least 5 % of the class; otherwise (a class with about k or fewer examples,
    which LM-BFF leaves with an *empty* dev split: RTE, MRPC, CR, Subj, MPQA at 4096-shot) the paper's own rule for
    data sizes beyond a class (App. B.2): 95 % train, 5 % dev (rounded up, at least 1).  A class with fewer than 2
    examples has no such split: :func:`check_kshot` raises.

    Beyond LM-BFF's k (``k`` > :data:`LMBFF_MAX_K`: Table 5's "50k training examples per class") the paper makes "a
    random 95 % – 5 % split of the training set" (App. B.2): up to k examples of each class, 95 % train, 5 % dev.
    """
    out = {}
    for lab, n in counts.items():
        if k > LMBFF_MAX_K:
            m = min(n, k)
            dev = min(max(math.ceil(SHORT_DEV_FRACTION * m), 1), m)
            out[lab] = (m - dev, dev)
            continue
        if n >= 2 * k:
            out[lab] = (k, k)
            continue
        dev = min(max(n - k, math.ceil(SHORT_DEV_FRACTION * n), 1), n)
        out[lab] = (n - dev, dev)
    return out


def check_kshot(task: str, counts: Mapping[int, int], k: int, labels: Sequence[str] | None = None) -> None:
    """Raise :class:`DataError` naming the task and its per-class counts if a k-shot train/dev split of ``task``
    cannot exist: a label with no example, or a class too small to give both train and dev an example."""
    labels = tuple(labels) if labels is not None else (TASKS[task].labels if task in TASKS else ())
    names = {i: (labels[i] if i < len(labels) else str(i)) for i in set(counts) | set(range(len(labels)))}
    shown = ", ".join(f"{names[i]}: {counts.get(i, 0)}" for i in sorted(names))
    missing = [names[i] for i in range(len(labels)) if counts.get(i, 0) == 0]
    if missing:
        raise DataError(f"{task} at k = {k}: no training example of label(s) {missing} (per-class counts "
                        f"{{{shown}}}); a k-shot split needs every label: use another task or fix the data")
    small = [names[i] for i, n in counts.items() if n < 2]
    if small:
        raise DataError(f"{task} at k = {k}: label(s) {small} hold fewer than 2 examples (per-class counts "
                        f"{{{shown}}}), so no class-balanced train/dev split exists; use another task or fix the data")


def kshot_split(examples: Sequence[Example], k: int, seed: int, allow_short: bool = False,
                report: dict | None = None) -> tuple[list[Example], list[Example]]:
    """LM-BFF k-shot sampler (``tools/generate_k_shot_data.py``): ``(train, dev)`` with k examples per label each.

    ``np.random.seed(seed)`` + shuffle of the original train lines is reproduced by
    ``np.random.RandomState(seed).permutation`` (the same Fisher-Yates draws); examples are bucketed by label in
    order of first appearance in the shuffled list; train = the first k of each bucket, dev = the next k.
    A label with fewer than 2k examples raises, unless ``allow_short``: then each bucket is cut by
    :func:`kshot_sizes` (LM-BFF's slices where they leave dev 5 % of the class, else 95 % / 5 %, P1 App. B.2), so
    dev is never empty, and ``report["short_labels"]`` = ``{label: available}``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not examples:
        raise ValueError("kshot_split: no examples to sample from")
    order = np.random.RandomState(seed).permutation(len(examples))
    buckets: dict[int, list[Example]] = {}
    for i in order:
        ex = examples[int(i)]
        buckets.setdefault(ex.label, []).append(ex)
    short = {lab: len(b) for lab, b in buckets.items() if len(b) < 2 * k and k <= LMBFF_MAX_K}
    if short and not allow_short:
        raise ValueError(f"kshot_split: labels {short} (label: available examples) have fewer than 2k = {2 * k} "
                         "examples; lower k or pass allow_short=True")
    counts = {lab: len(b) for lab, b in buckets.items()}
    small = {lab: n for lab, n in counts.items() if n < 2}
    if small:
        raise DataError(f"kshot_split: labels {small} (label: available examples) hold fewer than 2 examples; no "
                        f"train/dev split exists (per-class counts {counts})")
    sizes = kshot_sizes(counts, k)
    train = [ex for lab, b in buckets.items() for ex in b[: sizes[lab][0]]]
    dev = [ex for lab, b in buckets.items() for ex in b[sizes[lab][0] : sum(sizes[lab])]]
    if report is not None:
        report["short_labels"] = short
    return train, dev


def balanced_sample(examples: Sequence[Example], n: int, seed: int = 0) -> list[Example]:
    """A seeded subset of ``n`` examples with labels as balanced as the data allows, in the original order.

    ``n <= 0`` or ``n >= len(examples)`` returns everything.  Each label gets ``n // C`` (the remainder going to
    the first labels); labels with too few examples give all they have and the others fill the gap.
    """
    if n <= 0 or n >= len(examples):
        return list(examples)
    rng = np.random.RandomState(seed)
    by_label: dict[int, list[int]] = {}
    for i, ex in enumerate(examples):
        by_label.setdefault(ex.label, []).append(i)
    labels = sorted(by_label)
    pools = {lab: [by_label[lab][j] for j in rng.permutation(len(by_label[lab]))] for lab in labels}
    quota = {lab: 0 for lab in labels}
    remaining = n
    while remaining > 0:
        open_labels = [lab for lab in labels if quota[lab] < len(pools[lab])]
        share, extra = divmod(remaining, len(open_labels))
        for j, lab in enumerate(open_labels):
            add = min(share + (1 if j < extra else 0), len(pools[lab]) - quota[lab])
            quota[lab] += add
            remaining -= add
    chosen = sorted(i for lab in labels for i in pools[lab][: quota[lab]])
    return [examples[i] for i in chosen]


def fixed_subset(examples: Sequence[Example], n: int | None, seed: int = 0) -> list[Example]:
    """The fixed, label-balanced evaluation subset: :func:`balanced_sample` of ``n`` examples under ``seed`` (0 by
    default, so every method, run and seed scores the same examples); ``n`` None or 0 = all of them."""
    return list(examples) if not n or len(examples) <= n else balanced_sample(examples, n, seed=seed)
