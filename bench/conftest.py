"""pytest configuration of the benchmark suite (``pytest bench``).

* collects ``bench_*.py`` files (the project's ``python_files`` is ``test_*.py``);
* runs the whole session under ONE BLAS thread (``logt.single_threaded_blas``):
  logt and every reference are measured under the same setting, and logt's own
  per-call thread limiting becomes free (nested).

The reference implementations live in ``logt.bench.references``. With
``--benchmark-disable`` every benchmark runs once on a reduced budget (a smoke
run; the whole suite in well under a minute).
"""
import pytest

from logt import single_threaded_blas


def pytest_collect_file(file_path, parent):
    if (file_path.suffix == ".py" and file_path.name.startswith("bench_")
            and not parent.session.isinitpath(file_path)):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session", autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield
