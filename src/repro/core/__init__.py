"""repro.core."""
