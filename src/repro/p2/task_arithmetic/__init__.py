"""The chapter of ``notebooks/p2_task_arithmetic.md`` (P2 §5.1: Tables 1, 2, 5).

Its role files (see :mod:`repro.p2`): ``plan``, ``jobs``, ``runs``, ``claims``.
"""

ORDER = 2  # its place in the P2 part of the book (repro.chapters)
