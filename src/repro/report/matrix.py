"""The claims matrix: one row per claim, one column per *setting* whose results exist, and the paper's number.

A setting is a profile and a model family (:class:`Setting`): the cpu profile's text family (MiniLM, P1 and most
P2 pages), its vision family (EfficientNet-Lite0 on real images, P2 Tables 1-2 and Fig. 1), the paper profile's
text family (roberta-base / GPT-2, P1) and vision or T5 families (P2), ...  Which setting a results file belongs to
is read from the run itself (:func:`setting_of`): the profile is the folder, the family the ``model_family``
parameter it ran with (its runner record ``<name>.cache.json``, else its ``meta.params``), else the profile's
choice for that notebook.

:func:`discover` finds every results file under a results root, ``<root>/<profile>/<name>.json`` and one level
below, ``<root>/<folder>/<profile>/<name>.json`` (a second run of a notebook in another family, e.g. ``repro run
p2_task_arithmetic --profile cpu -p model_family text --output-dir results/text-family``), so a column appears for
any profile that was run (a cluster run of the paper profile into ``results/paper/`` fills the paper columns)
without code changes.  Test profiles (tiny random-init models: smoke, paper-smoke, gpu-check) are left out unless
they are the profile being built.

:func:`matrix_markdown` renders one table per paper (P1, P2, beyond the papers).  Each cell holds the verdict badge,
our number, the CI with n and seeds, and the data that decided it (real or generated); a setting with no result for
a claim says how to get one, and when the paper profile has no results at all its column says what running it
would cost (GPU-hours per notebook, from ``benchmarks/gpu_paper_path.json``) and how (``repro plan --profile
paper``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from repro.profiles import PROFILES
from repro.report.claims_page import BADGE, PAPERS, ci_text, data_of, md_escape, one_line, paper_of
from repro.report.results import ResultsError, claim_verdict, load_results

#: the order of families within a profile's columns
FAMILY_ORDER: tuple[str, ...] = ("text", "vision", "nlp", "nlp-base")
#: the profile whose columns are always shown (a placeholder column when it has no results)
PAPER_PROFILE = "paper"
#: a folder holding a second run of a notebook in another family: ``results/<family>-family/<profile>/...``
FAMILY_FOLDER = "{family}-family"
_DATA_WORDS = {"real": "real data", "generated": "generated data", "none": "no task data"}


@dataclass(frozen=True)
class Setting:
    """One column of the matrix: a profile and a model family."""

    profile: str
    family: str  # text | vision | nlp | nlp-base

    @property
    def key(self) -> str:
        return f"{self.profile}/{self.family}"

    @property
    def model(self) -> str:
        """The builder key of the family's model in the profile (``minilm``, ``efficientnet-lite0``, ...)."""
        prof = PROFILES.get(self.profile)
        if prof is None:
            return ""
        if self.family == "text":
            return prof.model
        try:
            return prof.family(self.family).model
        except ValueError:
            return ""

    @property
    def label(self) -> str:
        """The column header: ``cpu · vision family`` and the model."""
        return f"{self.profile} · {self.family} family"

    def runs(self, notebook: str) -> bool:
        """Whether a notebook can run in this family (P1 pages run only the text models; ``""``: any family)."""
        return self.family in ("text", "") or not notebook.startswith("p1")


