"""Build logt's compiled kernels: every ``logt/**/*.pyx`` becomes an extension.

Plain C helpers live in ``csrc/`` (with headers) and are linked into the
extensions listed in ``C_SOURCES``.
"""
import glob
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))

# extension module -> plain C files from csrc/ compiled into it
C_SOURCES = {
    "logt._kernels._psd": ["csrc/logt_jacobi.c", "csrc/logt_sturm.c"],
    "logt._kernels._pairs": ["csrc/logt_pairpoints.c"],
    "logt._kernels._triplets": ["csrc/logt_pairpoints.c"],
}

# extension module -> extra compile / link flags (POSIX threads for the parallel pair kernel)
EXTRA_FLAGS = {
    "logt._kernels._pairs": {"extra_compile_args": ["-pthread"], "extra_link_args": ["-pthread"]},
}


def extensions():
    exts = []
    for pyx in sorted(glob.glob(os.path.join("logt", "**", "*.pyx"), recursive=True)):
        name = os.path.splitext(pyx)[0].replace(os.sep, ".")
        sources = [pyx] + [s for s in C_SOURCES.get(name, []) if os.path.exists(s)]
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
    packages=[
        "logt",
        "logt._kernels",
        "logt.domains",
        "logt.oracles",
        "logt.methods",
        "logt.experiments",
        "logt.bench",
        "logt.distributed",
    ],
    package_data={"logt._kernels": ["*.pxd"], "logt": ["py.typed"]},
    ext_modules=cythonize(
        extensions(),
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
    zip_safe=False,
)
