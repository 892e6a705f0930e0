"""Every experimental setting the two papers state, held against the ``paper`` profile and its chapter plans.

``book/reference/paper_settings.csv`` holds the papers' values only (one row per stated setting: the paper, its
section, the experiment, the setting, the value as a Python literal, and ``code``: where our value is read).  This
module reads our value at ``code`` and compares:

- ``<field>.<field>...``: a field of the paper profile (``p1_finetune.lr``, ``graft.steps``);
- ``family.<name>.<field>...``: a field of one of its P2 model families;
- ``plan.<notebook>.<field>`` (``plan.<notebook>@<family>.<field>`` for a P2 family): a field of that chapter's
  paper plan, resolved on the paper profile (``repro.<p1|p2>.<chapter>.plan.PLANS``);
- ``rule.<name>``: a value the code derives (:data:`RULES`: a step budget, a split size, a sampling rule).

A row whose value differs from ours must be named by a record of :mod:`repro.departures` (its ``code`` path in
the record's ``fields``); :func:`undeclared` lists those that are not.  ``tests/test_paper_settings.py`` fails on
any, so changing a paper-plan value without a record fails the test suite.
"""

from __future__ import annotations

import ast
import csv
import importlib
import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable

from repro.core.finetune import train
from repro.data import get_spec
from repro.data import hub_vision
from repro.data.tasks import SHORT_DEV_FRACTION
from repro.departures import DEPARTURES
from repro.p1.calibration_ood.jobs import jobs as calibration_jobs
from repro.p1.localization.plan import VariantRecipes
from repro.p1.multitask_continual.jobs import CONTINUAL_SEQUENCE
from repro.p1.multitask_continual.plan import mt_recipe
from repro.p2.arithmetic import NEGATION_THRESHOLD
from repro.p2.methods import LORA_RANK
from repro.p2.zoo import method_jobs
from repro.paths import reference_dir
from repro.plans import plan_for
from repro.profiles import PROFILES, Profile

SETTINGS_FILE = "paper_settings.csv"
COLUMNS = ("paper", "section", "experiment", "setting", "value", "code", "wording")


@dataclass(frozen=True)
class Setting:
    """One setting a paper states: where, for which experiment, its value, and where our value is read."""

    paper: str  # P1 | P2
    section: str  # the paper's section, table or figure ("App. A.2", "Table 4 caption")
    experiment: str
    setting: str
    value: Any  # the paper's value (parsed literal)
    code: str  # where ours is read (see the module doc)
    wording: str = ""  # the paper's wording, shortened, in our words


def load_settings() -> list[Setting]:
    """The rows of ``book/reference/paper_settings.csv`` (values parsed as Python literals)."""
    path = reference_dir() / SETTINGS_FILE
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for i, r in enumerate(rows, start=2):
        if tuple(r) != COLUMNS:
            raise ValueError(f"{path}: columns {tuple(r)}, expected {COLUMNS}")
        try:
            value = ast.literal_eval(r["value"])
        except (ValueError, SyntaxError) as e:
            raise ValueError(f"{path}:{i}: value {r['value']!r} is not a Python literal ({e})") from None
        out.append(Setting(r["paper"], r["section"], r["experiment"], r["setting"], value, r["code"], r["wording"]))
    return out


# --- our values ---------------------------------------------------------------------------------------------
def _fields(obj: Any, parts: list[str]) -> Any:
    for part in parts:
        obj = getattr(obj, part)
    return obj


def chapter_plan(notebook: str, profile: Profile | None = None, family: str = "") -> Any:
    """The paper plan of ``notebook`` (``p1_localization``, ``p2_disentanglement@nlp`` style family in
    ``family``), resolved on ``profile`` (default: the paper profile; P2 chapters on their family's profile)."""
    prof = profile or PROFILES["paper"]
    if notebook.startswith("p2_"):
        prof = prof.for_p2(family, notebook)
    module = importlib.import_module(f"repro.{notebook[:2]}.{notebook[3:]}.plan")
    return plan_for(module.PLANS, prof)


def _p1_steps(n_labels: int, k: int) -> Callable[[Profile], int]:
    return lambda p: p.p1_recipe([n_labels], k).steps


