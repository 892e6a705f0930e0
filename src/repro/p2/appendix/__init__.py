"""The chapter of ``notebooks/p2_appendix.md`` (P2 App. A.5-A.6: Figs. 8-9 and beyond the paper).

Its role files (see :mod:`repro.p2`): ``plan``, ``jobs``, ``runs``, ``views``, ``claims``.
"""

ORDER = 5  # its place in the P2 part of the book (repro.chapters)
