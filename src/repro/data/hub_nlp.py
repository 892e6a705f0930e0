"""P2's NLP tasks for the paper profile: the 7 T5 tasks and SuperGLUE RTE (the negation control).

**Reading** (:func:`load_nlp`): the fetched layout only, ``<data root>/nlp/<task>/LABELS.json`` (the answers) and
one ``<hub split>.jsonl`` per hub split, each line a hub row as published (:mod:`repro.data.layout`).  A missing
file is a one-line error naming ``repro fetch --profile paper --family nlp``.

**Fetching** (:func:`fetch_nlp`, run by ``repro fetch``): the datasets the official code names (spec Part F) from
their parquet-era hub repositories, since ``datasets`` >= 4 refuses loading scripts: ``allenai/qasc``,
``microsoft/wiki_qa``, ``allenai/quartz``, ``google-research-datasets/paws`` (labeled_final),
``allenai/winogrande`` (winogrande_xl), ``aps/super_glue`` (wsc.fixed, rte).  Each source lists the repository
first, then the hub's parquet export of it (``revision="refs/convert/parquet"``, ``data_dir=<config>``), tried in
that order.  StoryCloze 2016 is not on the hub in a loadable form (its ``LSDSem/story_cloze`` repository is a
loading script that needs the manual download): fetch reads the two official CSV files from a folder you give it
(``--story-cloze DIR`` or ``$REPRO_STORY_CLOZE_DIR``; the files come from the form at
https://cs.rochester.edu/nlp/rocstories/), see :func:`read_story_cloze_csvs`.

Splits, as the official NLP code (spec D5): train = the hub train split (StoryCloze: the hub validation split);
the hub validation split (StoryCloze: test) shuffled with seed 42 gives ``val`` = its first 32 examples (α
selection, TaLoS calibration) and ``test`` = the rest.

Inputs and answers.  The official code renders promptsource template 0 and ranks the answer *texts*.  promptsource
is not a dependency, and our :class:`repro.models.t5.T5RankClassifier` ranks one fixed set of answer strings per
task, so each example is rendered by our own template into one input string (``Example.text_a``) that lists the
options of multiple-choice tasks with letters / numbers, and the answers are those fixed strings (yes/no, A-H,
1/2).  The scoring is the official one (summed answer log-probabilities, no length normalization).  Rows are
rendered when read, so a template change needs no new fetch.
"""

from __future__ import annotations

import csv
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from repro.data import layout
from repro.data.tasks import DataError, Example, TaskSpec

LETTERS = tuple("ABCDEFGH")


@dataclass(frozen=True)
class HubRef:
    """One way to load a dataset with ``datasets.load_dataset(path, config, revision=..., data_dir=...)``."""

    path: str
    config: str | None = None
    revision: str | None = None
    data_dir: str | None = None

    def describe(self) -> str:
        return self.path + (f"/{self.config}" if self.config else "") + (f"@{self.revision}" if self.revision else "") \
            + (f" data_dir={self.data_dir}" if self.data_dir else "")


def _parquet_era(path: str, config: str | None) -> tuple[HubRef, ...]:
    """The repository itself, then the hub's parquet export of it (for a repository that still ships a script)."""
    return (HubRef(path, config), HubRef(path, None, "refs/convert/parquet", config or "default"))


@dataclass(frozen=True)
class NLPSource:
    """One task: the hub copies to fetch it from (tried in order), the answer strings, a row → (input, label)
    renderer, and which hub splits are the training pool and the held-out split."""

    hub: tuple[HubRef, ...]
    answers: tuple[str, ...]
    render: Callable[[dict[str, Any]], tuple[str, int]]
    train_split: str = "train"
    eval_split: str = "validation"

    @property
    def splits(self) -> tuple[str, str]:
        return (self.train_split, self.eval_split)


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


