"""Sphinx configuration of logt's documentation: the user guide (Markdown, MyST) and the API
reference generated from the numpydoc docstrings of the INSTALLED package.

Build (warnings are errors, as in CI), from a directory outside the source tree so that
``import logt`` finds the installed package:
``python -m sphinx -W --keep-going -b html <repo>/docs <out>``.
"""
import importlib.metadata

import logt

project = "logt"
author = "the logt developers"
copyright = "2026, the logt developers"
release = importlib.metadata.version("logt")
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

# MyST: GitHub-style Markdown plus heading anchors (so [text](page.md#section) links resolve)
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 4

# API reference: one page per object, written at build time from the docstrings
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False     # the autosummary templates list the members
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

# no intersphinx: the build must not need the network (CI reaches only the package index)

html_theme = "pydata_sphinx_theme"
html_title = f"logt {release}"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}
html_static_path = []

assert logt.__version__ == release


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Leave out what a class inherits from scikit-learn (``set_params``, ``set_fit_request``, ...):
    the reference documents logt's API; scikit-learn documents its own."""
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("sklearn.") or (name.startswith("set_") and name.endswith("_request")):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
