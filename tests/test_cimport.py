"""Other Cython code can cimport logt's kernels (the installed .pxd files) and call them without the GIL."""
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

PYX = textwrap.dedent('''
    # cython: language_level=3
    from logt._kernels._base cimport CompiledDomain, CompiledOracle, bitgen_of
    from logt._kernels._psd cimport PSDProjector
    from numpy.random cimport bitgen_t

    def project_twice(PSDProjector proj, double[::1] x):
        cdef int info
        with nogil:
            info = proj.project_inplace(&x[0])
            if info == 0:
                info = proj.project_inplace(&x[0])
        return info

    def one_grad(CompiledOracle oracle, double[::1] x, Py_ssize_t B, rng, double[::1] out):
        cdef bitgen_t* bg = bitgen_of(rng)
        cdef int info
        with rng.bit_generator.lock, nogil:
            info = oracle.mean_grad_into(&x[0], B, bg, &out[0])
        return info
''')


@pytest.fixture(scope="module")
def user_module(tmp_path_factory):
    pytest.importorskip("Cython")
    d = tmp_path_factory.mktemp("cimport_user")
    (d / "user_kernels.pyx").write_text(PYX)
    # where logt's .pxd files are: site-packages for a regular install, the
    # checkout for an editable one (whose import hook Cython does not see)
    import logt
    root = os.path.dirname(os.path.dirname(os.path.abspath(logt.__file__)))
    setup = textwrap.dedent(f'''
        import numpy
        from Cython.Build import cythonize
        from setuptools import Extension, setup
        setup(ext_modules=cythonize([Extension("user_kernels", ["user_kernels.pyx"],
                                               include_dirs=[numpy.get_include()])],
                                    include_path=[{root!r}]))
    ''')
    (d / "setup.py").write_text(setup)
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=d,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    sys.path.insert(0, os.fspath(d))
    try:
        yield importlib.import_module("user_kernels")
    finally:
        sys.path.remove(os.fspath(d))


def test_cimported_projection_and_oracle(user_module):
    from logt.domains import PSDCone
    from logt.oracles import PSDQuadratic

    rng = np.random.default_rng(0)
    A = rng.standard_normal((30, 30))
    A = (A + A.T) / 2
    x = A.copy().reshape(-1)
    assert user_module.project_twice(PSDCone(30), x) == 0
    lam, V = np.linalg.eigh(A)
    ref = (V * np.maximum(lam, 0)) @ V.T
    np.testing.assert_allclose(x.reshape(30, 30), ref, atol=1e-10 * np.abs(A).max())

    oracle = PSDQuadratic(np.eye(3))
    w = np.zeros(9)
    out = np.empty(9)
    assert user_module.one_grad(oracle, w, 4, np.random.default_rng(1), out) == 0
    expect = oracle.mean_grad(np.zeros((3, 3)), 4, np.random.default_rng(1))
    np.testing.assert_array_equal(out.reshape(3, 3), expect)
