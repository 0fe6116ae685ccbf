"""Children of the Ctrl-C tests get Python's normal SIGINT handling whatever the runner set.

A process started with SIGINT ignored (``nohup``, a background job of a non-interactive
shell, some CI runners) passes ``SIG_IGN`` on to its children across ``exec``, and a Python
started with SIGINT ignored never installs its ``KeyboardInterrupt`` handler: the tests would
time out without testing logt. ``subprocess.Popen(..., preexec_fn=default_sigint)`` resets
the disposition in the child before ``exec``, so the child's Python installs the handler.
"""
import signal


def default_sigint():
    """``preexec_fn`` for the Ctrl-C tests' children: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
