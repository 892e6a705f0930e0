"""The chapter of ``notebooks/p1_appendix.md`` (P1 Tables 5, 8, 9, Figs. 9-10, 15).

Its role files (see :mod:`repro.p1`): ``plan``, ``jobs``, ``runs``, ``claims``.
"""

ORDER = 4  # its place in the P1 part of the book (repro.chapters)
