"""The chapter of ``notebooks/p2_disentanglement.md`` (P2 §5.2, App. A.4: Figs. 2, 3, 6, 7).

Its role files (see :mod:`repro.p2`): ``plan``, ``jobs``, ``runs``, ``views``, ``claims``.
"""

ORDER = 3  # its place in the P2 part of the book (repro.chapters)
