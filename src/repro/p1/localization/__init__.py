"""The chapter of ``notebooks/p1_localization.md`` (P1 §2-3: Tables 1-2, Figs. 2-5).

Its role files (see :mod:`repro.p1`): ``plan``, ``jobs``, ``runs``, ``views``, ``claims``.
"""

ORDER = 1  # its place in the P1 part of the book (repro.chapters)