@dataclass
class SettingRuns:
    """The results of one setting: notebook → results JSON (and where each was read from)."""

    setting: Setting
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)

    def claims(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """claim id → (notebook, claim)."""
        return {c["id"]: (nb, c) for nb, res in self.results.items() for c in res.get("claims", [])}


def default_family(profile: str, notebook: str) -> str:
    """The family ``notebook`` runs in ``profile`` when its ``model_family`` parameter is empty: ``text`` for P1
    and the non-paper pages, the profile's choice for a P2 page."""
    prof = PROFILES.get(profile)
    if prof is None or not notebook.startswith("p2"):
        return "text"
    return dict(prof.p2_notebook_families).get(notebook, prof.p2_model_family)


def is_test_profile(profile: str) -> bool:
    """A profile of tiny or random-init models whose verdicts mean nothing (smoke, paper-smoke, gpu-check)."""
    prof = PROFILES.get(profile)
    return prof is not None and prof.plan == "smoke"


def _sidecar(results_json: Path) -> dict[str, Any]:
    side = results_json.with_name(results_json.name.removesuffix(".json") + ".cache.json")
    try:
        info = json.loads(side.read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def setting_of(results_json: Path, results: Mapping[str, Any]) -> Setting:
    """The setting of one results file: the profile it names (else its folder) and the family it ran with."""
    meta = results.get("meta") or {}
    profile = str(meta.get("profile") or results_json.parent.name)
    notebook = str(meta.get("notebook") or results_json.stem)
    family = (_sidecar(results_json).get("params") or {}).get("model_family") \
        or (meta.get("params") or {}).get("model_family") or default_family(profile, notebook)
    return Setting(profile, str(family))


def _candidates(root: Path) -> list[Path]:
    """``<root>/<profile>/*.json`` first, then ``<root>/<folder>/<profile>/*.json``, each sorted."""
    found: list[Path] = []
    for depth in ("*", "*/*"):
        for folder in sorted(root.glob(depth)):
            if folder.is_dir() and folder.name in PROFILES:
                found += [p for p in sorted(folder.glob("*.json")) if not p.name.endswith(".cache.json")]
    return found


def discover(root: str | Path, check: Callable[[Path], str | None] | None = None, *,
             shown_profile: str = "") -> list[SettingRuns]:
    """Every setting with results under ``root``, in :func:`setting_order`.

    ``check(results_json)`` returns why a file is not a complete recorded run (None: it is; the book passes the
    runner's check, so a half-finished or hand-edited run is left out); unreadable files are left out too.  Test
    profiles are left out unless ``shown_profile`` is one.  A notebook found twice in one setting keeps its first
    file (``<root>/<profile>/`` before the folders below)."""
    root = Path(root)
    by_key: dict[str, SettingRuns] = {}
    for path in _candidates(root) if root.is_dir() else []:
        if is_test_profile(path.parent.name) and path.parent.name != shown_profile:
            continue
        if check is not None and check(path) is not None:
            continue
        try:
            res = load_results(path, require_nonempty=True)
        except (ResultsError, OSError, UnicodeDecodeError):
            continue
        setting = setting_of(path, res)
        runs = by_key.setdefault(setting.key, SettingRuns(setting))
        nb = str((res.get("meta") or {}).get("notebook") or path.stem)
        if nb not in runs.results:
            runs.results[nb] = res
            runs.paths[nb] = str(path)
    return sorted(by_key.values(), key=lambda r: setting_order(r.setting, shown_profile))


def setting_order(setting: Setting, shown_profile: str = "") -> tuple[int, str, int, str]:
    """Columns: the profile being built first, the paper profile last, the others by name; families in
    :data:`FAMILY_ORDER`."""
    rank = 0 if setting.profile == shown_profile else (2 if setting.profile == PAPER_PROFILE else 1)
    fam = FAMILY_ORDER.index(setting.family) if setting.family in FAMILY_ORDER else len(FAMILY_ORDER)
    return rank, setting.profile, fam, setting.family


def paper_gpu_hours(path: str | Path) -> dict[str, dict[str, float]]:
    """family → notebook → estimated GPU-hours of the paper profile (``gpu_hours`` of
    ``benchmarks/gpu_paper_path.json``); {} when the file is absent or unreadable."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, dict[str, float]] = {}
    for fam, per_nb in (data.get("gpu_hours") or {}).items():
        out[fam] = {nb: float(v["gpu_hours"]) for nb, v in per_nb.items()
                    if isinstance(v, Mapping) and isinstance(v.get("gpu_hours"), (int, float))}
    return out


def _hours_of(gpu_hours: Mapping[str, Mapping[str, float]], notebook: str, family: str) -> float | None:
    for fam in (family, default_family(PAPER_PROFILE, notebook), "vision"):
        if notebook in gpu_hours.get(fam, {}):
            return gpu_hours[fam][notebook]
    return None


def fmt_hours(h: float) -> str:
    """``113`` / ``7.0`` / ``0.14`` GPU-hours as printed (three significant digits at most, no false precision)."""
    return f"{h:.0f}" if h >= 100 else (f"{h:.1f}" if h >= 1 else f"{h:.2f}")


_SOURCE_WORDS = {"generated": "generated tasks", "hub": "the papers' datasets", "hub-vision": "the papers' datasets",
                 "hub-nlp": "the papers' datasets", "packaged-images": "real images from installed packages",
                 "synthetic-images": "synthetic images", "local": "local data"}


def family_data(profile: str, family: str) -> str:
    """The data a family of ``profile`` reads, in words: ``real SST-2, MR, CR and MPQA text, the other tasks
    generated``; ``real images from installed packages``."""
    prof = PROFILES[profile]
    if family != "text":
        return _SOURCE_WORDS.get(prof.family(family).data_source, prof.family(family).data_source)
    real = [t for t, _ in prof.packaged_tasks]
    if prof.data_source == "generated" and real:
        names = ", ".join(real[:-1]) + f" and {real[-1]}" if len(real) > 1 else real[0]
        return f"real {names} text, the other tasks generated"
    return _SOURCE_WORDS.get(prof.data_source, prof.data_source)


def families_line(profile: str, notebooks: Sequence[str]) -> str:
    """Which model family ran which pages of ``profile``: ``Text family (minilm): every page but p2_sensitivity,
    p2_task_arithmetic; vision family (efficientnet-lite0, packaged-images): p2_sensitivity, p2_task_arithmetic.``"""
    if profile not in PROFILES:
        return ""
    by_family: dict[str, list[str]] = {}
    for nb in notebooks:
        by_family.setdefault(default_family(profile, nb), []).append(nb)
    if len(by_family) < 2:
        return ""
    parts = []
    for fam, nbs in sorted(by_family.items(), key=lambda kv: kv[0] == "text"):  # the text family last
        pages = "every other page" if fam == "text" else ", ".join(nbs)
        parts.append(f"{fam} family ({Setting(profile, fam).model}; {family_data(profile, fam)}): {pages}")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def cell_lines(claim: Mapping[str, Any]) -> list[str]:
    """One setting's cell of a claim: badge and data kind, our number, the CI with n and seeds."""
    verdict = claim_verdict(claim)
    ours = claim.get("ours")
    return [f"{BADGE[verdict]} · {_DATA_WORDS[data_of(claim)]}",
            f"ours {md_escape(one_line(str(ours), 70)) if ours not in (None, '') else '—'}",
            md_escape(ci_text(claim.get("evidence")))]


def missing_cell(setting: Setting, notebook: str, gpu_hours: Mapping[str, Mapping[str, float]]) -> list[str]:
    """What a setting without a result for a claim of ``notebook`` says: the paper profile what it would cost, the
    others the command that runs it."""
    if not setting.runs(notebook):
        return ["n/a (P1 runs text models only)"]
    if setting.profile == PAPER_PROFILE:
        h = _hours_of(gpu_hours, notebook, setting.family)
        cost = f": ≈ {fmt_hours(h)} GPU-hours for {notebook}" if h is not None else ""
        return [f"not run{md_escape(cost)}", f"`repro plan --profile paper --only {notebook}`"]
    cmd = f"repro run {notebook} --profile {setting.profile}"
    if setting.family != default_family(setting.profile, notebook):
        out = FAMILY_FOLDER.format(family=setting.family)
        cmd += f" -p model_family {setting.family} --output-dir results/{out}"
    return ["not run", f"`{cmd}`"]


def _cell(lines: Sequence[str]) -> list[str]:
    """A list-table cell: the lines joined by hard line breaks (a trailing backslash)."""
    body = [ln + "\\" for ln in lines[:-1]] + [lines[-1]]
    return ["  - " + body[0]] + ["    " + ln for ln in body[1:]]


def matrix_markdown(settings: Sequence[SettingRuns], *, gpu_hours: Mapping[str, Mapping[str, float]] | None = None,
                    order: Iterable[str] = (), heading: str = "##") -> str:
    """The matrix section: per paper a table of one row per claim, one column per setting in ``settings`` (a paper
    column that says "not run" when no setting is of the paper profile), and the paper's printed number.

    ``order``: claim ids in the order to show them (the built profile's); other claims follow in the order met."""
    gpu_hours = dict(gpu_hours or {})
    columns: list[Setting] = [s.setting for s in settings]
    found: dict[str, dict[str, Mapping[str, Any]]] = {}  # claim id -> setting key -> claim
    where: dict[str, str] = {}  # claim id -> notebook (first seen)
    first: dict[str, Mapping[str, Any]] = {}
    for runs in settings:
        for cid, (nb, claim) in runs.claims().items():
            found.setdefault(cid, {})[runs.setting.key] = claim
            where.setdefault(cid, nb)
            first.setdefault(cid, claim)
    ids = [c for c in dict.fromkeys(list(order) + list(found)) if c in found]
    paper_run = any(s.profile == PAPER_PROFILE for s in columns)
    if not paper_run:
        columns.append(Setting(PAPER_PROFILE, ""))

    total = sum(gpu_hours.get("vision", {}).values())
    out = [f"{heading} Across settings", "",
           "Each claim in every setting this book found results for (`results/<profile>/`, and one folder below for "
           "a notebook run again in another family), beside the number the paper prints. A cell gives the verdict "
           "and the data that decided it, our number, and the statistic with its 95 % CI, test examples (n) and "
           "seeds. A column appears for every profile and model family with results, so a run of another profile "
           "fills its column at the next build.", ""]
    if not paper_run:
        out += ["The **paper** profile has not been run for this book"
                + (f": about **{fmt_hours(total)} GPU-hours** on one H200 for P1 and P2's vision family, estimated "
                   "from measured step times (`benchmarks/gpu_paper_path.json`)" if total else "")
                + "; `repro plan --profile paper` lists its jobs, and the README's *Reproduce the papers on a "
                  "cluster* runs them. Its cells give each notebook's share.", ""]
    sections = [(label, [c for c in ids if paper_of(first[c]) == p and not first[c].get("beyond_paper")], p)
                for p, label in PAPERS.items()]
    sections.append(("Beyond the papers", [c for c in ids if first[c].get("beyond_paper")], ""))
    for label, cids, paper in sections:
        if not cids:
            continue
        cols = [s for s in columns if paper != "p1" or s.family in ("text", "")]
        out += [f"{heading}# {label}", "", "```{list-table}", ":header-rows: 1", ":class: claims-matrix", "",
                "* - claim"]
        for s in cols:
            head = [f"**{s.profile}**" + (f" · {s.family} family" if s.family else "")]
            if s.model:
                head.append(f"`{s.model}`")
            elif not s.family:
                head.append("not run")
            out += _cell(head)
        out += _cell(["**paper's number**"])
        for cid in cids:
            claim = first[cid]
            out += [f"* - `{cid}`\\", f"    {md_escape(one_line(claim['text'], 90))}"]
            for s in cols:
                mine = found[cid].get(s.key) if s.family else None
                out += _cell(cell_lines(mine) if mine is not None else missing_cell(s, where[cid], gpu_hours))
            printed = claim.get("paper")
            out += _cell([md_escape(one_line(str(printed), 70)) if printed not in (None, "") else "—"])
        out += ["```", ""]
    return "\n".join(out)


__all__ = ["FAMILY_FOLDER", "families_line", "family_data", "PAPER_PROFILE", "Setting", "SettingRuns", "cell_lines", "default_family", "discover",
           "fmt_hours", "is_test_profile", "matrix_markdown", "missing_cell", "paper_gpu_hours", "setting_of",
           "setting_order"]
