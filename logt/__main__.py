"""Command line: ``python -m logt toy | metric | kappa | bench``."""
import argparse
import sys


def _int(s):
    return int(float(s))   # accepts 1e6


def _add_run_options(p, repeats_help, out):
    """Options shared by the experiments: repeats, seed, worker processes, output folder, progress."""
    p.add_argument("--repeats", type=int, default=10, help=f"{repeats_help} (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: min(2, cores))")
    p.add_argument("--out", default=out, help=f"folder for CSV, JSON and PNG (default {out})")
    p.add_argument("--quiet", action="store_true", help="no progress line")


def build_parser():
    ap = argparse.ArgumentParser(prog="python -m logt", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("toy", help="Fig. 1: logT, Epoch-GD and SGD on the 5x5 PSD toy problem")
    t.add_argument("--T-max", type=_int, default=10**6, help="largest budget T (default 1e6)")
    t.add_argument("--T-min", type=_int, default=10**3, help="smallest budget T (default 1e3)")
    t.add_argument("--per-decade", type=int, default=2, help="grid points per decade of T (default 2)")
    t.add_argument("--methods", default=None,
                   help="extra rows, comma-separated: logt_acc, minibatch_sgd, one_projection_sgd, sgd_suffix")
    _add_run_options(t, "independent runs per (method, T)", "results/toy")

    m = sub.add_parser("metric", help="Fig. 2: F(W) vs projections for metric learning (logT, Epoch-GD, SGD)")
    m.add_argument("--dataset", choices=["mushrooms", "adult", "synthetic"], default="mushrooms")
    m.add_argument("--data-dir", default=None,
                   help="folder with mushrooms.gz, a9a.gz, a9a.t.gz (default $LOGT_DATA_DIR)")
    m.add_argument("--T", type=_int, default=200_000,
                   help="budget of pair gradients per run, all methods (default 2e5)")
    m.add_argument("--lam", type=float, default=0.1, help="regularization lam (default 0.1)")
    m.add_argument("--methods", default=None,
                   help="extra rows, comma-separated: logt_acc, minibatch_sgd, one_projection_sgd, sgd_suffix")
    _add_run_options(m, "independent runs per method", "results/metric")

    k = sub.add_parser("kappa", help="projections needed vs L/lam: logT, logT-acc and the baselines")
    k.add_argument("--T", type=_int, default=200_000, help="budget per run, all methods (default 2e5)")
    k.add_argument("--kappas", default="1,10,100,1000,1e4", help="values of L/lam (default 1,10,100,1000,1e4)")
    k.add_argument("--domains", default="psd,ball", help="psd and/or ball (default both)")
    k.add_argument("--methods", default=None, help="comma-separated rows (default all; see logt.experiments.kappa)")
    k.add_argument("--tol", type=float, default=1.0, help="target = tol * best baseline's excess (default 1)")
    k.add_argument("--max-extend", type=int, default=16,
                   help="rerun methods short of the target with 4T, 16T, ... up to this factor (default 16)")
    _add_run_options(k, "independent runs per (method, L/lam)", "results/kappa")

    sub.add_parser("bench", add_help=False,
                   help="the speed report: same as python -m logt.bench (its options follow 'bench')")
    return ap, sub


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        from logt.bench.__main__ import main as bench_main
        return bench_main(argv[1:])
    ap, sub = build_parser()
    args = ap.parse_args(argv)
    if args.cmd == "toy":
        from logt.experiments import toy
        return toy.main(args)
    if args.cmd == "metric":
        import os
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


if __name__ == "__main__":
    sys.exit(main())
