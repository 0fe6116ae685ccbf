"""logt.domains: the convex domains ``D`` and their Euclidean projections ``Pi_D``."""
from logt.domains._callable import CallableDomain
from logt.domains._protocol import Domain
from logt.domains._psd import PSDCone, clear_projector_cache, project_psd
from logt._kernels._sets import Box, EuclideanBall

__all__ = ["Box", "CallableDomain", "Domain", "EuclideanBall", "PSDCone", "clear_projector_cache",
           "project_psd"]