def _mt_ratio(p: Profile) -> float:
    """The multi-task model's steps over the mean single-task budget of its tasks (the paper: 8 times)."""

    plan = chapter_plan("p1_multitask_continual", p)
    k = plan.k or p.k_shot
    single = [p.p1_recipe([get_spec(t).num_labels], k).steps for t in plan.mt_tasks]
    return mt_recipe(p, plan).steps / (sum(single) / len(single))


def _task_sampling(p: Profile) -> str:


    return inspect.signature(train).parameters["task_sampling"].default


def _held_out(task: str, n_train: int, n_val: int = 0, n_test: int = 0) -> Callable[[Profile], float]:
    """The share of the stored train split held out as the task's validation split (through the real splitter)."""
    def rule(p: Profile) -> float:

        stored = {"train": list(range(n_train)), "val": list(range(n_val)), "test": list(range(n_test))}
        train, val, _ = hub_vision.official_splits(task, stored)
        return round(len(val) / n_train, 4) if set(val) <= set(stored["train"]) else 0.0
    return rule


def _calibration_k(p: Profile) -> int:
    """The k-shot the P1 §4 chapter trains at: the k of every fine-tune, graft and PEFT job it declares."""
    ks = {int(j.kwargs["k"]) for j in calibration_jobs(p) if j.kind in ("finetune", "graft", "adapter")}
    if len(ks) != 1:
        raise ValueError(f"the P1 §4 chapter trains at several k-shot sizes {sorted(ks)}")
    return ks.pop()


def _placement_k(p: Profile) -> int:
    """The k-shot of the Figs. 9-10 placement runs (p1_appendix's ``placement_k``: the k of their FT and grafts)."""
    return chapter_plan("p1_appendix", p).placement_k or p.k_shot


def _lota_iterations(p: Profile) -> int:
    """LoTA's mask-calibration iterations: its mask comes from the full FT run (repro.p2.methods.lota_mask_from)."""
    return p.family("vision").finetune.steps


def _table4_calibration(p: Profile) -> int:
    """Examples TaLoS's calibration reads per task: rounds x calibration examples (each round reads them all)."""
    fam = p.family("vision")
    return p.talos.rounds * fam.calibration_examples


def _p2_ft_scope(family: str) -> Callable[[Profile], str]:
    """What the zoo's FT and Linearized FT jobs of ``family`` train: the ``trainable`` scope of their job kwargs."""
    def rule(p: Profile) -> str:
        prof = p.for_p2(family)
        scopes = {method_jobs(prof, "p2_task_arithmetic", prof.p2_tasks[0], m, 13)[-1].kwargs["trainable"]
                  for m in ("ft", "linearized")}
        if len(scopes) != 1:
            raise ValueError(f"FT and Linearized FT train different scopes {sorted(scopes)}")
        return scopes.pop()
    return rule


def _one(value: Any) -> Callable[[Profile], Any]:
    return lambda p: value


def _lora_rank(p: Profile) -> tuple[int, ...]:

    return (LORA_RANK,)


def _negation_threshold(p: Profile) -> float:

    return NEGATION_THRESHOLD


def _l1(p: Profile) -> float:

    return VariantRecipes.l1


def _large_graft_ratio(p: Profile) -> float:
    plan = chapter_plan("p1_appendix", p)
    return plan.large_graft(p).steps / p.graft.steps


def _sentiment_tasks(p: Profile) -> tuple[str, ...]:
    """The tasks Table 5's "Sentiment" row trains on (ours: the sentiment tasks among the plan's large tasks)."""
    plan = chapter_plan("p1_appendix", p)
    return tuple(t for t in plan.large_tasks if t in ("MR", "CR", "MPQA", "SST-2"))


def _cost_model(p: Profile) -> str:
    """The model the §5.3 chapter times (Tables 3-4): its paper profile family's printed name."""
    return p.for_p2("", "p2_structure_cost").paper_model


def _large_dev(p: Profile) -> float:

    return SHORT_DEV_FRACTION


def _timed(p: Profile) -> str:
    plan = chapter_plan("p2_structure_cost", p)
    return f"{plan.iterations} iterations of one task after {plan.warmup} untimed"


def _continual(p: Profile) -> tuple[str, ...]:

    return CONTINUAL_SEQUENCE


