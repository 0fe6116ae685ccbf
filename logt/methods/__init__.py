"""logt.methods."""
