"""The learners comparison report runs (smoke test on wine, no peers) and formats its table."""
import pytest

pytest.importorskip("sklearn")

from logt.bench import learners  # noqa: E402


def test_wine_rows_and_table(monkeypatch):
    monkeypatch.setenv("LOGT_METRIC_LEARN_PYTHON", "/nonexistent/python")
    rows = learners.evaluate("wine", peers=True, log=lambda m: None)
    by = {r["method"]: r for r in rows}
    assert set(by) == {"Euclidean", "MetricLearner()", "MetricLearner.paper()", "NCA", "LMNN", "ITML", "MMC",
                       "SCML"}
    for m in ("Euclidean", "MetricLearner()", "MetricLearner.paper()", "NCA"):
        assert 0.8 <= by[m]["acc1"] <= 1.0 and 0.8 <= by[m]["acc5"] <= 1.0
    assert by["LMNN"]["acc1"] is None and "not found" in by["LMNN"]["note"]
    text = learners.format_section(rows)
    assert text.count("| wine |") == 8 and "NCA time / this" in text
