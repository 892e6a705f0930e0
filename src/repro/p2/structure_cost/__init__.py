"""The chapter ``notebooks/p2_structure_cost.md``."""
