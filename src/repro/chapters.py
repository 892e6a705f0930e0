"""The chapters of the book, named once (issue 31 §2): every other list of chapters is read from here.

A *chapter* is one notebook ``notebooks/<name>.md`` and, for a paper section, its chapter package
``repro.<paper>.<section>`` (``p1_localization`` → :mod:`repro.p1.localization`) with the same role files in every
chapter (``plan``, ``jobs``, ``runs``, ``views``, ``claims``).  The registry is *discovered*: a chapter package is a
folder ``src/repro/p1/<section>/`` or ``src/repro/p2/<section>/`` holding a ``jobs.py``, and its place in its paper's
part of the book is the integer ``ORDER`` its ``__init__.py`` assigns.  A notebook without a chapter package (the
Performance page) is a chapter with no jobs, placed in the book's reference part.

Adding a chapter therefore means adding its package and its notebook: ``repro plan`` (:mod:`repro.inventory`), the
runner (``repro book`` / ``repro run``), the table of contents (:func:`toc_entries`, written into
``book/_toc.yml`` by ``repro book``) and the tests read :func:`chapters`.

Nothing here imports a chapter: the runner, which may not import ``p1`` / ``p2``, reads this module too.  The
packages' ``ORDER`` is read from their source (:func:`ast.literal_eval` of the assignment), and a chapter's role
module is imported only when asked for (:meth:`Chapter.module`).
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from repro.paths import notebooks_dir

PACKAGE_ROOT = Path(__file__).resolve().parent
#: the papers whose sections are chapter packages, in book order, with the caption of their part of the book
PAPERS: dict[str, str] = {
    "p1": "P1 · Skill localization by grafting (Panigrahi et al., ICML 2023)",
    "p2": "P2 · TaLoS (Iurada et al., ICLR 2025)",
}
#: the role files of a chapter package (a role the chapter does not need is absent)
ROLES: tuple[str, ...] = ("plan", "jobs", "runs", "views", "claims")


@dataclass(frozen=True)
class Chapter:
    """One chapter: ``name`` (the notebook's stem), ``paper`` ("p1" / "p2"; "" for a page without a paper
    section), ``order`` (its place in the paper's part) and ``package`` (the chapter package; "" when none)."""

    name: str
    paper: str
    order: int
    package: str = ""

    def module(self, role: str) -> ModuleType:
        """The chapter's role module (``plan``, ``jobs``, ``runs``, ``views``, ``claims``)."""
        if not self.package:
            raise LookupError(f"chapter {self.name!r} has no chapter package, hence no {role} module")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; a chapter package has {list(ROLES)}")
        return importlib.import_module(f"{self.package}.{role}")

    def jobs(self, profile: Any, **kwargs: Any) -> list:
        """Every cached artifact the chapter computes on ``profile`` (its ``jobs.jobs``; [] without a package)."""
        return self.module("jobs").jobs(profile, **kwargs) if self.package else []

    @property
    def notebook(self) -> Path:
        """``notebooks/<name>.md``."""
        return notebooks_dir() / f"{self.name}.md"


def package_order(init: Path) -> int:
    """The ``ORDER = <int>`` a chapter package's ``__init__.py`` assigns (ValueError naming the file when absent)."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "ORDER"):
            value = ast.literal_eval(node.value)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    raise ValueError(f"{init}: a chapter package's __init__.py assigns its place in the book, e.g. `ORDER = 3`")


def discover(root: Path | None = None, notebooks: Path | None = None) -> tuple[Chapter, ...]:
    """The chapters found under ``root`` (the ``repro`` package folder) and ``notebooks``: the chapter packages of
    each paper by ``ORDER``, then the notebooks without a package, by name.  A chapter package without its notebook
    is an error naming both."""
    root = root or PACKAGE_ROOT
    notebooks = notebooks or notebooks_dir()
    found: list[Chapter] = []
    for paper in PAPERS:
        mine = []
        for jobs_file in sorted((root / paper).glob("*/jobs.py")):
            section = jobs_file.parent.name
            name = f"{paper}_{section}"
            if not (notebooks / f"{name}.md").exists():
                raise ValueError(f"chapter package repro.{paper}.{section} has no notebook {notebooks / name}.md")
            mine.append(Chapter(name, paper, package_order(jobs_file.parent / "__init__.py"),
                                f"repro.{paper}.{section}"))
        orders = [c.order for c in mine]
        if len(set(orders)) != len(orders):
            raise ValueError(f"two {paper} chapter packages share an ORDER: {sorted((c.order, c.name) for c in mine)}")
        found += sorted(mine, key=lambda c: c.order)
    packaged = {c.name for c in found}
    found += [Chapter(p.stem, "", i) for i, p in enumerate(sorted(notebooks.glob("*.md"))) if p.stem not in packaged]
    return tuple(found)


def package_of(name: str, root: Path | None = None) -> str:
    """The chapter package of notebook ``name`` (``p1_localization`` → ``repro.p1.localization``), "" when it has
    none; by the naming rule alone (no discovery: a notebook folder elsewhere, as in tests, is fine)."""
    root = root or PACKAGE_ROOT
    paper, _, section = name.partition("_")
    return f"repro.{paper}.{section}" if paper in PAPERS and (root / paper / section / "jobs.py").exists() else ""


_CACHE: dict[tuple[Path, Path], tuple[Chapter, ...]] = {}


def package_root() -> Path:
    """The ``repro`` package folder of the clone the book is built from (``$REPRO_ROOT``'s ``src/repro`` when it
    has one, else this package's own folder)."""
    clone = notebooks_dir().parent / "src" / "repro"
    return clone if clone.is_dir() else PACKAGE_ROOT


def chapters() -> tuple[Chapter, ...]:
    """Every chapter of the book, in book order (discovered once per process and clone)."""
    key = (package_root(), notebooks_dir())
    if key not in _CACHE:
        _CACHE[key] = discover(*key)
    return _CACHE[key]


def chapter_names() -> tuple[str, ...]:
    """The chapters' names (= notebook stems), in book order."""
    return tuple(c.name for c in chapters())


def get_chapter(name: str) -> Chapter:
    """The chapter called ``name`` (ValueError listing the chapters otherwise)."""
    for c in chapters():
        if c.name == name:
            return c
    raise ValueError(f"unknown chapter {name!r}; choose one of {list(chapter_names())}")


# --- the table of contents -------------------------------------------------------------------------------------
#: the pages of the book that are not chapters, by part (``None``: where the chapters without a package go)
OVERVIEW_PAGES: tuple[str, ...] = ("claims",)
REFERENCE_PAGES: tuple[str | None, ...] = ("departures", None, "generated_tasks", "cpu_profile_choice",
                                           "reference_tables")


def toc(registry: tuple[Chapter, ...] | None = None) -> dict[str, Any]:
    """The book's table of contents (Jupyter Book's ``_toc.yml`` as a dict): the overview, one part per paper with its
    chapters in order, and the reference part with the chapters that have no package."""
    registry = chapters() if registry is None else registry
    executed = lambda c: {"file": f"executed/{c.name}"}  # noqa: E731 - the executed copy `repro book` writes
    parts = [{"caption": "Overview", "chapters": [{"file": p} for p in OVERVIEW_PAGES]}]
    parts += [{"caption": caption, "chapters": [executed(c) for c in registry if c.paper == paper]}
              for paper, caption in PAPERS.items()]
    reference: list[dict[str, str]] = []
    for page in REFERENCE_PAGES:
        reference += [executed(c) for c in registry if not c.paper] if page is None else [{"file": page}]
    parts.append({"caption": "Reference", "chapters": reference})
    return {"format": "jb-book", "root": "intro", "parts": parts}


TOC_HEADER = ("# Table of contents of the book (Jupyter Book 1.x, sphinx-external-toc), written by `repro book` from\n"
              "# the chapter registry (repro.chapters): do not edit by hand; add a chapter package and its notebook.\n"
              "# Notebook pages are `executed/<name>`: the copies `repro book` executes from notebooks/<name>.md.\n")


def toc_text(registry: tuple[Chapter, ...] | None = None) -> str:
    """:func:`toc` as the YAML text of ``book/_toc.yml``."""
    return TOC_HEADER + yaml.safe_dump(toc(registry), sort_keys=False, allow_unicode=True)


def write_toc(path: Path, registry: tuple[Chapter, ...] | None = None) -> bool:
    """Write :func:`toc_text` to ``path`` when it differs; True when the file changed."""
    text = toc_text(registry)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


__all__ = ["Chapter", "OVERVIEW_PAGES", "PAPERS", "REFERENCE_PAGES", "ROLES", "chapter_names", "chapters", "discover",
           "get_chapter", "package_of", "package_order", "toc", "toc_text", "write_toc"]
