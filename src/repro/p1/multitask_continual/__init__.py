"""The chapter of ``notebooks/p1_multitask_continual.md`` (P1 §5: Fig. 8, Figs. 11-13, Table 4).

Its role files (see :mod:`repro.p1`): ``plan``, ``jobs``, ``runs``, ``views``, ``claims``.
"""

ORDER = 3  # its place in the P1 part of the book (repro.chapters)
