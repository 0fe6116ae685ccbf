"""logt: O(log T) projections for stochastic optimization (Zhang et al., ICML 2013)."""
__version__ = "0.1.0"
