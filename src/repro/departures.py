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
