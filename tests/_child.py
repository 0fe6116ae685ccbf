"""Child Python processes for the tests: they import the INSTALLED logt, never the source tree.

A child started with ``python -c`` or ``python -m`` has its working directory first on
``sys.path``; from the repository root that would be the unbuilt source tree instead of the
package under test. So children run in a neutral directory and inherit the environment as is
(no ``PYTHONPATH`` pointing at the checkout).
"""
import os
import subprocess
import sys
import tempfile

NEUTRAL_CWD = tempfile.gettempdir()


def child_env(drop=(), **extra):
    """``os.environ`` without the variables in ``drop``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def run_python(args, *, env=None, timeout=120, **kw):
    """``subprocess.run([sys.executable, *args])`` in :data:`NEUTRAL_CWD`, text output captured."""
    return subprocess.run([sys.executable, *args], cwd=NEUTRAL_CWD, env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


def popen_python(args, *, env=None, **kw):
    """``subprocess.Popen([sys.executable, *args])`` in :data:`NEUTRAL_CWD`."""
    return subprocess.Popen([sys.executable, *args], cwd=NEUTRAL_CWD, env=env, **kw)
