"""repro.p1."""
