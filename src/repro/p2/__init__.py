"""P2: TaLoS (Iurada et al., "Efficient Model Editing with Task-Localized Sparse Fine-tuning", ICLR 2025).

Two kinds of modules (the algorithms are in :mod:`repro.core`: TaLoS calibration in :mod:`repro.core.fisher`, task
vectors in :mod:`repro.core.taskvec`, the post-hoc mergers in :mod:`repro.core.merging`, AdaMerging in
:mod:`repro.core.adamerging`).

**Section modules** (here): one computation shared by the chapters that show it.

- the fine-tuning zoo shared by every P2 notebook (FT, linearized FT, L-LoRA, LoTA, TaLoS): :mod:`repro.p2.methods`;
  its tasks and its jobs: :mod:`repro.p2.zoo`
- §5.1 task arithmetic (Tables 1, 2, 5; α selection, spec D7): :mod:`repro.p2.arithmetic` (evaluation sets:
  :mod:`repro.p2.evaluator`) → ``p2_task_arithmetic``, ``p2_appendix``
- §5.2-5.3 weight disentanglement and function localization (Figs. 2-3), mask overlap and structure (Figs. 4-5):
  :mod:`repro.p2.function_localization` → ``p2_disentanglement``, ``p2_structure_cost``, ``p2_appendix``
- App. A.4 the linear regime (kernel checks): :mod:`repro.p2.linear_regime` → ``p2_disentanglement``
- Tables 3-4 iteration and calibration cost: :mod:`repro.p2.efficiency` (measurement: :mod:`repro.p2.cost`)
  → ``p2_structure_cost``
- App. A.5 (Fig. 8) sparsity sweep, and grafted sparse task vectors beyond the paper, scored with task arithmetic:
  :mod:`repro.p2.sparse_vectors` → ``p2_appendix``
- the claims' shared statistics (per-task means, paired gaps, bands): :mod:`repro.p2.claim_stats`; when a claim
  is testable at all: :mod:`repro.report.gates` (both papers)

**Chapter packages**: one per notebook, named after it, with the same role files (a role a chapter does not need
is absent): ``plan.py`` (what each profile runs, one typed plan), ``jobs.py`` (the cached artifacts it computes,
declared from the plan, for ``repro plan``), ``runs.py`` (the chapter's run drivers on its plan), ``views.py``
(tables and figures), ``claims.py`` (one function per claim of the paper, judged with :mod:`repro.report.verdicts`).

- :mod:`repro.p2.task_arithmetic` (``notebooks/p2_task_arithmetic.md``, §5.1: Tables 1, 2, 5): plan, jobs,
  runs (Tables 1-2 over seeds, per-example correctness), claims
- :mod:`repro.p2.sensitivity` (``notebooks/p2_sensitivity.md``, §4.1, App. A.7: Figs. 1, 10, 11): plan, jobs,
  runs (the low-sensitivity masks, pruning and perturbation), views, claims
- :mod:`repro.p2.disentanglement` (``notebooks/p2_disentanglement.md``, §5.2, App. A.4: Figs. 2, 3, 6, 7): plan,
  jobs, views, claims
- :mod:`repro.p2.structure_cost` (``notebooks/p2_structure_cost.md``, §5.3: Figs. 4-5, Tables 3-4): plan, jobs,
  views, claims
- :mod:`repro.p2.appendix` (``notebooks/p2_appendix.md``, App. A.5-A.6: Figs. 8-9 and beyond the paper): plan,
  jobs, views, claims
- the performance page (``notebooks/performance.md``) is :mod:`repro.bench` (``views``, ``claims``)

Section modules never import a chapter package (``tests/test_layering.py`` checks packages for cycles).
"""
