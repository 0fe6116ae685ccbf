"""logt._kernels."""
