"""P1: grafting (Panigrahi et al., "Task-Specific Skill Localization in Fine-tuned Language Models", ICML 2023).

Paper section → module → notebook (the algorithm itself, Eq. 1-4, is :mod:`repro.core.grafting`):

- §2-3, App. B (Tables 1-2, 8; Figs. 2-5, 9-10): :mod:`repro.p1.regions` → ``p1_localization``, ``p1_appendix``
- §4.1 calibration (Table 2 ECE, Fig. 6): :mod:`repro.p1.calibration` → ``p1_calibration_ood``
- §4.2 zero-shot out-of-distribution evaluation (and WiSE curves): :mod:`repro.p1.ood` → ``p1_calibration_ood``
- §4.3, App. D generalization (train-test gap, Theorem D.2): :mod:`repro.p1.generalization` → ``p1_calibration_ood``
- Tables 6-7 LoRA / adapter baselines: :mod:`repro.p1.peft_baselines` → ``p1_calibration_ood``
- §5.1 multi-task regions (Fig. 8): :mod:`repro.p1.multitask` → ``p1_multitask_continual``
- §5.2, App. C.3 continual learning: :mod:`repro.p1.continual` → ``p1_multitask_continual``
  (per-example correctness for §5's paired claims: :mod:`repro.p1.multitask_continual.runs`)
- App. D.4 (Fig. 15) regions along the fine-tuning trajectory: :mod:`repro.p1.trajectory` → ``p1_appendix``
"""