#: sources by task name (the official code's keys); answers in label order.  StoryCloze has no hub copy that loads
#: (see the module doc): ``hub`` is empty and fetch reads the official CSV files instead.
NLP_SOURCES: dict[str, NLPSource] = {
    "qasc": NLPSource(_parquet_era("allenai/qasc", None), LETTERS, _qasc),
    "wiki_qa": NLPSource(_parquet_era("microsoft/wiki_qa", None), ("no", "yes"), _wiki_qa),
    "quartz": NLPSource(_parquet_era("allenai/quartz", None), LETTERS[:2], _quartz),
    "paws": NLPSource(_parquet_era("google-research-datasets/paws", "labeled_final"), ("no", "yes"), _paws),
    "story_cloze": NLPSource((), ("1", "2"), _story_cloze, train_split="validation", eval_split="test"),
    "winogrande": NLPSource(_parquet_era("allenai/winogrande", "winogrande_xl"), ("1", "2"), _winogrande),
    "wsc": NLPSource(_parquet_era("aps/super_glue", "wsc.fixed"), ("no", "yes"), _wsc),
    "rte": NLPSource(_parquet_era("aps/super_glue", "rte"), ("yes", "no"), _rte),
}
N_VAL, SPLIT_SEED = 32, 42
STORY_CLOZE_ENV = "REPRO_STORY_CLOZE_DIR"


def nlp_spec(task: str) -> TaskSpec:
    """The TaskSpec of a T5 task: the answers are both its labels and its options; the input is pre-rendered."""
    src = _source(task)
    return TaskSpec(task, tuple(src.answers), family="t5", template="{a}", options=tuple(src.answers),
                    label_prompts=tuple(src.answers))


def _source(task: str) -> NLPSource:
    if task not in NLP_SOURCES:
        raise KeyError(f"unknown T5 task {task!r}; choose one of {', '.join(NLP_SOURCES)}")
    return NLP_SOURCES[task]


def _rows_to_examples(rows: Iterable[dict[str, Any]], render: Callable[[dict], tuple[str, int]]) -> list[Example]:
    out = []
    for row in rows:
        text, label = render(dict(row))
        if label >= 0:
            out.append(Example(text, label))
    return out


def load_nlp(task: str, root: str | Path | None = None) -> tuple[TaskSpec, list[Example], list[Example], list[Example]]:
    """``(spec, train, val, test)`` of T5 task ``task`` from the fetched layout under ``root`` (default: the data
    root), with the official splits (see the module doc)."""
    src = _source(task)
    folder = layout.task_dir(root, "nlp", task)
    layout.verify(folder, "nlp", root)  # every file as `repro fetch` wrote it
    names = layout.read_labels(folder, "nlp", root)
    if tuple(names) != src.answers:
        raise DataError(f"{folder / 'LABELS.json'} lists {names}, repro's answers for {task} are "
                        f"{list(src.answers)}; run `{layout.fetch_command('nlp', root)}` again")
    rows = {split: layout.read_rows(layout.require(folder / f"{split}.jsonl", "nlp", root, f"the hub {split} split"))
            for split in src.splits}
    train, val, test = official_splits(task, rows)
    return (nlp_spec(task), _rows_to_examples(train, src.render), _rows_to_examples(val, src.render),
            _rows_to_examples(test, src.render))


def official_splits(task: str, rows: Mapping[str, Sequence[Any]]) -> tuple[list, list, list]:
    """``(train, val, test)`` of T5 ``task`` from its hub splits, as the official code: train = the train split,
    val = the first :data:`N_VAL` of the seeded shuffle of the evaluation split, test = the rest.  Works on any
    items, so the paper-plan check (:func:`repro.inventory.check_plan`) splits count pools through it too."""
    src = _source(task)
    held = list(rows[src.eval_split])
    order = list(range(len(held)))
    random.Random(SPLIT_SEED).shuffle(order)
    return (list(rows[src.train_split]), [held[i] for i in order[:N_VAL]], [held[i] for i in order[N_VAL:]])


# ==============================================================================================================
# fetch adapters (repro fetch): the hub (or StoryCloze's CSV files) -> the fetched layout
# ==============================================================================================================
#: the official StoryCloze 2016 CSV columns -> the hub dataset's column names (which :func:`_story_cloze` reads)
STORY_CLOZE_COLUMNS: dict[str, str] = {
    "InputStoryid": "story_id", "InputSentence1": "input_sentence_1", "InputSentence2": "input_sentence_2",
    "InputSentence3": "input_sentence_3", "InputSentence4": "input_sentence_4",
    "RandomFifthSentenceQuiz1": "sentence_quiz1", "RandomFifthSentenceQuiz2": "sentence_quiz2",
    "AnswerRightEnding": "answer_right_ending",
}
STORY_CLOZE_HELP = ("StoryCloze 2016 is a manual download: fill in the form at https://cs.rochester.edu/nlp/rocstories/,"
                    " put its two CSV files (cloze_test_val__spring2016 and cloze_test_test__spring2016) in a folder and"
                    f" pass it as `repro fetch --profile paper --family nlp --story-cloze DIR` (or ${STORY_CLOZE_ENV})")


