"""What a user installs: the wheel holds every package, module, compiled kernel, ``.pxd`` file and
``py.typed`` of the source tree, and the sdist holds every source a build needs.

The wheel tests read the installed distribution's file list (its RECORD: exactly the wheel's
contents) and skip, with a reason, when logt is imported from the source tree (an editable install),
where there is no wheel to check. CI installs the wheel and runs them from outside the source tree.
"""
import importlib.machinery
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import logt

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "logt"


def _source(pattern):
    return sorted(p.relative_to(REPO).as_posix() for p in SRC.rglob(pattern) if "__pycache__" not in p.parts)


@pytest.fixture(scope="module")
def wheel_files():
    if not SRC.is_dir():
        pytest.skip(f"no source tree at {SRC} to compare the installed package with")
    if Path(logt.__file__).resolve().parent == SRC.resolve():
        pytest.skip("logt is imported from its source tree (editable install or in-place build), not "
                    "from a wheel: install with 'pip install .' and run the tests from another directory")
    files = importlib.metadata.files("logt")
    assert files, "the installed logt has no file list (RECORD)"
    return {f.as_posix() for f in files}


def test_every_package_and_module_of_the_source_tree_is_in_the_wheel(wheel_files):
    packages = [p.rsplit("/", 1)[0] for p in _source("__init__.py")]
    assert "logt/metric_learning" in packages and "logt/oracles" in packages
    missing = [p for p in _source("*.py") if p not in wheel_files]
    assert not missing, f"source modules missing from the wheel: {missing}"


def test_every_kernel_is_compiled_into_the_wheel(wheel_files):
    pyx = _source("*.pyx")
    assert pyx
    for path in pyx:
        name = path[:-len(".pyx")].replace("/", ".")
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), name
        rel = f"{path[:-len('.pyx')]}{Path(spec.origin).name[len(Path(path).stem):]}"
        assert rel in wheel_files, f"{name}: {rel} not in the wheel"


def test_cimport_files_and_type_marker_are_in_the_wheel(wheel_files):
    pxd = _source("*.pxd")
    assert "logt/_kernels/_base.pxd" in pxd
    missing = [p for p in pxd + ["logt/py.typed"] if p not in wheel_files]
    assert not missing, f"missing from the wheel: {missing}"
    assert not [f for f in wheel_files if f.endswith((".c", ".o"))], "build products leaked into the wheel"


def test_version_comes_from_the_package_metadata():
    meta = importlib.metadata.version("logt")
    assert logt.__version__ == meta
    pyproject = REPO / "pyproject.toml"
    if pyproject.is_file():
        declared = re.search(r'^version = "([^"]+)"', pyproject.read_text(), re.M).group(1)
        assert meta == declared


def test_console_script_is_declared():
    eps = importlib.metadata.entry_points(group="console_scripts")
    assert any(ep.name == "logt" and ep.value == "logt.__main__:main" for ep in eps)


def test_sdist_carries_every_source_and_no_build_product(tmp_path):
    pytest.importorskip("build", reason="the 'build' package (the [test] extra) is not installed")
    if not (REPO / "setup.py").is_file():
        pytest.skip(f"no source tree at {REPO}")
    r = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--skip-dependency-check", "--outdir", str(tmp_path),
                        str(REPO)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (sdist,) = tmp_path.glob("logt-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    need = (_source("*.py") + _source("*.pyx") + _source("*.pxd") + ["logt/py.typed"]
            + sorted(p.relative_to(REPO).as_posix() for p in (REPO / "csrc").glob("*.[ch]"))
            + ["setup.py", "pyproject.toml", "README.md", "MANIFEST.in"])
    missing = [p for p in need if p not in names]
    assert not missing, f"missing from the sdist: {missing}"
    leaked = [n for n in names if n.startswith("logt/") and n.endswith((".c", ".so", ".o", ".html"))]
    assert not leaked, f"generated files in the sdist: {leaked}"
