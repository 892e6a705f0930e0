"""The chapter of ``notebooks/p2_structure_cost.md`` (P2 §5.3: Figs. 4-5, Tables 3-4).

Its role files (see :mod:`repro.p2`): ``plan``, ``jobs``, ``views``, ``claims``.
"""

ORDER = 4  # its place in the P2 part of the book (repro.chapters)
