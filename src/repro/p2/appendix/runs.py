"""The artifacts the P2 appendix chapter (``notebooks/p2_appendix.md``) evaluates, from its declared jobs.

- :func:`sweep_vectors`: the Fig. 8 task vectors of TaLoS at a sparsity k (k = 0: the zoo's non-linear FT vector;
  else the fine-tune trained on the TaLoS mask of sparsity k);
- :func:`grafted_vectors`: *beyond the paper*, ``γ_t ⊙ τ_t`` for each declared P1 graft (role ``graft``) of a P2
  non-linear FT vector τ_t (its upstream job);
- :func:`overlap_masks`: the P1 graft region, the TaLoS mask (its declared job), the LoTA mask
  (:func:`repro.p2.zoo.lota_mask_of`: the top |τ_ft| entries of the FT vector, as the zoo's LoTA run trains) and FISH
  masks (in-process) of one task.

They take the notebook's :class:`repro.jobcall.ChapterJobs` (``jobs``) and never decide which artifacts exist.  The
zoo's vectors of every method come from :func:`repro.p2.zoo.zoo_vectors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import torch

from repro.core.masks import Mask
from repro.jobs import ref
from repro.p2.function_localization import fish_masks
from repro.p2.methods import calibration_examples
from repro.p2.zoo import lota_mask_of, method_vector

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts

Tensors = dict[str, torch.Tensor]


def sweep_vectors(jobs: "Artifacts", sparsity: float, tasks: Sequence[str]) -> dict[str, Tensors]:
    """Fig. 8: ``{task: τ}`` of TaLoS at ``sparsity`` k on each task: the fine-tune whose trainable set is the
    declared TaLoS mask of sparsity k (k = 0: the zoo's non-linear FT vector), each loaded or trained."""
    if sparsity == 0.0:
        return {t: method_vector(jobs, t, "ft") for t in tasks}
    return {t: jobs.value(jobs.one(kind="finetune", trainable=ref(jobs.one(kind="mask", task=t, sparsity=sparsity))))
            for t in tasks}


def masked_vector(tau: Mapping[str, torch.Tensor], mask: Mask) -> Tensors:
    """``γ ⊙ τ``: τ kept on the entries of ``mask``, zero elsewhere (and on the tensors outside it)."""
    return {n: tau[n] * mask.tensors[n].to(tau[n].dtype) if n in mask.shapes else torch.zeros_like(tau[n])
            for n in tau}


def grafted_vectors(jobs: "Artifacts", tasks: Sequence[str]) -> tuple[dict[str, Tensors], dict[str, Mask]]:
    """Beyond the paper: ``({task: γ_t ⊙ τ_t}, {task: γ_t})``, γ_t the declared P1 graft (role ``graft``:
    :meth:`repro.workbench.Workbench.graft`, P1 Eq. 2-4) of τ_t, the P2 non-linear FT vector it grafts (its
    upstream job)."""
    vectors, masks = {}, {}
    for t in tasks:
        graft = jobs.one(kind="graft", role="graft", task=t)
        (ft,) = jobs.deps(graft, "finetune")
        masks[t] = jobs.value(graft)
        vectors[t] = masked_vector(jobs.value(ft), masks[t])
    return vectors, masks


def overlap_masks(jobs: "Artifacts", task: str, graft: Mask, talos_sparsity: float) -> dict[str, Mask]:
    """The masks compared on ``task``: the P1 graft region ``graft``, the declared TaLoS mask at
    ``talos_sparsity``, the zoo's LoTA mask (:func:`repro.p2.zoo.lota_mask_of`) and FISH masks (not cached) at the
    TaLoS budget and at the graft's size."""
    wb = jobs.wb
    dense = 1 - talos_sparsity
    fish = fish_masks(wb, task, [dense, graft.density()], calibration_examples(wb, task))
    return {"P1 graft": graft, "TaLoS": jobs.value(jobs.one(kind="mask", task=task, sparsity=talos_sparsity)),
            "LoTA": lota_mask_of(jobs, task), "FISH 10%": fish[dense], "FISH (graft size)": fish[graft.density()]}


__all__ = ["grafted_vectors", "masked_vector", "overlap_masks", "sweep_vectors"]
