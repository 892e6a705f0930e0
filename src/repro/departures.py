"""Where the ``paper`` profile differs from the papers or their official code: one record per difference.

Each :class:`Departure` says what differs, the paper's (or official code's) value, ours, why we keep ours, and its
measured effect where there is one.  The book renders :data:`DEPARTURES` as the page "Where this reproduction
differs from the papers" (:func:`departures_markdown`), and each table section links the records that touch it
(:func:`departures_for`).  ``tests/test_departures.py`` holds the paper profile's recipes against the papers'
values (transcribed from the papers and the official code): a difference with no record here fails.

Only the *paper* profile's departures live here.  The cpu and smoke profiles depart by design (other models, other
data, smaller budgets); their choices are stated on the page "How the cpu profile was chosen" and in each chapter's
plan.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Departure:
    """One difference between the paper profile and a paper or its official code."""

    key: str  # short stable id, e.g. "p2-tall-lambda" (anchors on the page)
    paper: str  # "P1" | "P2"
    sections: tuple[str, ...]  # the table / figure ids it touches (book/reference ids, e.g. "p2-table1")
    what: str  # what differs, in one sentence
    paper_value: str  # the paper's or official code's value
    ours: str  # what the paper profile does
    why: str  # why we keep ours
    effect: str = ""  # measured effect, where there is one ("" = not measured)
    review: str = ""  # the item of the paper-path review it answers (C1, S1, ...), if any
    # profile fields (dotted, e.g. "p1_finetune.steps", "family.vision.finetune.lr") whose value differs from the
    # paper's table in tests/test_departures.py because of this departure
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.paper not in ("P1", "P2"):
            raise ValueError(f"Departure {self.key!r}: paper must be 'P1' or 'P2', got {self.paper!r}")
        if not (self.what and self.paper_value and self.ours and self.why):
            raise ValueError(f"Departure {self.key!r}: what, paper_value, ours and why are all required")


#: every departure of the paper profile, grouped by paper, in the order of the papers' sections
DEPARTURES: tuple[Departure, ...] = (
    # --- lead ---
    Departure(
        key="p2-t5-budget", paper="P2", sections=("p2-table1", "p2-table2"),
        what="T5 fine-tuning budget: batch 64 for 2,000 steps",
        paper_value="AdamW 1e-4 at an effective batch of 1,024 (64 x 16 accumulation) for 75,000 optimizer steps "
                    "per task and method (official nlp/finetune.py, prune_finetune.py)",
        ours="the official micro-batch of 64 for 2,000 steps, no accumulation (128,000 sequences per run instead "
             "of 76.8 million)",
        why="75,000 x 1,024 sequences is about 77 million per task: with 7 tasks x 5 trained methods x 3 seeds "
            "that is several GPU-months per T5 family. Our one training loop has no gradient accumulation.",
        effect="600x fewer training sequences per run; not measured against the official budget (no hub weights "
               "here). Task vectors from a shorter run are smaller, which the alpha grid partly absorbs.",
        fields=("family.nlp.finetune.batch_size", "family.nlp.finetune.steps",
                "family.nlp-base.finetune.batch_size", "family.nlp-base.finetune.steps"),
    ),
    Departure(
        key="p2-clip-templates", paper="P2", sections=("p2-table1", "p2-table2"),
        what="Zero-shot head templates of the seven non-ImageNet vision datasets are our own wording",
        paper_value="the per-dataset prompt lists of the CLIP paper that task_vectors' templates.py carries (e.g. "
                    "EuroSAT: the single 'a centered satellite photo of {}.')",
        ours="two or three CLIP-style prompts per dataset written for this project (repro.data.hub_vision."
             "VISION_TEMPLATES); ImageNet uses open_clip's OpenAI templates, read from the installed package",
        why="the project ships no third-party sentences, and no installed package carries those seven lists; a "
            "user can replace VISION_TEMPLATES with the official lists",
        effect="not measured (no hub weights here). The head is frozen and shared by every method, so the methods "
               "compare on the same head; absolute zero-shot accuracies can differ from the paper's by a few points",
    ),
    # --- p2model ---
    Departure(
        key="p2-llora-lora-only",
        paper="P2",
        sections=("p2-table1", "p2-table2", "p2-table3", "p2-fig2", "p2-fig6"),
        what="L-LoRA trains only its LoRA factors; the official code also trains attention weights densely",
        paper_value="vision/lora.py replaces every attention by a new module whose in_proj (Q, K, V) and out_proj "
                    "weights and biases are fresh trainable parameters (requires_grad_(False) is called on the old "
                    "module), so AdamW trains them densely beside the LoRA branches; nlp/linearize.py's "
                    "LinearizedModule marks every parameter of the wrapped peft layer trainable, the base q and v "
                    "weights included",
        ours="only the LoRA B factors train (each branch linearized around B_0 = 0, so A gets no gradient); scale, "
             "init and linearization scope as the official code per family (vision s = α, xavier/√r; NLP peft "
             "s = α/r); every other weight stays at θ_0",
        why="L-LoRA (Tang et al. 2024) and the paper's Table 3 count are a rank-16 adapter; the dense updates are a "
            "side effect of how the modules were swapped, and would make L-LoRA a dense fine-tuning of the "
            "attention",
        effect="",
        review="S6",
    ),
    Departure(
        key="p2-lota-vision-leak",
        paper="P2",
        sections=("p2-table1", "p2-table2", "p2-table3", "p2-fig2", "p2-fig6"),
        what="LoTA's non-selected entries are frozen in both families; the official vision code trains them at 10 % lr",
        paper_value="vision/pruners.py _global_mask sets the AdaptW score of non-selected entries to 0.1, so they "
                    "train at a tenth of the learning rate (the NLP code uses 0)",
        ours="0 for every non-selected entry (repro.core.fisher.lota_mask); the mask itself follows the official "
             "count N − int((1 − d)·N) with ties at the threshold frozen",
        why="LoTA is sparse fine-tuning of the selected 10 %; the vision value makes it dense, which neither the LoTA "
            "paper nor P2's description of the baseline says, and the NLP code does not do",
        effect="",
        review="S15",
    ),
    # --- fetch ---
    Departure(
        key="p2-vision-split-draws",
        paper="P2",
        sections=("p2-table1", "p2-table2"),
        what="The vision held-out splits are drawn with Python's seeded shuffle, and SUN397 is split 80/10/10 from "
             "all its images instead of the task_vectors folders",
        paper_value="torch.utils.data.random_split(generator seed 0) for every <Task>Val (10 %, at most 5,000) and "
                    "for the 5,000 ImageNetVal train images; EuroSAT and SUN397 from fixed split folders (SUN397: "
                    "about 19,850 train images, as its 14 epochs of about 1,960 steps at batch 128 imply; spec D4, "
                    "task_vectors issue #1)",
        ours="random.Random(0) shuffles (repro.data.hub_vision: _hold_out, _three_way; the ImageNetVal sample is "
             "drawn once, at fetch); EuroSAT 80/10/10 of its 27,000 images (the official sizes 21,600 / 2,700 / "
             "2,700); SUN397 80/10/10 of torchvision's 108,754 images (87,003 / 10,875 / 10,876)",
        why="the official split folders are not published (SUN397 and the EuroSAT split were made by hand; issue "
            "#1), and torch's random_split draws other images from the same seed than Python's shuffle; the sizes "
            "match except SUN397",
        effect="not measured: other validation / test images of the same size, except SUN397 (4.4x the training "
               "pool at the same ~2,000 steps; a test set of 10,876 images, the official folder's size is not "
               "published)",
    ),
)


def departures_for(section: str) -> list[Departure]:
    """The departures that touch the table or figure ``section`` (a book/reference id such as "p2-table1")."""
    return [d for d in DEPARTURES if section in d.sections]


def departure(key: str) -> Departure:
    """The departure ``key`` (fails naming the known keys)."""
    for d in DEPARTURES:
        if d.key == key:
            return d
    raise KeyError(f"no departure {key!r}; known: {sorted(d.key for d in DEPARTURES)}")


def departures_fields() -> set[str]:
    """Every profile field that some departure accounts for."""
    return {f for d in DEPARTURES for f in d.fields}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def departures_markdown() -> str:
    """The body of the book page "Where this reproduction differs from the papers" (MyST markdown)."""
    out: list[str] = []
    for paper in ("P1", "P2"):
        rows = [d for d in DEPARTURES if d.paper == paper]
        out += [f"## {paper}", ""]
        if not rows:
            out += ["No departures recorded.", ""]
            continue
        for d in rows:
            out += [f"({d.key})=", f"### {d.what}", ""]
            out += ["| | |", "|---|---|",
                    f"| paper / official code | {_cell(d.paper_value)} |",
                    f"| this reproduction | {_cell(d.ours)} |",
                    f"| why | {_cell(d.why)} |",
                    f"| measured effect | {_cell(d.effect) if d.effect else 'not measured'} |",
                    f"| touches | {', '.join(d.sections) if d.sections else 'the whole chapter'} |"]
            if d.review:
                out.append(f"| review item | {d.review} |")
            out.append("")
    return "\n".join(out)
