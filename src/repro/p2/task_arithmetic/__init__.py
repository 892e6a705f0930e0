"""The chapter ``notebooks/p2_task_arithmetic.md``."""
