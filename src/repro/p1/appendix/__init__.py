"""The chapter ``notebooks/p1_appendix.md``."""
