"""The region-size sweeps of the P1 §2-3 chapter (Fig. 2-5) and its Table 1-2 runs, on the chapter's declared jobs.

Every fine-tuned model and learned region comes from a :class:`repro.jobs.JobSpec` that
:func:`repro.p1.localization.jobs.jobs` declares, obtained through the notebook's
:class:`~repro.jobcall.ChapterJobs` (type :class:`repro.jobs.Artifacts`): Table 2 is its "table2" grafts, Table 1
its "table1-retrain" re-trainings (their grafts are the upstream jobs) and "table1-bitfit" runs, each sweep of
Figs. 2-5 one model (:data:`~repro.p1.localization.jobs.MODEL_ROLES`) and the grafts declared on it
(:func:`curve_grafts`).  :class:`LocalizationSweeps` binds the artifacts to the chapter's plan, so the notebook asks
for "the Fig. 2 sweep of SST-2" instead of repeating evaluation subsets in every cell; the sweeps themselves are
:func:`repro.p1.regions.sparsity_curve` (one evaluation loop).  Every model the claims compare (curve points, FT
references, lottery tickets) carries its per-example 0/1 ``correct`` on :meth:`LocalizationSweeps.subset`, so
:mod:`repro.p1.localization.claims` can pair them in a bootstrap; :func:`repro.p1.regions.plotted` drops it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch

from repro.core.masks import Mask
from repro.data import Example, fixed_subset
from repro.jobs import Artifacts, JobSpec, ref
from repro.p1.calibration import per_example
from repro.p1.localization.jobs import MODEL_ROLES
from repro.p1.localization.plan import LocalizationPlan, VariantRecipes
from repro.p1.regions import (REGIONS, evaluate_overrides, ft_and_graft, graftable_total, lottery_curve,
                              retrained_region, size_fields, sparsity_curve)
from repro.report.comparison import attach_printed, seed_rows
from repro.report.display import describe

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import Profile


def curve_grafts(jobs: Artifacts, model: JobSpec, scope: str = "graftable") -> dict[float, JobSpec]:
    """The declared learned regions of ``model``'s sweep in ``scope``, by target sparsity, in declaration order
    (γ_base's point first).  γ_base's graft may be a Table 2 / Table 1 artifact (it keeps that first role); where a
    Table 2 graft with its own recipe shares the model and the sparsity, the one with the sweep's role is the point."""
    out: dict[float, JobSpec] = {}
    for g in jobs.select(kind="graft", vector=ref(model), scope=scope):
        s = g.kwargs["base"]
        if s not in out or (g.role == model.role and out[s].role != model.role):
            out[s] = g
    return out


@dataclass
class LocalizationSweeps:
    """Fig. 2-5 sweeps of the declared models under ``plan``: every point is a declared graft
    (:func:`curve_grafts`), scored on :meth:`subset`; the SGD model's sweep is computed once, shared by Figs. 2-5."""

    jobs: Artifacts
    plan: LocalizationPlan
    _sgd: dict[str, list[dict]] = field(default_factory=dict, repr=False)

    def subset(self, task: str) -> Sequence[Example]:
        """The fixed, label-balanced test subset the figures score on (the whole test split for n_eval = 0)."""
        return fixed_subset(self.jobs.wb.task(task).test, self.plan.n_eval)

    def model(self, label: str, task: str) -> JobSpec:
        """The declared fine-tuned model of the sweep ``label`` (a key of
        :data:`~repro.p1.localization.jobs.MODEL_ROLES`: "SGD", "standard FT (linear head)", "AdamW", ...) on
        ``task``."""
        return self.jobs.one(kind="finetune", role=MODEL_ROLES[label], tasks=[task])

    def curve(self, jobs: Artifacts, model: JobSpec, label: str, regions: Sequence[str] = REGIONS,
              scope: str = "graftable") -> list[dict]:
        """One model's sweep (``jobs``: the artifacts of the Workbench that evaluates it) over its declared grafts
        in ``scope``."""
        task = model.kwargs["tasks"][0]
        learned = {s: jobs.value(g) for s, g in curve_grafts(jobs, model, scope).items()}
        return sparsity_curve(jobs.wb, task, jobs.value(model), list(learned), regions, scope=scope,
                              learned=learned, examples=self.subset(task), label=label)

    def scored(self, wb: Any, task: str, overrides: Mapping[str, torch.Tensor] | None) -> dict:
        """A model given as overrides scored on :meth:`subset` (fractions), with its per-example 0/1 ``correct``."""
        scores, pred = evaluate_overrides(wb, task, overrides, examples=self.subset(task))
        return {**scores, "correct": per_example(pred)["correct"]}

    def references(self, jobs: Artifacts, model: JobSpec, label: str) -> list[dict]:
        """FT (full region) and pre-trained (empty region) scores of ``model`` on the same evaluation subset, with
        the size fields and per-example ``correct`` (what :func:`repro.p1.regions.evaluate_region` gives, plus
        ``correct``)."""
        wb, task, tau = jobs.wb, model.kwargs["tasks"][0], jobs.value(model)
        shapes, total = wb.shapes("graftable"), graftable_total(wb)
        return [{"task": task, "label": label, "model": m, **self.scored(wb, task, wb.overrides(tau, mask=g)),
                 **size_fields(g, total)}
                for m, g in (("FT", Mask.full(shapes)), ("pre-trained", Mask.empty(shapes)))]

    def sgd_curve(self, task: str) -> list[dict]:
        """The Fig. 2 sweep of the default (SGD) model of ``task``, computed once and shared by Figs. 3-5."""
        if task not in self._sgd:
            self._sgd[task] = self.curve(self.jobs, self.model("SGD", task), "SGD")
        return self._sgd[task]

    def lottery(self, task: str) -> list[dict]:
        """P1 Fig. 4b for the SGD model on :meth:`subset`: :func:`repro.p1.regions.lottery_curve` at the plan's
        densities (rows with per-example ``correct``)."""
        return lottery_curve(self.jobs.wb, task, self.jobs.value(self.model("SGD", task)),
                             self.plan.lottery_densities, examples=self.subset(task))


def fig2_runs(sw: LocalizationSweeps, tasks: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """P1 Fig. 2: the SGD model's sweep of every task and its FT / pre-trained references."""
    rows, refs = [], []
    for task in tasks:
        rows += sw.sgd_curve(task)
        refs += sw.references(sw.jobs, sw.model("SGD", task), "SGD")
    return rows, refs


def fig3_runs(sw: LocalizationSweeps, linear: Artifacts, tasks: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """P1 Fig. 3: the linear-head model's learned and movement regions (``linear``: the artifacts of the
    linear-head Workbench), beside the frozen-head SGD model's; and the linear-head model's references."""
    label = "standard FT (linear head)"
    rows, refs = [], []
    for task in tasks:
        model = linear.one(kind="finetune", role=MODEL_ROLES[label], tasks=[task])
        rows += sw.curve(linear, model, label, regions=("learned", "movement"))
        refs += sw.references(linear, model, label)
        rows += [dict(r, label="frozen zero-shot head") for r in sw.sgd_curve(task)
                 if r["region"] in ("learned", "movement")]
    return rows, refs


def fig4a_runs(sw: LocalizationSweeps, tasks: Sequence[str], sparsities: Sequence[float]) -> list[dict]:
    """P1 Fig. 4a: the SGD model's bias-only learned and movement regions (its declared bias grafts), beside its
    unrestricted learned regions at ``sparsities``."""
    rows = []
    for task in tasks:
        rows += sw.curve(sw.jobs, sw.model("SGD", task), "bias only", regions=("learned", "movement"), scope="bias")
        rows += [r for r in sw.sgd_curve(task) if r["region"] == "learned" and r["target_sparsity"] in sparsities]
    return rows


def fig5_runs(sw: LocalizationSweeps, tasks: Sequence[str]) -> tuple[list[dict], dict[tuple[str, str], Any]]:
    """P1 Fig. 5: the learned regions of the SGD, AdamW and AdamW + ℓ1 models, each row with its model's FT accuracy
    ``ft_acc`` and moved entries ``moved``; and each FT model's per-example correctness by ``(task, label)``."""
    rows, ft_correct = [], {}
    wb = sw.jobs.wb
    for task in tasks:
        for label in ("SGD", "AdamW", "AdamW + l1"):
            model = sw.model(label, task)
            tau = sw.jobs.value(model)
            ft = sw.scored(wb, task, wb.overrides(tau))
            ft_correct[(task, label)] = ft["correct"]
            curve = [r for r in sw.sgd_curve(task) if r["region"] == "learned"] if label == "SGD" else \
                sw.curve(sw.jobs, model, label, regions=("learned",))
            moved = sum(int((v != 0).sum()) for v in tau.values())
            rows += [dict(r, ft_acc=ft["acc"], moved=moved) for r in curve]
    return rows, ft_correct


def table1_runs(jobs: Artifacts) -> tuple[list[dict], dict[tuple[str, int], dict[str, Any]]]:
    """P1 Table 1 for every declared (task, seed): FT, grafting, graft re-training and BitFit.

    Returns the per-run score rows (one per method) and, by ``(task, seed)``, the paired per-example correctness
    (``graft``, ``retrain``, ``bitfit``) with the sizes ``graft_count`` / ``bitfit_count`` that
    :mod:`repro.p1.localization.claims` takes, and the graft's metadata ``graft_meta``."""
    wb = jobs.wb
    runs: list[dict] = []
    paired: dict[tuple[str, int], dict[str, Any]] = {}
    for retrain in jobs.select(kind="finetune", role="table1-retrain"):
        task, seed, k = retrain.kwargs["tasks"][0], retrain.kwargs["seed"], retrain.kwargs["k"]
        out = ft_and_graft(jobs, jobs.deps(retrain, "graft")[0])
        rt = retrained_region(jobs, retrain)
        bf = retrained_region(jobs, jobs.one(kind="finetune", role="table1-bitfit", tasks=[task], seed=seed))
        metric = wb.model.specs[task].metric
        for method, r in (("FT", out["ft"]), ("Grafting", out["graft"]), ("Graft re-training", rt), ("BitFit", bf)):
            runs.append({"task": task, "method": method, "shots": k, "sparsity": r["sparsity_pct"],
                         "count": r["count"], metric: r["value"], "ece": r["ece"]})
        paired[(task, seed)] = {"graft": out["correct"]["graft"], "retrain": rt["correct"], "bitfit": bf["correct"],
                                "graft_count": out["graft"]["count"], "bitfit_count": bf["count"],
                                "graft_meta": out["meta"]}
    return runs, paired


def table1_rows(runs: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The Table 1 results rows: :func:`table1_runs` averaged over seeds, with the paper's printed cells."""
    rows = seed_rows(runs, ["task", "method", "shots"], {"acc": "acc", "f1": "f1", "ece": "ece"})
    return attach_printed(rows, "p1", 1, lambda r: dict(task=r["task"], method=r["method"], metric=r["metric"]))


def table2_runs(jobs: Artifacts) -> tuple[list[dict], dict[tuple[str, int, int], dict]]:
    """P1 Table 2: FT and its graft on γ_base for every declared "table2" graft (``plan.tasks`` at
    ``profile.k_shot``, the paper's 64-shot column, and ``plan.large_tasks`` at ``profile.k_shot_large``, 4096-shot).

    Returns the per-run score rows (one per method; ``paper_shots`` = the paper's column) and the
    :func:`~repro.p1.regions.ft_and_graft` outputs by ``(task, k, seed)`` that :mod:`repro.p1.localization.claims`
    takes."""
    wb = jobs.wb
    shots = {wb.profile.k_shot: 64, wb.profile.k_shot_large: 4096}  # our k -> the paper's column it stands for
    runs: list[dict] = []
    outs: dict[tuple[str, int, int], dict] = {}
    for graft in jobs.select(kind="graft", role="table2"):
        task, k, s = graft.kwargs["task"], graft.kwargs["k"], graft.kwargs["seed"]
        out = outs[(task, k, s)] = ft_and_graft(jobs, graft)
        metric = wb.model.specs[task].metric
        for method, r in (("FT", out["ft"]), ("Graft", out["graft"])):
            runs.append({"task": task, "method": method, "shots": k, "paper_shots": shots.get(k),
                         "pair": wb.model.specs[task].pair, "sparsity": r["sparsity_pct"],
                         "count": r["count"], metric: r["value"], "ece": r["ece"],
                         "agreement": r.get("agreement")})
    return runs, outs


def table2_rows(runs: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The Table 2 results rows: :func:`table2_runs` averaged over seeds, with the paper's printed cells."""
    rows = seed_rows(runs, ["task", "method", "shots", "paper_shots"],
                     {"acc": "acc", "f1": "f1", "ece": "ece", "agreement": "agreement"})
    return attach_printed(rows, "p1", 2, lambda r: dict(task=r["task"], method=r["method"], shots=r["paper_shots"],
                                                        metric=r["metric"]))


def setup_text(profile: "Profile", plan: Mapping[str, Any], seeds: Sequence[int], recipes: "VariantRecipes",
               n_graftable: int) -> str:
    """What the chapter runs in this profile, as the lines its set-up cell prints."""
    base = profile.graft_base_sparsity
    return "\n".join([
        f"profile {profile.name}: {profile.description}",
        f"seeds {list(seeds)}; k-shot {profile.k_shot} ('64-shot') and {profile.k_shot_large} ('4096-shot'); "
        f"graftable set {n_graftable:,} parameters, so top-{base:g} = {int(base * n_graftable)} parameters",
        f"plan: {describe(plan)}",
        f"recipes: SGD {describe(recipes.sgd)}\n AdamW {describe(recipes.adamw)}\n re-training "
        f"{describe(recipes.retrain)}\n BitFit {describe(recipes.bitfit)}"]
        + ([f"steps = 0: the paper's budget {profile.p1_budget.per_example}·n·min(k, {profile.p1_budget.shot_cap}) "
            f"for a task with n labels at k per label (App. A.2)"] if profile.p1_budget else []))


__all__ = ["LocalizationSweeps", "curve_grafts", "fig2_runs", "fig3_runs", "fig4a_runs", "fig5_runs", "setup_text",
           "table1_rows", "table1_runs", "table2_rows", "table2_runs"]
