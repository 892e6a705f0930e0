"""repro.p2."""
