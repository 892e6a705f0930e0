"""What the P1 appendix chapter (``notebooks/p1_appendix.md``) runs for each profile: one typed plan.

:data:`PLANS` holds the :class:`AppendixPlan` of each profile plan (``smoke`` checks the code paths, ``cpu`` is
sized for 2 cores, ``paper`` is the paper's setting); :func:`appendix_plan` resolves the profile's and applies the
notebook's non-None parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.plans import ChapterPlan, FromProfile, plan_for, ranged
from repro.profiles import GraftRecipe, Profile


@dataclass(frozen=True)
class AppendixPlan(ChapterPlan):
    """Tasks, data sizes, region sizes and steps of P1 Tables 5 and 8, Figs. 9-10 and Fig. 15."""

    large_tasks: tuple[str, ...] = ("SST-2",)        #: Table 5 tasks (paper: Sentiment, AGNews, QNLI, SNLI)
    large_k: int = ranged(0, 0)                       #: Table 5 examples per class (0: k_shot; paper: up to 50k)
    #: Table 5 graft sizes, fractions (paper: 3e-4, 6e-4, 1.2e-3)
    large_sparsities: tuple[float, ...] = ranged((3e-4,), 0.0, 1.0, low_open=True)
    large_steps: int | None = ranged(None, 0)         #: Table 5 graft steps (None: the profile's; paper: 10x)
    fish_tasks: tuple[str, ...] = ("SST-2",)          #: Table 8 tasks
    fish_k: int = ranged(0, 0)                        #: Table 8 k-shot (0: k_shot; paper: 4096)
    #: Table 8 sizes (paper: 1e-4, 1e-3, 1e-2)
    fish_densities: tuple[float, ...] = ranged((1e-4, 1e-3, 1e-2), 0.0, 1.0, low_open=True)
    sweep_steps: int | None = ranged(None, 0)         #: graft steps of the Table 8 / Fig. 9 learned regions
    placement_tasks: tuple[str, ...] = ("SST-2", "QNLI")  #: Figs. 9-10 tasks
    placement_k: int = ranged(0, 0)                   #: Figs. 9-10 k-shot (0: k_shot; paper: 4096, k_shot_large)
    #: Figs. 9-10 sizes besides the Table 2 graft
    placement_sparsities: tuple[float, ...] = ranged((), 0.0, 1.0, low_open=True)
    track_task: str = "SST-2"                         #: Fig. 15 task
    track_every: int = ranged(50, 1)                  #: Fig. 15 snapshot interval (steps)
    track_checkpoint: int | None = ranged(None, 1)    #: Fig. 15 checkpoint (None: see :meth:`checkpoint`)
    track_sparsities: tuple[float, ...] = ranged((1e-3,), 0.0, 1.0, low_open=True)  #: Fig. 15 region sizes
    n_eval: int = ranged(0, 0)                        #: test examples per Fig. 15 point (0: all)
    n_seeds: int = ranged(1, 1)                       #: seeds of Table 9's GPT-2 runs (paper: 5)

    def sweep_graft(self, profile: Profile) -> GraftRecipe:
        """The graft recipe of the Table 8 / Figs. 9-10 / Fig. 15 learned regions: the profile's with ``sweep_steps``."""
        return profile.graft.updated(steps=self.sweep_steps)

    def large_graft(self, profile: Profile) -> GraftRecipe:
        """The graft recipe of Table 5: the profile's with ``large_steps``."""
        return profile.graft.updated(steps=self.large_steps)

    def splits(self, profile: Profile) -> list[tuple[str, int]]:
        """Every (task, k) whose k-shot split the chapter trains on (checked by :func:`repro.data.check_splits`
        when the plan is built); Table 9's GPT-2 runs take the paper profile's k-shot sizes there only."""
        out = [(t, self.large_k or profile.k_shot) for t in self.large_tasks]
        out += [(t, self.fish_k or profile.k_shot) for t in self.fish_tasks]
        out += [(t, self.placement_k or profile.k_shot) for t in self.placement_tasks]
        out += [(self.track_task, profile.k_shot)]
        if profile.plan == "paper":
            out += [(t, k) for k in (profile.k_shot, profile.k_shot_large) for t in profile.p1_tasks if t != "TREC"]
        return out

    def checkpoint(self, ft_steps: int) -> int:
        """The Fig. 15 checkpoint: ``track_checkpoint`` if given, else the snapshot step nearest below half of the
        fine-tuning run (an *intermediate* checkpoint, so that "saturates after it" can be observed).

        Raises if the checkpoint is not a snapshot step strictly inside the run (the claim would be untestable)."""
        step = self.track_checkpoint
        if step is None:
            step = (ft_steps // 2) // self.track_every * self.track_every
        if step <= 0 or step >= ft_steps or step % self.track_every:
            raise ValueError(f"Fig. 15 checkpoint {step} must be a multiple of track_every={self.track_every} strictly "
                             f"between 0 and the {ft_steps} fine-tuning steps; pass track_checkpoint / track_every "
                             "accordingly")
        return step


#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").
PLANS: dict[str, AppendixPlan] = {
    "smoke": AppendixPlan(large_k=FromProfile("k_shot_large"), large_sparsities=(1e-2,), large_steps=2,
                          fish_k=FromProfile("k_shot"), fish_densities=(1e-3, 1e-2, 1e-1), sweep_steps=2,
                          placement_sparsities=(1e-2,), track_every=5, track_sparsities=(1e-2,), n_eval=64),
    # breadth cuts for the 90-minute book (issue 15): Table 8 on SST-2 only, Fig. 15 at one region size;
    # Table 5's grafts take the profile's full graft steps (3 steps left the region at its γ_base)
    "cpu": AppendixPlan(large_k=FromProfile("k_shot_large"), large_steps=None, fish_tasks=("SST-2",),
                        fish_k=FromProfile("k_shot"), sweep_steps=3, placement_sparsities=(1e-3,), track_every=50,
                        track_sparsities=(1e-3,), n_eval=200),
    # the paper's setting (and any GPU profile's)
    "paper": AppendixPlan(large_tasks=("SST-2", "AGNews", "QNLI", "SNLI"), large_k=50_000,
                          large_sparsities=(3e-4, 6e-4, 1.2e-3),
                          large_steps=FromProfile("10 x graft.steps", lambda p: 10 * p.graft.steps),
                          fish_tasks=("SST-2", "AGNews", "QNLI", "QQP"), fish_k=FromProfile("k_shot_large"),
                          placement_tasks=FromProfile("p1_tasks but TREC",
                                                      lambda p: tuple(t for t in p.p1_tasks if t != "TREC")),
                          placement_k=FromProfile("k_shot_large"),
                          track_every=100, track_sparsities=(1e-5, 1e-4, 1e-3), n_eval=0, n_seeds=5),
}


def appendix_plan(profile: Profile, **overrides: Any) -> AppendixPlan:
    """The profile's plan for the appendix chapter (:data:`PLANS`, resolved), with the notebook's non-None
    parameters applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


__all__ = ["AppendixPlan", "PLANS", "appendix_plan"]
