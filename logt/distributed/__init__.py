"""logt.distributed: the mini-batch averages on a Dask cluster (optional extra ``logt[dask]``).

* :class:`DaskOracle` -- any oracle whose ``mean_grad(w, B, rng, out)`` fans the
  batch out to Dask workers in fixed chunks and reduces the chunk means on the
  driver in a fixed order; small batches stay in-process. It is just an oracle:
  ``logt.minimize`` and its counts do not know where the average was computed.
* :class:`ShardedMetricLearning` -- the metric-learning pair oracle with the
  training rows split into shards that are sent to the workers once; pairs stay
  uniform over all ordered pairs of distinct points (block-pair sampling).
* :class:`DistributedOracleError` -- a worker raised, died, or a call timed out.

``import logt`` never imports Dask; this module does (and needs
``dask[distributed]``: ``pip install 'logt[dask]'``).
"""
try:
    import distributed as _distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "logt.distributed needs Dask's distributed scheduler; install the extra: "
        "pip install 'logt[dask]'  (that is dask[distributed])") from exc

from logt.distributed._metric import ShardedMetricLearning
from logt.distributed._oracle import DEFAULT_LOCAL_BELOW, DaskOracle, DistributedOracleError

__all__ = ["DaskOracle", "ShardedMetricLearning", "DistributedOracleError", "DEFAULT_LOCAL_BELOW"]
