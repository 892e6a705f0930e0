"""P2: TaLoS (Iurada et al., "Efficient Model Editing with Task-Localized Sparse Fine-tuning", ICLR 2025).

Paper section → module → notebook (the algorithms are in :mod:`repro.core`: TaLoS calibration in
:mod:`repro.core.fisher`, task vectors in :mod:`repro.core.taskvec`, the post-hoc mergers in
:mod:`repro.core.merging`, AdaMerging in :mod:`repro.core.adamerging`):

- the fine-tuning zoo shared by every P2 notebook (FT, linearized FT, L-LoRA, LoTA, TaLoS): :mod:`repro.p2.methods`
- §5.1 task arithmetic (Tables 1, 2, 5; α selection, spec D7): :mod:`repro.p2.arithmetic` (evaluation sets:
  :mod:`repro.p2.evaluator`) → ``p2_task_arithmetic``, ``p2_appendix``
- §4.1, App. A.7 parameter sensitivity (Figs. 1, 10, 11): :mod:`repro.p2.sensitivity.runs` → ``p2_sensitivity``
- §5.2-5.3 weight disentanglement and function localization (Figs. 2-3), mask overlap and structure (Figs. 4-5):
  :mod:`repro.p2.function_localization` → ``p2_disentanglement``, ``p2_structure_cost``, ``p2_appendix``
- App. A.4 the linear regime (kernel checks): :mod:`repro.p2.linear_regime` → ``p2_disentanglement``
- Tables 3-4 iteration and calibration cost: :mod:`repro.p2.efficiency` (measurement: :mod:`repro.p2.cost`)
  → ``p2_structure_cost``
- App. A.5 (Fig. 8) sparsity sweep, and grafted sparse task vectors beyond the paper: :mod:`repro.p2.sparse_vectors`
  → ``p2_appendix``
"""
