"""logt.domains."""
