"""pytest configuration of the benchmark suite (``pytest bench``).

* ``bench_*.py`` files are collected through ``python_files`` in pyproject.toml;
* runs the whole session under ONE BLAS thread (``logt.single_threaded_blas``):
  logt and every reference are measured under the same setting, and logt's own
  per-call thread limiting becomes free (nested).

The reference implementations live in ``logt.bench.references``. With
``--benchmark-disable`` every benchmark runs once on a reduced budget (a smoke
run; the whole suite in well under a minute).
"""
import pytest

from logt import single_threaded_blas


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield
