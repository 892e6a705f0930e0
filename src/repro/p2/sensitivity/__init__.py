"""The chapter ``notebooks/p2_sensitivity.md``."""
