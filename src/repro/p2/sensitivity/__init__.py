"""The chapter of ``notebooks/p2_sensitivity.md`` (P2 §4.1, App. A.7: Figs. 1, 10, 11).

Its role files (see :mod:`repro.p2`): ``plan``, ``jobs``, ``runs``, ``views``, ``claims``.
"""

ORDER = 1  # its place in the P2 part of the book (repro.chapters)
