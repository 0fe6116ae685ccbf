"""Run independent experiment tasks on worker processes, in any order, with progress."""
import os
from concurrent.futures import ProcessPoolExecutor, as_completed


def default_jobs():
    return max(1, min(os.cpu_count() or 1, 2))


def run_tasks(fn, tasks, n_jobs, on_done):
    """Call ``fn(task)`` for every task; ``on_done(task, result)`` in completion order.

    Results are returned in task order, so the output never depends on scheduling.
    Every worker runs its BLAS single-threaded (logt.minimize sets this itself).
    """
    results = [None] * len(tasks)
    if n_jobs <= 1:
        for i, t in enumerate(tasks):
            results[i] = fn(t)
            on_done(t, results[i])
        return results
    with ProcessPoolExecutor(max_workers=n_jobs) as ex:
        futs = {ex.submit(fn, t): i for i, t in enumerate(tasks)}
        for f in as_completed(futs):
            i = futs[f]
            results[i] = f.result()
            on_done(tasks[i], results[i])
    return results
