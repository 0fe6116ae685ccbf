"""Locating the shared LIBSVM test data (``mushrooms.gz``, ``a9a.gz``, ``a9a.t.gz``).

Looked up, in order: the ``LOGT_DATA_DIR`` environment variable, then the
folder ``shared/data`` next to the repository's parent (for a checkout at
``/work/main`` that is ``/work/shared/data``). Tests that need a file call
:func:`require_data_file`, which skips with a clear reason when it is absent.
"""
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_FILES = ("mushrooms.gz", "a9a.gz", "a9a.t.gz")


def data_dir():
    """The data folder as a Path, or None when no candidate exists."""
    env = os.environ.get("LOGT_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    return None


def require_data_file(name):
    """Path of data file ``name``; skips the calling test when it is absent."""
    d = data_dir()
    if d is None:
        pytest.skip("LIBSVM data not found: set LOGT_DATA_DIR or provide ../shared/data "
                    f"next to the repository ({REPO_ROOT})")
    p = d / name
    if not p.is_file():
        pytest.skip(f"LIBSVM data file {name} not found in {d}")
    return p


def require_data_dir(*names):
    """The data folder, after checking that every file in ``names`` is there (else skip)."""
    for name in names or DATA_FILES:
        p = require_data_file(name)
    return p.parent