def read_story_cloze_csvs(folder: str | Path) -> dict[str, list[dict[str, Any]]]:
    """``{"validation": rows, "test": rows}`` from the official StoryCloze 2016 CSV files in ``folder`` (the file
    whose name holds "val" is the validation split, "test" the test split), rows in the hub's column names."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise DataError(f"StoryCloze folder {folder} does not exist; {STORY_CLOZE_HELP}")
    found: dict[str, Path] = {}
    for path in sorted(folder.glob("*.csv")):
        name = path.name.lower()
        split = "validation" if "val" in name else "test" if "test" in name else None
        if split and split not in found:
            found[split] = path
    lacking = [s for s in ("validation", "test") if s not in found]
    if lacking:
        raise DataError(f"{folder}: no StoryCloze {' or '.join(lacking)} CSV (a *.csv whose name holds "
                        f"{' / '.join('val' if s == 'validation' else 'test' for s in lacking)}); {STORY_CLOZE_HELP}")
    out: dict[str, list[dict[str, Any]]] = {}
    for split, path in found.items():
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            cols = set(reader.fieldnames or ())
            absent = sorted(set(STORY_CLOZE_COLUMNS) - cols)
            if absent:
                raise DataError(f"{path}: columns {absent} missing (found {sorted(cols)}); expected the official "
                                f"StoryCloze 2016 CSV with columns {list(STORY_CLOZE_COLUMNS)}")
            rows = []
            for row in reader:
                r: dict[str, Any] = {new: row[old].strip() for old, new in STORY_CLOZE_COLUMNS.items()}
                r["answer_right_ending"] = int(r["answer_right_ending"])
                rows.append(r)
        out[split] = rows
    return out


def hub_rows(refs: tuple[HubRef, ...], split: str) -> list[dict[str, Any]]:
    """The rows of ``split`` from the first of ``refs`` that loads; all failing raises one line listing each."""
    import datasets  # heavy: fetching only

    errors = []
    for ref in refs:
        kw: dict[str, Any] = {"split": split}
        if ref.revision:
            kw["revision"] = ref.revision
        if ref.data_dir:
            kw["data_dir"] = ref.data_dir
        args = (ref.path, ref.config) if ref.config else (ref.path,)
        try:
            ds = datasets.load_dataset(*args, **kw)
        except Exception as e:  # noqa: BLE001 - every failure is reported below, one line each
            errors.append(f"{ref.describe()}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        return [dict(row) for row in ds]
    raise RuntimeError(f"could not load split {split!r} from the hub: " + "; ".join(errors))


def fetch_nlp(task: str, root: str | Path | None = None, story_cloze_dir: str | Path | None = None) -> dict[str, Any]:
    """Write T5 task ``task`` into the fetched layout (``nlp/<task>/``): its two hub splits as hub rows, and
    ``LABELS.json``.  Returns the ``FETCHED.json`` record."""
    src = _source(task)
    folder = layout.task_dir(root, "nlp", task)
    if task == "story_cloze":
        where = story_cloze_dir or os.environ.get(STORY_CLOZE_ENV, "")
        if not where:
            raise DataError(STORY_CLOZE_HELP)
        splits = read_story_cloze_csvs(where)
        origin = f"csv:{Path(where).expanduser().resolve()}"
    else:
        splits = {split: hub_rows(src.hub, split) for split in src.splits}
        origin = "hub:" + " | ".join(r.describe() for r in src.hub)
    for split, rows in splits.items():  # every row must render (catches a changed hub format at fetch time)
        if not rows:
            raise DataError(f"{task}: the {split} split is empty ({origin})")
        try:
            src.render(dict(rows[0]))
        except (KeyError, ValueError, TypeError) as e:
            raise DataError(f"{task}: a {split} row does not have the expected fields ({type(e).__name__}: {e}); "
                            f"its columns: {sorted(rows[0])} ({origin})") from None
    tmp = layout.staging(folder)
    layout.write_labels(tmp, src.answers)
    counts = {split: layout.write_jsonl(tmp / f"{split}.jsonl", rows) for split, rows in splits.items()}
    record = {"task": task, "family": "nlp", "source": origin, "splits": counts}
    layout.commit(tmp, folder, record)
    return record
