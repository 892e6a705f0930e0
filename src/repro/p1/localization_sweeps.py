"""The region-size sweeps of the P1 §2-3 chapter (Fig. 2-5) and its Table 1 runs, on one plan.

:class:`LocalizationSweeps` binds a :class:`~repro.workbench.Workbench` to the chapter's
:class:`~repro.p1.localization_plan.LocalizationPlan` so the notebook asks for "the Fig. 2 sweep of SST-2" instead
of repeating k-shot, steps and evaluation subsets in every cell.  The sweeps themselves are
:func:`repro.p1.regions.sparsity_curve` (one evaluation loop, cached grafts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch

from repro.core.masks import Mask
from repro.data import Example, balanced_sample
from repro.p1.localization_plan import LocalizationPlan
from repro.p1.regions import REGIONS, evaluate_region, ft_and_graft, retrained_region, sparsity_curve

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import FinetuneRecipe
    from repro.workbench import Workbench


@dataclass
class LocalizationSweeps:
    """Fig. 2-5 sweeps of ``wb`` under ``plan``: the first point is γ_base = top-``base`` with the profile's graft
    steps (the Table 2 graft), the others ``plan.sweep_steps``; every point is scored on :meth:`subset`."""

    wb: "Workbench"
    plan: LocalizationPlan
    base: float
    seed: int
    _sgd: dict[str, list[dict]] = field(default_factory=dict, repr=False)

    def subset(self, task: str) -> Sequence[Example]:
        """The fixed, label-balanced test subset the figures score on (the whole test split for n_eval = 0)."""
        test = self.wb.task(task).test
        return test if not self.plan.n_eval else balanced_sample(test, self.plan.n_eval, seed=0)

    def curve(self, wb: "Workbench", task: str, tau: Mapping[str, torch.Tensor], label: str,
              regions: Sequence[str] = REGIONS, scope: str = "graftable",
              sparsities: Sequence[float] | None = None) -> list[dict]:
        """One model's sweep over the plan's sparsities (plus γ_base's point for the graftable scope)."""
        sparsities = self.plan.sparsities if sparsities is None else sparsities
        kw: dict[str, Any] = dict(scope=scope, k=self.plan.variant_k, examples=self.subset(task), label=label)
        rows = sparsity_curve(wb, task, tau, [self.base], regions, **kw) if scope == "graftable" else []
        rest = [s for s in sparsities if s != self.base]
        return rows + sparsity_curve(wb, task, tau, rest, regions, steps=self.plan.sweep_steps, **kw)

    def references(self, wb: "Workbench", task: str, tau: Mapping[str, torch.Tensor], label: str) -> list[dict]:
        """FT (full region) and pre-trained (empty region) scores on the same evaluation subset."""
        shapes = wb.shapes("graftable")
        return [{"task": task, "label": label, "model": m,
                 **evaluate_region(wb, task, tau, g, examples=self.subset(task))}
                for m, g in (("FT", Mask.full(shapes)), ("pre-trained", Mask.empty(shapes)))]

    def sgd_tau(self, task: str) -> dict[str, torch.Tensor]:
        """The default (SGD) fine-tuned task vector of the sweeps (a cached artifact)."""
        return self.wb.finetune(task, k=self.plan.variant_k, seed=self.seed)

    def sgd_curve(self, task: str) -> list[dict]:
        """The Fig. 2 sweep of the default (SGD) model of ``task``, computed once and shared by Figs. 3-5."""
        if task not in self._sgd:
            self._sgd[task] = self.curve(self.wb, task, self.sgd_tau(task), "SGD")
        return self._sgd[task]


def table1_runs(wb: "Workbench", task: str, seed: int, *, k: int, base: float, retrain: "FinetuneRecipe",
                bitfit: "FinetuneRecipe") -> tuple[dict[str, dict], dict[str, Any]]:
    """P1 Table 1 for one (task, seed): FT, grafting, graft re-training and BitFit.

    Returns the four score dicts by method name, and the paired per-example correctness (``graft``, ``retrain``,
    ``bitfit``) with the sizes ``graft_count`` / ``bitfit_count`` that :mod:`repro.p1.claims_localization` takes."""
    out = ft_and_graft(wb, task, k=k, seed=seed, base=base)
    rt = retrained_region(wb, task, out["mask"], k=k, seed=seed, recipe=retrain)
    bf = retrained_region(wb, task, "bias", k=k, seed=seed, recipe=bitfit)
    scores = {"FT": out["ft"], "Grafting": out["graft"], "Graft re-training": rt, "BitFit": bf}
    paired = {"graft": out["correct"]["graft"], "retrain": rt["correct"], "bitfit": bf["correct"],
              "graft_count": out["graft"]["count"], "bitfit_count": bf["count"]}
    return scores, paired


def plot_curves(df: Any, refs: Any, title: str, hue: str = "region", style: str | None = None,
                col: str = "task") -> None:
    """Accuracy vs region size, one panel per ``col``, with the FT (dashed) and pre-trained (dotted) levels."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    g = sns.relplot(data=df, x="sparsity_pct", y="acc", hue=hue, style=style, col=col, kind="line", marker="o",
                    height=3.4, aspect=1.2, facet_kws={"sharey": False})
    for ax, (name, _) in zip(g.axes.flat, df.groupby(col, sort=False)):
        for r in refs[refs[col] == name].itertuples():
            ax.axhline(r.acc, ls="--" if r.model == "FT" else ":", color="gray", lw=1)
            ax.annotate(r.model, (ax.get_xlim()[0], r.acc), fontsize=8, color="gray", va="bottom")
        ax.set(xscale="log", xlabel="region size (% of graftable parameters)", ylabel="test accuracy")
    g.figure.suptitle(title, y=1.03)
    plt.show()


__all__ = ["LocalizationSweeps", "plot_curves", "table1_runs"]
