"""The bank grid and the held-out family (logt.bench.grid): coverage, references, the comparison."""
import math

import numpy as np
import pytest

from logt.bench import grid


def test_grid_covers_the_issue():
    specs = grid.grid_specs()
    cells = {(s["kappa"], s["T"]) for s in specs}
    assert cells == {(k, T) for k in (1, 10, 1e2, 1e3, 1e4, 1e5) for T in (10**4, 10**5, 10**6)}
    assert len(specs) == 18 * grid.INSTANCES_PER_CELL >= 18 * 3
    assert {s["domain"] for s in specs} == {"psd", "ball", "box", "trace_psd"}
    assert {s["where"] for s in specs} == {"inside", "boundary"}
    assert {s["kind"] for s in specs} == {"diag", "python", "ls"}        # compiled and Python oracles
    assert {s["shape"] for s in specs} == set(grid.SHAPES)
    assert min(s["noise"] for s in specs) == 0.0 and max(s["noise"] for s in specs) >= 30
    assert max(s["n"] for s in specs if s["domain"] in ("ball", "box")) <= 200
    assert max(s["n"] for s in specs if s["domain"] in ("ball", "box")) > 100
    assert all(s["T"] <= grid.PYTHON_T_MAX for s in specs if s["kind"] == "python")
    assert len({s["name"] for s in specs}) == len(specs)


def test_family_is_held_out_and_large():
    fam = grid.family_specs()
    assert len(fam) == grid.FAMILY_SIZE >= 100
    assert not {s["name"] for s in fam} & {s["name"] for s in grid.grid_specs()}
    assert {s["kind"] for s in fam} >= {"diag", "python_t", "logistic", "huber", "metric", "ls"}
    assert min(s["kappa"] for s in fam) < 10 and max(s["kappa"] for s in fam) > 1e4
    assert min(s["T"] for s in fam) < 2e4 and max(s["T"] for s in fam) > 5e5
    assert grid.family_specs() == fam                     # seeded: the same problems every time
    fam2 = grid.family_specs(seed=grid.FAMILY2_SEED)     # the second family: other problems, other names
    assert len(fam2) == len(fam) and all(s["name"].startswith("g") for s in fam2)
    assert [s["seed"] for s in fam2] != [s["seed"] for s in fam]
    fam3 = grid.family_specs(seed=grid.FAMILY3_SEED)     # the third: drawn after every rule, other names again
    assert len(fam3) == len(fam) and all(s["name"].startswith("j") for s in fam3)
    assert len({s["seed"] for s in fam + fam2 + fam3}) == 3 * len(fam)


