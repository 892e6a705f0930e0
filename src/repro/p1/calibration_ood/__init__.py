"""The chapter ``notebooks/p1_calibration_ood.md``."""
