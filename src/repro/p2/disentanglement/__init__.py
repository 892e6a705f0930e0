"""The chapter ``notebooks/p2_disentanglement.md``."""
