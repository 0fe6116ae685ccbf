"""Command line: python -m logt toy | metric | kappa | bench.

Exit codes: 0 success; 2 a usage error (bad option or value, missing data folder,
no command: the help is printed), always as one line "logt: error: ..." on
stderr, never a traceback.
"""
import argparse
import math
import sys

DESCRIPTION = ("Experiments of logt (Zhang et al., ICML 2013): 'toy' reproduces Fig. 1, 'metric' "
               "Fig. 2, 'kappa' projections vs L/lam, 'bench' prints the speed report. Exit codes: 0 success, 2 usage error.")


class _Parser(argparse.ArgumentParser):
    """argparse with the one-line 'logt: error: ...' message and exit code 2."""

    def error(self, message):
        sys.stderr.write(f"logt: error: {' '.join(str(message).split())}\n")
        sys.exit(2)


def _count(minimum):
    """An integer option >= ``minimum``; integral floats such as ``1e6`` are accepted (as in minimize)."""
    def conv(s):
        try:
            v = int(s)
        except ValueError:
            try:
                f = float(s)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
            if not math.isfinite(f) or f != int(f):
                raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
            v = int(f)
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {s!r}")
        return v
    conv.__name__ = "integer"
    return conv


def _positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {s!r}")
    return v


_int = _count(1)   # kept for callers of the old helper


def _add_run_options(p, repeats_help, out):
    """Options shared by the experiments: repeats, seed, worker processes, output folder, progress."""
    p.add_argument("--repeats", type=_count(1), default=10, help=f"{repeats_help} (default 10)")
    p.add_argument("--seed", type=_count(0), default=0,
                   help="seed of all runs; the same seed reproduces the results bit for bit (default 0)")
    p.add_argument("--jobs", type=_count(1), default=None, help="worker processes (default: min(2, cores))")
    p.add_argument("--out", default=out, help=f"folder for CSV, JSON and PNG (default {out})")
    p.add_argument("--quiet", action="store_true", help="no progress line")


# smallest metric budget: Theorem 1's first epoch (M = 402, B1 = 1 at L = 4.1, lam = 0.1) needs 804 calls
METRIC_T_MIN = 1000


def build_parser():
    ap = _Parser(prog="logt", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="cmd", metavar="{toy,metric,kappa,bench}", parser_class=_Parser)

    t = sub.add_parser("toy", help="Fig. 1: logT, Epoch-GD and SGD on the 5x5 PSD toy problem",
                       description="Fig. 1: logT, Epoch-GD and SGD on the 5x5 PSD toy problem, for T on a "
                                   "geometric grid from --T-min to --T-max.")
    t.add_argument("--T-max", type=_count(1), default=10**6, help="largest budget T (default 1e6)")
    t.add_argument("--T-min", type=_count(1), default=10**3, help="smallest budget T, <= --T-max (default 1e3)")
    t.add_argument("--per-decade", type=_count(1), default=2, help="grid points per decade of T (default 2)")
    t.add_argument("--methods", default=None,
                   help="extra rows, comma-separated: logt_acc, minibatch_sgd, one_projection_sgd, sgd_suffix")
    _add_run_options(t, "independent runs per (method, T)", "results/toy")

    m = sub.add_parser("metric", help="Fig. 2: F(W) vs projections for metric learning (logT, Epoch-GD, SGD)",
                       description="Fig. 2: F(W) on 10^4 test pairs against the number of projections for "
                                   "metric learning (logT, Epoch-GD, SGD; optional rows with --methods).")
    m.add_argument("--dataset", choices=["mushrooms", "adult", "synthetic"], default="mushrooms",
                   help="mushrooms or adult (LIBSVM files in --data-dir), or synthetic (two Gaussian "
                        "classes, no files; for smoke tests) (default mushrooms)")
    m.add_argument("--data-dir", default=None,
                   help="folder with mushrooms.gz, a9a.gz, a9a.t.gz (default $LOGT_DATA_DIR)")
    m.add_argument("--T", type=_count(METRIC_T_MIN), default=200_000,
                   help=f"budget of pair gradients per run, all methods, >= {METRIC_T_MIN} (default 2e5)")
    m.add_argument("--lam", type=_positive_float, default=0.1, help="regularization lam > 0 (default 0.1)")
    m.add_argument("--methods", default=None,
                   help="extra rows, comma-separated: logt_acc, minibatch_sgd, one_projection_sgd, sgd_suffix")
    _add_run_options(m, "independent runs per method", "results/metric")

    k = sub.add_parser("kappa", help="projections needed vs L/lam: logT, logT-acc and the baselines",
                       description="Projections each method needs to reach a target accuracy, against the "
                                   "condition number L/lam.")
    k.add_argument("--T", type=_count(1), default=200_000, help="budget per run, all methods (default 2e5)")
    k.add_argument("--kappas", default="1,10,100,1000,1e4", help="values of L/lam (default 1,10,100,1000,1e4)")
    k.add_argument("--domains", default="psd,ball", help="psd and/or ball (default both)")
    k.add_argument("--methods", default=None, help="comma-separated rows (default all; see logt.experiments.kappa)")
    k.add_argument("--tol", type=_positive_float, default=1.0,
                   help="target = tol * best baseline's excess, > 0 (default 1)")
    k.add_argument("--max-extend", type=_count(1), default=16,
                   help="rerun methods short of the target with 4T, 16T, ... up to this factor (default 16)")
    _add_run_options(k, "independent runs per (method, L/lam)", "results/kappa")

    sub.add_parser("bench", add_help=False,
                   help="the speed report: same as python -m logt.bench (its options follow 'bench')")
    return ap, sub


def _run(ap, args):
    import os
    if args.cmd == "toy":
        if args.T_min > args.T_max:
            ap.error(f"--T-min ({args.T_min}) must be <= --T-max ({args.T_max})")
        from logt.experiments import toy
        return toy.main(args)
    if args.cmd == "metric":
        if args.dataset != "synthetic":
            d = args.data_dir or os.environ.get("LOGT_DATA_DIR")
            if not d:
                ap.error("metric needs the LIBSVM files: pass --data-dir DIR (e.g. ../shared/data) "
                         "or set LOGT_DATA_DIR")
            if not os.path.isdir(d):
                ap.error(f"--data-dir {d!r} is not a folder")
        from logt.experiments import metric
        return metric.main(args)
    if args.cmd == "kappa":
        from logt.experiments import kappa
        return kappa.main(args)
    ap.error(f"unknown command {args.cmd}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        from logt.bench.__main__ import main as bench_main
        return bench_main(argv[1:])
    ap, sub = build_parser()
    if not argv:
        ap.print_help()
        return 2
    args = ap.parse_args(argv)
    if args.cmd is None:
        ap.error("choose a command: toy, metric, kappa or bench (see logt --help)")
    try:
        return _run(ap, args)
    except (ValueError, TypeError, OSError) as e:
        # raised up front or inside a worker process (re-raised here): one line, no traceback
        ap.error(f"{type(e).__name__}: {e}")
    except KeyboardInterrupt:
        sys.stderr.write("logt: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
