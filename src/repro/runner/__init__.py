"""repro.runner."""
