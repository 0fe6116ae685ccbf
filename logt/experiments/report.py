"""Tables, CSV/JSON output and progress lines shared by the experiments."""
import csv
import json
import os
import sys
import time


def write_records(records, out_dir, stem):
    """Write ``records`` (list of flat dicts) as ``stem.csv`` and ``stem.json``; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    if records:
        p = os.path.join(out_dir, stem + ".csv")
        with open(p, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(records[0]))
            w.writeheader()
            w.writerows(records)
        paths.append(p)
    p = os.path.join(out_dir, stem + ".json")
    with open(p, "w") as fh:
        json.dump(records, fh, indent=1)
    paths.append(p)
    return paths


def format_table(headers, rows):
    """A plain markdown table (right-aligned numbers)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.rjust(w) for c, w in zip(cells[0], widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for r in cells[1:]:
        lines.append("| " + " | ".join(c.rjust(w) for c, w in zip(r, widths)) + " |")
    return "\n".join(lines)


class Progress:
    """One status line on stderr: done/total, elapsed and a rough time left."""

    def __init__(self, total, label, enabled=True):
        self.total, self.label, self.enabled = total, label, enabled
        self.done, self.t0, self.work_done, self.work_total = 0, time.perf_counter(), 0.0, None
        self.tty = sys.stderr.isatty()
        self.last = -1.0

    def update(self, n=1, work=None, work_total=None):
        self.done += n
        if work is not None:
            self.work_done += work
            self.work_total = work_total
        if not self.enabled:
            return
        el = time.perf_counter() - self.t0
        # a live line on a terminal (at most 5 per second); in a log, a line every 10 s
        if self.done < self.total and el - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = el
        frac = (self.work_done / self.work_total) if self.work_total else self.done / self.total
        left = el * (1 - frac) / frac if frac > 0 else float("nan")
        sys.stderr.write(f"{chr(13) if self.tty else ''}{self.label}: {self.done}/{self.total} runs, {el:6.1f} s elapsed, ~{left:5.0f} s left ")
        if not self.tty or self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()
