"""The chapter of ``notebooks/p1_calibration_ood.md`` (P1 §4 and App. D: Tables 2-3, 6-7, Figs. 6-7).

Its role files (see :mod:`repro.p1`): ``plan``, ``jobs``, ``runs``, ``views``, ``claims``.
"""

ORDER = 2  # its place in the P1 part of the book (repro.chapters)
