"""Build logt's compiled kernels: every ``logt/**/*.pyx`` becomes an extension.

Package metadata, the package list (discovered) and the package data live in
``pyproject.toml``; this file only declares the extensions. Plain C helpers live
in ``csrc/`` (with headers) and are linked into the extensions listed in
``C_SOURCES``. Cythonization and compilation run on every core.
"""
import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

# extension module -> plain C files from csrc/ compiled into it
C_SOURCES = {
    "logt._kernels._psd": ["csrc/logt_jacobi.c", "csrc/logt_sturm.c"],
    "logt._kernels._pairs": ["csrc/logt_pairpoints.c"],
    "logt._kernels._triplets": ["csrc/logt_pairpoints.c"],
    "logt._kernels._softmax": ["csrc/logt_pairpoints.c"],
    "logt._kernels._neighbors": ["csrc/logt_sqdist.c"],
}

# extension module -> extra compile / link flags (POSIX threads for the parallel pair kernel)
EXTRA_FLAGS = {
    "logt._kernels._pairs": {"extra_compile_args": ["-pthread"], "extra_link_args": ["-pthread"]},
}

JOBS = os.cpu_count() or 1


def extensions():
    exts = []
    for pyx in sorted(glob.glob(os.path.join("logt", "**", "*.pyx"), recursive=True)):
        name = os.path.splitext(pyx)[0].replace(os.sep, ".")
        sources = [pyx] + C_SOURCES.get(name, [])
        missing = [s for s in sources if not os.path.exists(s)]
        if missing:
            raise FileNotFoundError(f"sources of extension {name} are missing: {missing}")
        extra = EXTRA_FLAGS.get(name, {})
        exts.append(
            Extension(
                name,
                sources,
                include_dirs=[numpy.get_include(), "csrc"],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"] + extra.get("extra_compile_args", []),
                extra_link_args=extra.get("extra_link_args", []),
            )
        )
    return exts


setup(
    ext_modules=cythonize(
        extensions(),
        nthreads=JOBS,
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
    options={"build_ext": {"parallel": JOBS}},
)
