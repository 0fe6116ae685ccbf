"""Turning a user's ``rng`` argument into one ``numpy.random.Generator``."""
import numbers

import numpy as np


def check_rng(rng):
    """Return a ``numpy.random.Generator`` for ``rng``.

    rng : None (fresh OS entropy: not reproducible), an int seed, a
        ``numpy.random.SeedSequence``, a ``numpy.random.BitGenerator`` or a
        ``numpy.random.Generator`` (used as is, so its state advances).

    The same int seed always gives the same stream (PCG64), hence bit-identical
    results from every logt entry point.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.BitGenerator):
        return np.random.Generator(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"rng seed must be non-negative, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        "rng must be None, an int seed, a numpy.random.SeedSequence, BitGenerator "
        f"or Generator, got {type(rng).__name__}"
    )
