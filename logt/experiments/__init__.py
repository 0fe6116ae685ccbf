"""logt.experiments."""
