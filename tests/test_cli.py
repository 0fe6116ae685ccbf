"""The command line: one-line errors with exit code 2, help text, tiny end-to-end runs (subprocess)."""
import os

import pytest
from _child import child_env, run_python



def run(*args, timeout=120, env=None):
    return run_python(["-m", "logt", *args], env=child_env(drop=("LOGT_DATA_DIR",), **(env or {})),
                      timeout=timeout)


def assert_usage_error(p, pattern):
    import re
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert "Traceback" not in p.stderr
    assert lines[-1].startswith("logt: error: "), p.stderr
    assert re.search(pattern, lines[-1]), lines[-1]
    # usage line (argparse) and the one error line, nothing else
    assert len([ln for ln in lines if not ln.startswith(("usage:", " "))]) == 1, p.stderr


def test_no_command_prints_help_exit_2():
    p = run()
    assert p.returncode == 2
    assert "toy" in p.stdout and "metric" in p.stdout and "bench" in p.stdout
    assert "Exit codes" in p.stdout
    assert "required" not in p.stdout + p.stderr


@pytest.mark.parametrize("cmd", [[], ["toy"], ["metric"]])
def test_help_plain_text_every_option_documented(cmd):
    p = run(*cmd, "--help")
    assert p.returncode == 0, p.stderr
    assert "``" not in p.stdout and ":func:" not in p.stdout and ":mod:" not in p.stdout
    if cmd:
        # every option line "  --opt ..." has a help text after it (argparse prints none when help is missing)
        import re
        opts = re.findall(r"^  (--[\w-]+)", p.stdout, flags=re.M)
        assert len(opts) >= 6
        body = p.stdout.split("options:")[-1] if "options:" in p.stdout else p.stdout
        blocks = re.split(r"\n(?=  -)", body)
        for b in blocks:
            if b.strip().startswith("-"):
                words = b.split()
                assert len(words) > 2, f"option without help: {b!r}"
    if cmd == ["metric"]:
        assert "synthetic" in p.stdout and "seed" in p.stdout


@pytest.mark.parametrize("args, pattern", [
    (["toy", "--T-max", "10", "--T-min", "50"], r"--T-min \(50\) must be <= --T-max \(10\)"),
    (["toy", "--T-max", "1.5"], r"--T-max.*integer.*'1.5'"),
    (["toy", "--T-max", "abc"], r"--T-max.*integer"),
    (["toy", "--T-max", "nan"], r"--T-max.*integer"),
    (["toy", "--T-min", "0"], r"--T-min.*>= 1"),
    (["toy", "--repeats", "0"], r"--repeats.*>= 1"),
    (["toy", "--jobs", "0"], r"--jobs.*>= 1"),
    (["toy", "--per-decade", "-1"], r"--per-decade.*>= 1"),
    (["toy", "--seed", "-3"], r"--seed.*>= 0"),
    (["toy", "--bogus"], r"unrecognized arguments: --bogus"),
    (["metric", "--dataset", "synthetic", "--T", "10"], r"--T.*>= 1000"),
    (["metric", "--dataset", "iris"], r"--dataset.*invalid choice"),
    (["metric", "--dataset", "synthetic", "--lam", "0"], r"--lam.*> 0"),
    (["metric", "--dataset", "synthetic", "--lam", "inf"], r"--lam.*> 0"),
    (["metric"], r"--data-dir|LOGT_DATA_DIR"),
    (["metric", "--data-dir", "/nonexistent/x"], r"--data-dir '/nonexistent/x' is not a folder"),
    (["frobnicate"], r"invalid choice: 'frobnicate'"),
])
def test_usage_errors_one_line_exit_2(args, pattern):
    assert_usage_error(run(*args), pattern)


def test_worker_error_is_one_line(tmp_path):
    # a grid whose smallest T is too small for Epoch-GD/logT: raised inside the run, reported as one line
    p = run("toy", "--T-max", "3", "--T-min", "1", "--repeats", "1", "--jobs", "2", "--quiet",
            "--out", str(tmp_path))
    if p.returncode != 0:
        assert_usage_error(p, r"T")
    else:
        assert "Traceback" not in p.stderr


def test_toy_tiny_run_accepts_float_T(tmp_path):
    p = run("toy", "--T-max", "2e3", "--T-min", "1e3", "--per-decade", "1", "--repeats", "1", "--jobs", "1",
            "--quiet", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert os.path.exists(tmp_path / "toy_summary.csv")


def test_metric_synthetic_tiny_verdict_is_equal_accuracy(tmp_path):
    p = run("metric", "--dataset", "synthetic", "--T", "2e3", "--repeats", "1", "--jobs", "1", "--quiet",
            "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    v = [ln for ln in p.stdout.splitlines() if ln.startswith("equal accuracy")]
    assert len(v) == 1 and "logT (auto)" in v[0], p.stdout
