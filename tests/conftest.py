"""Test-session header: which logt is under test (the installed wheel, or a source checkout)."""
import os

import logt


def pytest_report_header(config):
    where = os.path.dirname(os.path.abspath(logt.__file__))
    return f"logt {logt.__version__} imported from {where}"