#: ``rule.<name>``: values the code derives, read through the code that derives them
RULES: dict[str, Callable[[Profile], Any]] = {
    "p1_steps_binary_64": _p1_steps(2, 64),
    "p1_steps_binary_4096": _p1_steps(2, 4096),
    "p1_steps_4class_4096": _p1_steps(4, 4096),
    "p1_mt_steps_ratio": _mt_ratio,
    "p1_mt_task_sampling": _task_sampling,
    "p1_calibration_k": _calibration_k,
    "p1_placement_k": _placement_k,
    "p1_l1": _l1,
    "p1_large_graft_ratio": _large_graft_ratio,
    "p1_sentiment_tasks": _sentiment_tasks,
    "p1_continual_sequence": _continual,
    # what the code does where the paper states a procedure, not a number (the value names our choice)
    "p1_ft_grid": lambda p: ((p.p1_finetune.batch_size,), (p.p1_finetune.lr,)),
    "p1_ft_seed": _one("the data seed (13, 21, 42, 87, 100)"),
    "p1_peft_tuning": _one("one recipe: AdamW 5e-4, batch 16, 60 warm-up steps, linear decay"),
    "p1_cr_test": _one("SetFit/SentEval-CR test split"),
    "p2_resisc45_val_share": _held_out("RESISC45", 18900, 6300, 6300),
    "p2_gtsrb_val_share": _held_out("GTSRB", 26640, 0, 12630),
    "p2_ft_scope": _p2_ft_scope("vision"),
    "p2_ft_scope_nlp": _p2_ft_scope("nlp"),
    "p2_t5_templates": _one("our own prompts (repro.data.hub_nlp), answers as letters or numbers"),
    "p2_t5_early_stopping": _one(None),
    "p2_lota_calibration_iterations": _lota_iterations,
    "p2_table4_calibration_examples": _table4_calibration,
    "p2_talos_sparsity_grid": lambda p: (p.talos.sparsity,),
    "p2_lota_sparsity_grid": lambda p: (0.9,),
    "p2_lora_rank_grid": _lora_rank,
    "p2_posthoc_sparsity_grid": _one("each method's default (repro.p2.arithmetic), not searched"),
    "p2_negation_threshold": _negation_threshold,
    "p2_cost_models": lambda p: (_cost_model(p),),
    "p2_table4_model": _cost_model,
    "p2_timed_iterations": _timed,
    "p1_large_dev": _large_dev,
    "p1_track_tasks": lambda p: (chapter_plan("p1_appendix", p).track_task,),
}


def ours(code: str, profile: Profile | None = None) -> Any:
    """Our value at ``code`` (see the module doc) on ``profile`` (default: the paper profile)."""
    prof = profile or PROFILES["paper"]
    head, _, rest = code.partition(".")
    if head == "rule":
        if rest not in RULES:
            raise KeyError(f"no rule {rest!r}; known: {sorted(RULES)}")
        return RULES[rest](prof)
    if head == "family":
        name, _, path = rest.partition(".")
        return _fields(prof.family(name), path.split("."))
    if head == "plan":
        nb, _, field = rest.partition(".")
        nb, _, family = nb.partition("@")
        return _fields(chapter_plan(nb, prof, family), field.split("."))
    return _fields(prof, code.split("."))


def same(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-9 relative, lists as tuples."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), b, rel_tol=1e-9)
    return a == b


@dataclass(frozen=True)
class Check:
    """One setting against our value: ``status`` "equal", "declared" (a departure names it) or "undeclared"."""

    setting: Setting
    ours: Any
    status: str
    departures: tuple[str, ...] = ()


def check_settings(profile: Profile | None = None, settings: list[Setting] | None = None) -> list[Check]:
    """Every setting of the table against the paper profile (or ``profile``) and its chapter plans."""

    out = []
    for s in settings if settings is not None else load_settings():
        value = ours(s.code, profile)
        if same(value, s.value):
            out.append(Check(s, value, "equal"))
            continue
        keys = tuple(d.key for d in DEPARTURES if s.code in d.fields)
        out.append(Check(s, value, "declared" if keys else "undeclared", keys))
    return out


def undeclared(profile: Profile | None = None) -> list[Check]:
    """The settings where ours differs from the paper and no departure names the difference."""
    return [c for c in check_settings(profile) if c.status == "undeclared"]




__all__ = ["COLUMNS", "Check", "RULES", "SETTINGS_FILE", "Setting", "chapter_plan", "check_settings",
           "load_settings", "ours", "same", "undeclared"]
