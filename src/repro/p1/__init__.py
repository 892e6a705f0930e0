"""P1: grafting (Panigrahi et al., "Task-Specific Skill Localization in Fine-tuned Language Models", ICML 2023).

Two kinds of modules (the algorithm itself, Eq. 1-4, is :mod:`repro.core.grafting`):

**Section modules** (here): one computation of a paper section, shared by the chapters that show it.

- §2-3, App. B regions: :mod:`repro.p1.regions` (learned / movement / random / FISH regions, the FT + graft pair
  and its jobs ``ft_and_graft_jobs``) → every P1 chapter
- §4.1 calibration (Table 2 ECE, Fig. 6; ``ece_difference``): :mod:`repro.p1.calibration` → ``p1_calibration_ood``,
  ``p1_appendix``
- §4.2 zero-shot out-of-distribution evaluation (and WiSE curves): :mod:`repro.p1.ood` → ``p1_calibration_ood``
- §4.3, App. D generalization (train-test gap, Theorem D.2): :mod:`repro.p1.generalization` → ``p1_calibration_ood``
- Tables 6-7 LoRA / adapter baselines: :mod:`repro.p1.peft_baselines` → ``p1_calibration_ood``
- §5.1 multi-task regions (Fig. 8): :mod:`repro.p1.multitask` → ``p1_multitask_continual``
- §5.2, App. C.3 continual learning: :mod:`repro.p1.continual` → ``p1_multitask_continual``
- App. D.4 (Fig. 15) regions along the fine-tuning trajectory: :mod:`repro.p1.trajectory` → ``p1_appendix``

**Chapter packages**: one per notebook, named after it, with the same role files (a role a chapter does not need
is absent): ``plan.py`` (what each profile runs, one typed plan), ``jobs.py`` (the cached artifacts it computes,
declared from the plan, for ``repro plan``), ``runs.py`` (the chapter's run drivers on its plan), ``views.py``
(tables and figures), ``claims.py`` (one function per claim of the paper, judged with :mod:`repro.report.verdicts`).

- :mod:`repro.p1.localization` (``notebooks/p1_localization.md``, §2-3: Tables 1-2, Figs. 2-5): plan, jobs,
  runs (the region-size sweeps), claims
- :mod:`repro.p1.calibration_ood` (``notebooks/p1_calibration_ood.md``, §4 and App. D: Tables 2-3, 6-7, Figs. 6-7):
  plan, jobs, runs, views, claims
- :mod:`repro.p1.multitask_continual` (``notebooks/p1_multitask_continual.md``, §5: Fig. 8, Figs. 11-13, Table 4):
  plan, jobs, runs (per-example results of the paired claims), claims
- :mod:`repro.p1.appendix` (``notebooks/p1_appendix.md``, Tables 5, 8, 9, Figs. 9-10, 15): plan, jobs, runs, claims

Section modules never import a chapter package (``tests/test_layering.py`` checks packages for cycles).
"""
