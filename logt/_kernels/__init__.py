"""Compiled kernels (Cython over SciPy's BLAS/LAPACK; plain C helpers in ``csrc/``).

* ``_base``  -- ``CompiledOracle`` / ``CompiledDomain``: the C-level protocol (``.pxd``).
* ``_psd``   -- PSD-cone projection (adaptive LAPACK paths, C Jacobi for tiny d).
* ``_sets``  -- Euclidean ball and box projections.
* ``_toy``   -- the toy oracle's streaming mini-batch average.
* ``_pairs`` -- the metric-learning pair gradient (sparse and dense X) and its objective.
* ``_steps`` -- the compiled projected-SGD step loop used by SGD and Epoch-GD.

Other Cython code can ``cimport`` the classes declared in the ``.pxd`` files.
"""
