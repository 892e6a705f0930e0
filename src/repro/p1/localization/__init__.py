"""The chapter ``notebooks/p1_localization.md``."""
