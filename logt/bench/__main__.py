"""``python -m logt.bench``: the speed report (markdown) of every hot path vs its references.

Options: ``--quick`` (fewer sizes and rounds, small budgets: under a minute),
``--only projection|toy|metric|e2e|learners|dask|bank|family|family2|family3|large`` (repeatable; all but the
first four run only when asked for), ``--out FILE.md``,
``--data-dir DIR`` (LIBSVM files; default ``LOGT_DATA_DIR`` or ``../shared/data``).
Progress goes to stderr, the report to stdout (and to ``--out``).
"""
import argparse
import sys

from logt.bench.report import SECTIONS, run


def build_parser():
    ap = argparse.ArgumentParser(prog="python -m logt.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and rounds, small budgets (< 1 min)")
    ap.add_argument("--only", action="append", choices=SECTIONS,
                    help="run only this section (repeatable); default: all")
    ap.add_argument("--out", help="also write the markdown report to this file")
    ap.add_argument("--data-dir", help="folder with mushrooms.gz, a9a.gz, a9a.t.gz")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)

    def log(msg):
        if not args.quiet:
            print(f"[logt.bench] {msg}", file=sys.stderr, flush=True)

    text = run(only=args.only, quick=args.quick, data_dir=args.data_dir, log=log)
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
