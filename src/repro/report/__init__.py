"""repro.report."""
