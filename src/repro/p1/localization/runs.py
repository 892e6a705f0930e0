"""The region-size sweeps of the P1 §2-3 chapter (Fig. 2-5) and its Table 1 runs, on one plan.

:class:`LocalizationSweeps` binds a :class:`~repro.workbench.Workbench` to the chapter's
:class:`~repro.p1.localization.plan.LocalizationPlan` so the notebook asks for "the Fig. 2 sweep of SST-2" instead
of repeating k-shot, steps and evaluation subsets in every cell.  The sweeps themselves are
:func:`repro.p1.regions.sparsity_curve` (one evaluation loop, cached grafts).  Every model the claims compare
(curve points, FT references, lottery tickets) carries its per-example 0/1 ``correct`` on :meth:`subset`, so
:mod:`repro.p1.localization.claims` can pair them in a bootstrap; :func:`repro.p1.regions.plotted` drops it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pandas as pd
import torch

from repro.core.masks import Mask
from repro.data import Example, fixed_subset
from repro.p1.calibration import per_example
from repro.p1.localization.plan import LocalizationPlan, VariantRecipes
from repro.p1.regions import (REGIONS, evaluate_overrides, ft_and_graft, graftable_total, lottery_curve,
                              retrained_region, size_fields, sparsity_curve)
from repro.report.comparison import attach_printed, seed_rows
from repro.report.display import describe, style_table, plotting

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import FinetuneRecipe, Profile
    from repro.workbench import Workbench


@dataclass
class LocalizationSweeps:
    """Fig. 2-5 sweeps of ``wb`` under ``plan``: the first point is γ_base = top-``base`` with the profile's graft
    recipe (the Table 2 graft), the others ``plan.sweep_graft``; every point is scored on :meth:`subset`."""

    wb: "Workbench"
    plan: LocalizationPlan
    base: float
    seed: int
    _sgd: dict[str, list[dict]] = field(default_factory=dict, repr=False)

    def subset(self, task: str) -> Sequence[Example]:
        """The fixed, label-balanced test subset the figures score on (the whole test split for n_eval = 0)."""
        test = self.wb.task(task).test
        return fixed_subset(test, self.plan.n_eval)

    def curve(self, wb: "Workbench", task: str, tau: Mapping[str, torch.Tensor], label: str,
              regions: Sequence[str] = REGIONS, scope: str = "graftable",
              sparsities: Sequence[float] | None = None) -> list[dict]:
        """One model's sweep over the plan's sparsities (plus γ_base's point for the graftable scope)."""
        sparsities = self.plan.sparsities if sparsities is None else sparsities
        kw: dict[str, Any] = dict(scope=scope, k=self.plan.variant_k, examples=self.subset(task), label=label)
        rows = sparsity_curve(wb, task, tau, [self.base], regions, **kw) if scope == "graftable" else []
        rest = [s for s in sparsities if s != self.base]
        return rows + sparsity_curve(wb, task, tau, rest, regions, graft=self.plan.sweep_graft(wb.profile),
                                     **kw)

    def scored(self, wb: "Workbench", task: str, overrides: Mapping[str, torch.Tensor] | None) -> dict:
        """A model given as overrides scored on :meth:`subset` (fractions), with its per-example 0/1 ``correct``."""
        scores, pred = evaluate_overrides(wb, task, overrides, examples=self.subset(task))
        return {**scores, "correct": per_example(pred)["correct"]}

    def references(self, wb: "Workbench", task: str, tau: Mapping[str, torch.Tensor], label: str) -> list[dict]:
        """FT (full region) and pre-trained (empty region) scores on the same evaluation subset, with the size fields
        and per-example ``correct`` (what :func:`repro.p1.regions.evaluate_region` gives, plus ``correct``)."""
        shapes, total = wb.shapes("graftable"), graftable_total(wb)
        return [{"task": task, "label": label, "model": m, **self.scored(wb, task, wb.overrides(tau, mask=g)),
                 **size_fields(g, total)}
                for m, g in (("FT", Mask.full(shapes)), ("pre-trained", Mask.empty(shapes)))]

    def sgd_tau(self, task: str) -> dict[str, torch.Tensor]:
        """The default (SGD) fine-tuned task vector of the sweeps (a cached artifact)."""
        return self.wb.finetune(task, k=self.plan.variant_k, seed=self.seed)

    def sgd_curve(self, task: str) -> list[dict]:
        """The Fig. 2 sweep of the default (SGD) model of ``task``, computed once and shared by Figs. 3-5."""
        if task not in self._sgd:
            self._sgd[task] = self.curve(self.wb, task, self.sgd_tau(task), "SGD")
        return self._sgd[task]

    def lottery(self, task: str) -> list[dict]:
        """P1 Fig. 4b for the SGD model on :meth:`subset`: :func:`repro.p1.regions.lottery_curve` at the plan's
        densities (rows with per-example ``correct``)."""
        return lottery_curve(self.wb, task, self.sgd_tau(task), self.plan.lottery_densities,
                             examples=self.subset(task))


def table1_runs(wb: "Workbench", task: str, seed: int, *, k: int, base: float, retrain: "FinetuneRecipe",
                bitfit: "FinetuneRecipe") -> tuple[dict[str, dict], dict[str, Any]]:
    """P1 Table 1 for one (task, seed): FT, grafting, graft re-training and BitFit.

    Returns the four score dicts by method name, and the paired per-example correctness (``graft``, ``retrain``,
    ``bitfit``) with the sizes ``graft_count`` / ``bitfit_count`` that :mod:`repro.p1.localization.claims` takes, and
    the graft's metadata ``graft_meta``."""
    out = ft_and_graft(wb, task, k=k, seed=seed, base=base)
    rt = retrained_region(wb, task, out["mask"], k=k, seed=seed, recipe=retrain)
    bf = retrained_region(wb, task, "bias", k=k, seed=seed, recipe=bitfit)
    scores = {"FT": out["ft"], "Grafting": out["graft"], "Graft re-training": rt, "BitFit": bf}
    paired = {"graft": out["correct"]["graft"], "retrain": rt["correct"], "bitfit": bf["correct"],
              "graft_count": out["graft"]["count"], "bitfit_count": bf["count"], "graft_meta": out["meta"]}
    return scores, paired


def table2_runs(wb: "Workbench", plan: LocalizationPlan, seeds: Sequence[int], base: float
                ) -> tuple[list[dict], dict[tuple[str, int, int], dict]]:
    """P1 Table 2 on ``plan``: FT and its graft on γ_base = top-``base`` for every (task, k, seed), ``plan.tasks`` at
    ``profile.k_shot`` (the paper's 64-shot column) and ``plan.large_tasks`` at ``profile.k_shot_large`` (4096-shot).

    Returns the per-run score rows (one per method; ``paper_shots`` = the paper's column) and the
    :func:`~repro.p1.regions.ft_and_graft` outputs by ``(task, k, seed)`` that :mod:`repro.p1.localization.claims`
    takes."""
    profile = wb.profile
    shots = {profile.k_shot: 64, profile.k_shot_large: 4096}  # our k -> the paper's column it stands for
    runs: list[dict] = []
    outs: dict[tuple[str, int, int], dict] = {}
    for k, task_list in ((profile.k_shot, plan.tasks), (profile.k_shot_large, plan.large_tasks)):
        for task in task_list:
            for s in seeds:
                graft = plan.large_graft(profile) if k == profile.k_shot_large else None
                out = ft_and_graft(wb, task, k=k, seed=s, base=base, graft=graft)
                outs[(task, k, s)] = out
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


def graft_sizes(outs: Mapping[tuple[str, int, int], Mapping[str, Any]], n_graftable: int) -> pd.DataFrame:
    """The final size of every Table 2 graft (γ_base, learned size, its share of the graftable set, best step and
    its train + dev score), formatted for reading."""
    rows = []
    for (t, k, s), o in outs.items():
        history = o["meta"]["history"]
        rows.append({"task": t, "k": k, "seed": s, "γ_base": o["meta"]["base_count"], "graft": o["mask"].count(),
                     "share of graftable (%)": 100 * o["mask"].count() / n_graftable,
                     "best step": o["meta"]["best_step"],
                     "train+dev at best": max(h["score"] for h in history) if history else None})
    return style_table(pd.DataFrame(rows), counts=["γ_base", "graft", "seed", "k", "best step"])


def plot_curves(df: Any, refs: Any, title: str, hue: str = "region", style: str | None = None,
                col: str = "task") -> None:
    """Accuracy vs region size, one panel per ``col``, with the FT (dashed) and pre-trained (dotted) levels."""
    plt, sns = plotting()

    g = sns.relplot(data=df, x="sparsity_pct", y="acc", hue=hue, style=style, col=col, kind="line", marker="o",
                    height=3.4, aspect=1.2, facet_kws={"sharey": False})
    for ax, (name, _) in zip(g.axes.flat, df.groupby(col, sort=False)):
        for r in refs[refs[col] == name].itertuples():
            ax.axhline(r.acc, ls="--" if r.model == "FT" else ":", color="gray", lw=1)
            ax.annotate(r.model, (ax.get_xlim()[0], r.acc), fontsize=8, color="gray", va="bottom")
        ax.set(xscale="log", xlabel="region size (% of graftable parameters)", ylabel="test accuracy")
    g.figure.suptitle(title, y=1.03)
    plt.show()



def plot_bias_and_lottery(fig4a: Any, fig4b: Any, n_bias: int, n_graftable: int) -> None:
    """P1 Fig. 4: (a) bias-only vs unrestricted learned regions by size, (b) lottery-ticket (zero outside) vs graft
    by region density."""
    plt, sns = plotting()

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    sns.lineplot(data=fig4a, x="sparsity_pct", y="acc", hue="what", style="task", marker="o", ax=axes[0])
    axes[0].set(xscale="log", xlabel="region size (% of graftable)", ylabel="test accuracy",
                title=f"(a) bias-only regions ({n_bias:,} biases = {100 * n_bias / n_graftable:.2f}%)")
    sns.lineplot(data=fig4b, x="target_density", y="acc", hue="method", style="task", marker="o", ax=axes[1])
    axes[1].set(xlabel="region density (top |θ_ft|)", ylabel="test accuracy", title="(b) zero outside vs graft")
    plt.tight_layout()
    plt.show()


def plot_relative(df: Any, level: float = 0.95) -> None:
    """P1 Fig. 5: graft accuracy / FT accuracy by region size, one line per fine-tuning recipe, one panel per task,
    with the ``level`` the claim asks for."""
    plt, sns = plotting()

    g = sns.relplot(data=df.assign(rel=df.acc / df.ft_acc), x="sparsity_pct", y="rel", hue="label", col="task",
                    kind="line", marker="o", height=3.4, aspect=1.2)
    for ax in g.axes.flat:
        ax.set(xscale="log", xlabel="region size (% of graftable)", ylabel="graft accuracy / FT accuracy")
        ax.axhline(level, color="gray", ls="--", lw=1)
    plt.show()


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


__all__ = ["LocalizationSweeps", "graft_sizes", "plot_bias_and_lottery", "plot_curves", "plot_relative", "setup_text",
           "table1_runs", "table2_rows", "table2_runs"]
