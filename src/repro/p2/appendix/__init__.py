"""The chapter ``notebooks/p2_appendix.md``."""
