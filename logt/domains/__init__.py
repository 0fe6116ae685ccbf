"""logt.domains: the convex domains ``D`` and their Euclidean projections ``Pi_D``."""
from logt.domains._callable import CallableDomain
from logt.domains._protocol import Domain
from logt.domains._psd import PSDCone, clear_projector_cache, project_psd
from logt._kernels._sets import Box, EuclideanBall
from logt._kernels._trace_psd import TraceBoundedPSD
from logt.domains._lmo import constraint_function, linear_oracle, lmo

__all__ = ["Box", "CallableDomain", "Domain", "EuclideanBall", "PSDCone", "clear_projector_cache",
           "project_psd", "TraceBoundedPSD", "linear_oracle", "lmo", "constraint_function"]
