"""P1 §5.1 skill localization in a multi-task (MT) model: per-task regions, their overlap, transfer and unions.

One model is fine-tuned jointly on several tasks (one fine-tune job of several tasks); for each task i a region γ_i
is learned with P1 Eq. 3 on task i's data only, with θ_ft = the MT model and γ_base = ∅ (``base=0.0``; App. C.2
also uses top-1e-5 / top-1e-4): graft jobs the chapter declares, which :func:`region_study` obtains through
:class:`repro.jobs.Artifacts`.  Then (Fig. 8):

- (a) the asymmetric overlap |γ_i ∩ γ_j| / |γ_j| (:func:`overlap_rows`, :meth:`repro.core.masks.Mask.overlap`);
- (b) the relative accuracy gain Rel_{γ_i, t_j} of P1 Eq. 5 (:func:`relative_gain`, :func:`transfer_rows`);
- (c) the same for unions γ_G = ∪_{i∈G} γ_i of task groups (:func:`union_regions`);
- (d) the unions after 10 gradient steps of the graft objective on the joint loss Σ_{i∈G} L_i(γ)
  (:func:`learn_joint_graft`, cached by :func:`tune_union`).

None of this is in the official code (issue #2).  Our reading of "slightly fine-tuning the union region γ_G to
optimize the joint loss Σ_{i∈G} L_i(γ) by only taking 10 gradient steps": L_i(γ) is the graft loss of Eq. 2, so
the 10 steps are steps of the graft optimization (Eq. 3-4) started from γ_base = γ_G, with the task losses
summed; the parameter values stay those of the MT model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch

from repro.artifacts import tensor_digest
from repro.data import fixed_subset
from repro.core.grafting import learn_joint_graft
from repro.core.masks import Mask
from repro.core.metrics import accuracy
from repro.jobs import JobSpec, ref
from repro.workbench import MASK
from repro.jobcall import graft_recipe_of, register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts
    from repro.profiles import GraftRecipe
    from repro.workbench import Workbench


def relative_gain(p_graft: float, p_pre: float, p_mt: float) -> float:
    """P1 Eq. 5: Rel_{γ,t} = (P_{γ,t} − P_{0,t}) / (P_{1,t} − P_{0,t}); NaN when the MT model gained nothing."""
    gain = p_mt - p_pre
    if abs(gain) < 1e-12:
        return float("nan")
    return (p_graft - p_pre) / gain


def overlap_rows(regions: Mapping[str, Mask]) -> list[dict]:
    """P1 Fig. 8a: one row per (i, j) with overlap = |γ_i ∩ γ_j| / |γ_j| (row i, column j)."""
    rows = []
    for i, gi in regions.items():
        for j, gj in regions.items():
            rows.append({"row": i, "col": j, "overlap": gi.overlap(gj), "size_row": gi.count(),
                         "size_col": gj.count()})
    return rows


def union_regions(regions: Mapping[str, Mask], groups: Mapping[str, Sequence[str]]) -> dict[str, Mask]:
    """γ_G = ∪_{i∈G} γ_i for every named group (P1 Fig. 8c); unknown task names fail naming the valid ones."""
    out = {}
    for g, members in groups.items():
        missing = [t for t in members if t not in regions]
        if missing:
            raise KeyError(f"group {g!r}: no region for {missing}; regions exist for {sorted(regions)}")
        out[g] = Mask.union(regions[t] for t in members)
    return out


# --------------------------------------------------------------------------------------------------------
# Rel matrices
# --------------------------------------------------------------------------------------------------------
def transfer_rows(wb: "Workbench", regions: Mapping[str, Mask], tasks: Sequence[str],
                  vector: Mapping[str, torch.Tensor], split: str = "test", limit: int | None = None,
                  kind: str = "single") -> list[dict]:
    """P1 Fig. 8b-d: accuracy of θ_pre + γ_r ⊙ τ_MT on every task, and Rel_{γ_r, t} (Eq. 5).

    One row per (region r, task t): ``acc`` (P_{γ,t}), ``pre`` (P_{0,t}), ``mt`` (P_{1,t}), ``rel``, all
    accuracies as fractions on the same (sub-sampled) ``split``.  ``kind`` labels the rows (single/union/tuned).
    """
    ref = mt_reference(wb, tasks, vector, split, limit)
    rows = []
    for r, mask in regions.items():
        ov = wb.overrides(vector, 1.0, mask)
        for t in tasks:
            acc = _acc(wb, t, ov, split, limit)
            rows.append({"kind": kind, "region": r, "task": t, "acc": acc, "pre": ref[t]["pre"],
                         "mt": ref[t]["mt"], "rel": relative_gain(acc, ref[t]["pre"], ref[t]["mt"]),
                         "region_size": mask.count(), "density": mask.density()})
    return rows


def mt_reference(wb: "Workbench", tasks: Sequence[str], vector: Mapping[str, torch.Tensor], split: str = "test",
                 limit: int | None = None) -> dict[str, dict[str, float]]:
    """P_{0,t} (pre-trained) and P_{1,t} (MT model) accuracies per task, memoized on the workbench."""
    memo = wb.__dict__.setdefault("_mt_reference", {})
    key_vec = tensor_digest(vector)
    out = {}
    for t in tasks:
        key = (t, split, limit, key_vec)
        if key not in memo:
            memo[key] = {"pre": _acc(wb, t, None, split, limit), "mt": _acc(wb, t, wb.overrides(vector), split, limit)}
        out[t] = memo[key]
    return out


def _acc(wb: "Workbench", task: str, overrides, split: str, limit: int | None) -> float:
    ex = fixed_subset(wb.task(task).split(split), limit)
    pred = wb.predict(task, examples=ex, overrides=overrides)
    return accuracy(pred.preds, pred.labels)


def tune_union(wb: "Workbench", tasks: Sequence[str], vector: Mapping[str, torch.Tensor], union: Mask,
               recipe: GraftRecipe | None = None, seed: int | None = None, tag: str = "") -> tuple[Mask, dict]:
    """Cached :func:`repro.core.grafting.learn_joint_graft` of ``union`` on ``tasks``' k-shot data with ``recipe``
    (None: the profile's graft recipe with the paper's 10 steps; ``max_examples`` is per task)."""
    p = wb.profile
    seed = wb.seed if seed is None else seed
    recipe = replace(p.graft, steps=10) if recipe is None else recipe
    datas = {t: wb.task(t, seed=seed) for t in tasks}
    names = wb.names("graftable")
    delta = {n: vector[n] if n in vector else torch.zeros_like(wb.pre[n]) for n in names}
    config = {"kind": "joint-graft", "tasks": list(tasks), "k": p.k_shot, "seed": seed,
              "base": f"mask:{union.count()}:{union.digest()}", "lr": recipe.lr, "steps": recipe.steps,
              "bs": recipe.batch_size, "max_examples": recipe.max_examples, "b": recipe.sigmoid_bias,
              "vector": tensor_digest(delta), **wb.data_key(model=False, max_length=False), "tag": tag,
              **({"max_dev": recipe.max_dev} if recipe.max_dev is not None else {})}

    def compute() -> tuple[Mask, dict]:
        res = learn_joint_graft(wb.model, tasks, delta, {t: d.train for t, d in datas.items()},
                                {t: d.dev for t, d in datas.items()}, union, recipe, seed=seed,
                                eval_batch_size=p.eval_batch_size)
        return res.mask, {"history": res.history, "best_step": res.best_step, "base_count": res.base_count,
                          "count": res.mask.count(), "density": res.mask.density(), **res.degenerate()}

    return wb.cached("graft", config, compute, MASK)


# --------------------------------------------------------------------------------------------------------
# the whole Fig. 8 study, and its summaries
# --------------------------------------------------------------------------------------------------------
def region_study(jobs: "Artifacts", vector: JobSpec, groups: Mapping[str, Sequence[str]], *, base: float = 0.0,
                 tuned: bool = False, split: str = "test", limit: int | None = None) -> dict[str, Any]:
    """P1 Fig. 8 (and 11-13 with another ``base`` / MT model) for the MT model of the declared fine-tune job
    ``vector``: its declared per-task regions γ_i on γ_base = top-``base`` (P1 Eq. 3 on task i's data), (a) overlap
    rows, (b) single-region Rel rows, and with ``groups`` the unions γ_G (c) and, when ``tuned``, the declared
    joint-loss grafts of the unions (d, :func:`tune_union`).

    Returns ``{"tau", "regions", "metas", "overlap", "single"}`` and, with groups, ``"unions"``, ``"union"`` (rows),
    with ``tuned`` ``"tuned_regions"``, ``"tuned"`` (rows): masks by task / group, rows as :func:`transfer_rows`."""
    wb, tasks = jobs.wb, list(vector.kwargs["tasks"])
    tau = jobs.value(vector)
    regions, metas = {}, {}
    for t in tasks:
        regions[t], metas[t] = jobs.artifact(jobs.one("graft", vector=ref(vector), base=float(base), task=t))
    out: dict[str, Any] = {"tau": tau, "regions": regions, "metas": metas, "overlap": overlap_rows(regions),
                           "single": transfer_rows(wb, regions, tasks, tau, split, limit, kind="single")}
    if groups:
        out["unions"] = union_regions(regions, groups)
        out["union"] = transfer_rows(wb, out["unions"], tasks, tau, split, limit, kind="union")
        if tuned:
            out["tuned_regions"] = {g: jobs.value(jobs.one("joint-graft", vector=ref(vector), tasks=list(members)))
                                    for g, members in groups.items()}
            out["tuned"] = transfer_rows(wb, out["tuned_regions"], tasks, tau, split, limit, kind="tuned")
    return out


def overlap_summary(rows: Sequence[Mapping], similar: Sequence[tuple[str, str]] = ()) -> dict[str, float]:
    """Mean / max off-diagonal overlap, and the mean over the ``similar`` pairs (both directions) vs the others."""
    off = [r for r in rows if r["row"] != r["col"]]
    sim = {frozenset(p) for p in similar}
    is_sim = [frozenset((r["row"], r["col"])) in sim for r in off]
    vals = [r["overlap"] for r in off]
    s_vals = [v for v, f in zip(vals, is_sim) if f]
    o_vals = [v for v, f in zip(vals, is_sim) if not f]
    mean = (lambda xs: sum(xs) / len(xs) if xs else float("nan"))
    return {"mean_offdiag": mean(vals), "max_offdiag": max(vals) if vals else float("nan"),
            "mean_similar": mean(s_vals), "mean_other": mean(o_vals)}


def group_summary(rows: Sequence[Mapping], groups: Mapping[str, Sequence[str]]) -> list[dict]:
    """Per group: mean and min Rel over the group's own tasks and mean Rel over the other tasks."""
    out = []
    for g, members in groups.items():
        own = [r["rel"] for r in rows if r["region"] == g and r["task"] in members and r["rel"] == r["rel"]]
        other = [r["rel"] for r in rows if r["region"] == g and r["task"] not in members and r["rel"] == r["rel"]]
        out.append({"group": g, "kind": rows[0]["kind"] if rows else "", "tasks": "+".join(members),
                    "mean_in": sum(own) / len(own) if own else float("nan"), "min_in": min(own, default=float("nan")),
                    "mean_out": sum(other) / len(other) if other else float("nan")})
    return out



def region_sizes(regions: Mapping[str, Mask], metas: Mapping[str, Mapping]) -> list[dict]:
    """Size, density (in %) and best graft step of each task's region."""
    return [{"task": t, "region size": m.count(), "density %": 100 * m.density(),
             "best step": metas[t].get("best_step")} for t, m in regions.items()]


def _tune_union_job(wb: "Workbench", k: dict, value: Any) -> tuple[Mask, dict]:
    union = Mask.union(k["union"][t] for t in k["tasks"])  # the per-task regions of the job's kwargs, joined
    return tune_union(wb, k["tasks"], k["vector"], union, recipe=graft_recipe_of(wb, k), seed=k["seed"])


register_driver("repro.p1.multitask.tune_union", _tune_union_job)
