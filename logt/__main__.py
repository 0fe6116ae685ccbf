"""Command line: ``python -m logt toy | metric | bench``."""
import argparse
import sys


def _int(s):
    return int(float(s))   # accepts 1e6


def build_parser():
    ap = argparse.ArgumentParser(prog="python -m logt", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("toy", help="Fig. 1: logT, Epoch-GD and SGD on the 5x5 PSD toy problem")
    t.add_argument("--T-max", type=_int, default=10**6, help="largest budget T (default 1e6)")
    t.add_argument("--T-min", type=_int, default=10**3, help="smallest budget T (default 1e3)")
    t.add_argument("--per-decade", type=int, default=2, help="grid points per decade of T (default 2)")
    t.add_argument("--repeats", type=int, default=10, help="independent runs per (method, T) (default 10)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--jobs", type=int, default=None, help="worker processes (default: min(2, cores))")
    t.add_argument("--out", default="results/toy", help="folder for CSV, JSON and PNG (default results/toy)")
    t.add_argument("--quiet", action="store_true", help="no progress line")

    m = sub.add_parser("metric", help="Fig. 2: F(W) vs projections for metric learning (logT, Epoch-GD, SGD)")
    m.add_argument("--dataset", choices=["mushrooms", "adult", "synthetic"], default="mushrooms")
    m.add_argument("--data-dir", default=None,
                   help="folder with mushrooms.gz, a9a.gz, a9a.t.gz (default $LOGT_DATA_DIR)")
    m.add_argument("--T", type=_int, default=200_000,
                   help="budget of pair gradients per run, all methods (default 2e5)")
    m.add_argument("--repeats", type=int, default=10, help="independent runs per method (default 10)")
    m.add_argument("--lam", type=float, default=0.1, help="regularization lam (default 0.1)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--jobs", type=int, default=None, help="worker processes (default: min(2, cores))")
    m.add_argument("--out", default="results/metric", help="folder for CSV, JSON and PNG (default results/metric)")
    m.add_argument("--quiet", action="store_true", help="no progress line")
    return ap, sub


def main(argv=None):
    ap, sub = build_parser()
    args = ap.parse_args(argv)
    if args.cmd == "toy":
        from logt.experiments import toy
        return toy.main(args)
    if args.cmd == "metric":
        from logt.experiments import metric
        return metric.main(args)
    ap.error(f"unknown command {args.cmd}")


if __name__ == "__main__":
    sys.exit(main())
