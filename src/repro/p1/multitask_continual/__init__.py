"""The chapter ``notebooks/p1_multitask_continual.md``."""