def test_large_family_reaches_thousands_of_dimensions():
    large = grid.large_specs()
    assert len(large) == grid.LARGE_SIZE and grid.large_specs() == large
    assert all(s["name"].startswith("h") for s in large)
    entries = [s["n"] ** 2 if s["domain"] in ("psd", "trace_psd") else s["n"] for s in large]
    assert min(entries) >= 200 and max(entries) >= 3000 and sorted(entries)[len(entries) // 2] >= 500
    assert {s["kind"] for s in large} >= {"diag", "ls", "logistic", "python", "metric"}
    assert {s["domain"] for s in large} == {"psd", "ball", "box", "trace_psd"}
    assert min(s["kappa"] for s in large) < 10 and max(s["kappa"] for s in large) > 1e4
    assert all(s["T"] <= grid.LARGE_MATRIX_T_MAX for s in large if s["domain"] in ("psd", "trace_psd"))
    assert all(s.get("rows", 2000) >= 2 * s["n"] for s in large if s["kind"] in ("ls", "logistic"))


@pytest.mark.parametrize("shape", grid.SHAPES + ("power",))
def test_spectrum_spans_lam_to_kappa_lam(shape):
    h = grid.spectrum(np.random.default_rng(0), 17, 1e3, shape, 0.5)
    assert len(h) == 17 and h.min() == pytest.approx(0.5) and h.max() == pytest.approx(500.0)
    assert np.all((h >= 0.5 * (1 - 1e-12)) & (h <= 500.0 * (1 + 1e-12)))


def _first_order_optimal(p):
    x = p.x_star
    assert np.allclose(p.project(x), x, atol=1e-10)
    assert p.residual(x) <= 1e-7 * (1 + np.linalg.norm(x))
    rng = np.random.default_rng(1)
    g = p.grad(x)
    for _ in range(20):                                    # <grad F(x*), y - x*> >= 0 for feasible y
        e = rng.normal(size=x.shape)
        e = 0.5 * (e + e.T) if e.ndim == 2 else e
        y = p.project(x + 0.1 * e * max(1.0, np.linalg.norm(x)))
        assert np.vdot(g, y - x) >= -1e-6 * np.linalg.norm(y - x) * (1 + np.linalg.norm(g))


@pytest.mark.parametrize("name", ["k1e3_T1e4_0_diag_psd", "k1e4_T1e5_1_diag_ball", "k1e5_T1e4_2_diag_box",
                                  "k1e2_T1e4_3_diag_trace_psd", "k1e1_T1e4_4_python_box", "k1e3_T1e4_5_ls_box",
                                  "k1e3_T1e5_4_python_ball"])
def test_grid_references_are_optimal(name):
    spec = next(s for s in grid.grid_specs() if s["name"] == name)
    p = grid.problem(spec)
    _first_order_optimal(p)
    closed = None
    if spec["kind"] == "diag" and spec["domain"] == "box":           # separable: the closed form clip(a)
        closed = np.clip(p.oracle.a, p.domain.lower, p.domain.upper)
    if spec["kind"] == "diag" and spec["domain"] == "ball":          # x = h a / (h + mu), ||x|| = r
        h, a, r = p.oracle.h, p.oracle.a, p.domain.radius
        lo, hi = 0.0, float(np.max(h * np.abs(a))) / r
        for _ in range(200):
            mu = 0.5 * (lo + hi)
            lo, hi = (mu, hi) if np.linalg.norm(h * a / (h + mu)) > r else (lo, mu)
        closed = h * a / (h + hi) if np.linalg.norm(a) > r else a
    if closed is not None:       # the same F* (to far below the bench's floor) and nearly the same point
        assert abs(p.f_star - p.value(closed)) <= 1e-12 * max(1.0, abs(p.f_star)) + 1e-12 * p.value(p.x0)
        assert np.allclose(p.x_star, closed, atol=1e-4)


@pytest.mark.parametrize("i", [0, 17, 42, 77, 101])
def test_family_references_are_optimal(i):
    p = grid.problem(grid.family_specs()[i])
    _first_order_optimal(p)


@pytest.mark.parametrize("name", ["h001_diag_ball", "h003_ls_ball", "h017_diag_trace_psd", "h023_diag_box"])
def test_large_references_are_optimal(name):
    p = grid.problem(next(s for s in grid.large_specs() if s["name"] == name))
    _first_order_optimal(p)
    if name == "h023_diag_box":                                      # d = 3,165: the closed form clip(a)
        closed = np.clip(p.oracle.a, p.domain.lower, p.domain.upper)
        assert abs(p.f_star - p.value(closed)) <= 1e-12 * max(1.0, abs(p.f_star)) + 1e-12 * p.value(p.x0)


def test_large_section_quick_renders():
    text = grid.large_section(quick=True, log=lambda m: None)
    assert "## Large dimensions: 3 generated problems" in text and "**Summary** (3 problems)" in text
    assert "runs with success=True at >= 10x: 0" in text
    assert "| h003_ls_ball |" in text and "(d=269)" in text and "(20x20)" in text


def test_third_family_quick_section_renders():
    text = grid.family_section(quick=True, log=lambda m: None, seed=grid.FAMILY3_SEED)
    assert "## Held-out family 3: 12 generated problems" in text and "**Summary** (12 problems)" in text
    assert "runs with success=True at >= 10x: 0" in text and "| j000_metric_psd |" in text


def _rec(key, seed, excess, success=True, n_proj=10, T=1000):
    return {"problem": "p", "key": key, "seed": seed, "excess": excess, "gap0": 1.0, "f_star": 0.0,
            "error": None, "T": T, "kappa": 10.0, "method": "logt_acc" if key == "default" else key,
            "n_projections": n_proj, "success": success}


def test_summary_against_hand_computed_values():
    recs = [_rec("sgd", 0, 2e-3), _rec("sgd", 1, 4e-3), _rec("epoch_gd", 0, 1e-3), _rec("epoch_gd", 1, 5e-3),
            _rec("default", 0, 6e-3, True), _rec("default", 1, 1e-12, False, n_proj=20)]
    (row,) = grid.summarize(recs)
    assert row["best_baseline"] == "sgd" and row["best_excess"] == pytest.approx(3e-3)    # means 3e-3 vs 3e-3: first
    floor = grid.FLOOR_REL * 1.0 + 1e-13
    assert row["default_excess"] == pytest.approx((6e-3 + floor) / 2)
    assert row["ratio"] == pytest.approx((6e-3 + floor) / 2 / 3e-3)
    assert row["run_ratios"] == pytest.approx([2.0, floor / 3e-3]) and row["run_success"] == [True, False]
    assert row["proj_frac"] == pytest.approx(0.02) and row["successes"] == 1 and row["methods"] == ["logt_acc"]
    w, p90, bad, wp = grid.headline([row])
    assert w == pytest.approx(row["ratio"]) and bad == 0 and wp == pytest.approx(0.02)
    recs[4]["excess"] = 0.05                               # 16.7x with success=True: counted
    assert grid.headline(grid.summarize(recs))[2] == 1
    line = grid.summary_line(grid.summarize(recs))
    assert "runs with success=True at >= 10x: 1" in line


def test_run_records_smoke():
    specs = [s for s in grid.grid_specs(kappas=(1e3,), Ts=(10**4,))][:3]
    recs = grid.run_records(specs, seeds=range(1))
    assert len(recs) == 3 * len(grid.RUN_KEYS)
    for r in recs:
        assert r["error"] is None and math.isfinite(r["excess"]) and r["excess"] >= -1e-9 * (1 + abs(r["f_star"]))
        assert r["n_calls"] <= r["T"]
        if r["key"] == "default":
            assert r["method"] in ("logt", "logt_acc") and r["n_projections"] <= 0.02 * r["T"]
    rows = grid.summarize(recs)
    text = grid.problem_table(rows, specs) + grid.cell_table(rows, specs)
    assert all(s["name"] in text for s in specs) and "| 1e+03 | 1e+04 | 3 |" in text
