"""Every code example of README.md and the documentation pages (docs/**/*.md) runs, and prints
what the page says it prints; every table row has as many cells as its header.

Examples are doctest sessions in ```` ```pycon ```` fences (``>>>`` / ``...`` prompts, the expected
output below them); the blocks of one page run in order in one namespace, with
``doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE``. A page may not hold a ```` ```python ```` fence:
such a block would never run, so its output could go stale unnoticed (use ``pycon`` for an example,
``text`` or ``bash`` for anything else). A page whose examples import an optional extra
(scikit-learn, Dask, matplotlib) is skipped with a reason when the extra is missing.
"""
import doctest
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(```+)([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
OPTIONAL = {"sklearn": "scikit-learn (the [sklearn] extra)", "distributed": "Dask (the [dask] extra)",
            "dask": "Dask (the [dask] extra)", "matplotlib": "matplotlib (the [plot] extra)"}


def pages():
    if not (REPO / "docs").is_dir():
        return []
    found = [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))
    return [p for p in found if p.is_file() and "_build" not in p.parts and "generated" not in p.parts]


def fences(text):
    """``(language, first line number of the body, body)`` of every fenced block."""
    for m in FENCE.finditer(text):
        yield m.group(2).lower(), text.count("\n", 0, m.start(3)) + 1, m.group(3)


def _id(p):
    return p.relative_to(REPO).as_posix()


@pytest.mark.parametrize("page", pages(), ids=_id)
def test_no_unexecuted_python_blocks(page):
    bad = [line for lang, line, _ in fences(page.read_text()) if lang in ("python", "py")]
    assert not bad, (f"{_id(page)}: ```python block(s) at line(s) {bad} would never run; write the example "
                     "as a ```pycon doctest session (executed by this test), or mark non-Python code as text")


_PIPE = re.compile(r"(?<!\\)\|")


def table_cells(line):
    """Cells of a Markdown table row: split at the pipes not escaped as ``\\|`` (GFM splits at every other
    pipe, inside a code span too)."""
    return len(_PIPE.split(line.strip())) - 2


@pytest.mark.parametrize("page", pages(), ids=_id)
def test_table_rows_have_as_many_cells_as_their_header(page):
    """A pipe in a cell (``max|X|``, a norm ``||x||`` in a code span) would start a new cell: the numbers after
    it land under the wrong heading, the last ones are dropped. Write it as ``\\|``."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), page.read_text())     # tables outside fences
    bad, head = [], None
    for number, line in enumerate(text.split("\n"), 1):
        if not line.startswith("|"):
            head = None
        elif head is None:
            head = table_cells(line)
        elif table_cells(line) != head:
            bad.append(f"line {number}: {table_cells(line)} cells, its header {head}")
    assert not bad, f"{_id(page)}: " + "; ".join(bad)


@pytest.mark.parametrize("page", [p for p in pages() if ">>> " in p.read_text()], ids=_id)
def test_page_examples_run_and_print_what_the_page_says(page, tmp_path, monkeypatch):
    text = page.read_text()
    blocks = [(line, body) for lang, line, body in fences(text) if lang == "pycon"]
    assert blocks, f"{_id(page)} has '>>> ' outside ```pycon fences"
    source = "\n".join(body for _, body in blocks)
    for mod, what in OPTIONAL.items():
        if re.search(rf"^\s*(>>>|\.\.\.)\s+(import|from)\s+{mod}\b", source, re.M) and \
                importlib.util.find_spec(mod) is None:
            pytest.skip(f"{_id(page)}: its examples need {what}, which is not installed")
    monkeypatch.chdir(tmp_path)              # examples that write files write them here
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs = {"__name__": "__main__"}
    for line, body in blocks:
        test = parser.get_doctest(body, globs, f"{_id(page)}:{line}", str(page), line - 1)
        report = []
        runner.run(test, out=report.append, clear_globs=False)
        if runner.failures:
            pytest.fail(f"{_id(page)}, block at line {line}:\n" + "".join(report)[-4000:], pytrace=False)
        globs = test.globs
    assert runner.tries > 0
