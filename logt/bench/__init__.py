"""logt.bench."""
