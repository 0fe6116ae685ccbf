"""logt.oracles."""
