"""The default's check rule written out (an independent reference for ``subspace.choose_candidate``)."""
import numpy as np


def _ahead(new, old, z):
    """Ahead by more than ``z`` standard errors; exactly ``z`` of them (to rounding) is not ahead."""
    d = new.astype(float) - old
    margin, se = d.mean(), z * d.std(ddof=1) / np.sqrt(d.size)
    return margin > se and not np.isclose(margin, se, rtol=1e-9, atol=0.0)


def paired_reference(hits, z, further_z=None):
    """The plainest candidate ("euclidean", else "subspace") unless the most accurate (ties in the order
    learned, subspace, euclidean) beats it on the same rows by more than ``z`` standard errors of the paired
    hit difference; then "standardized", "principal" and "principal_units" in turn (when given), each replacing
    the choice so far when it beats it by more than ``further_z`` of them (default ``z``)."""
    fz = z if further_z is None else further_z
    plain = "euclidean" if "euclidean" in hits else "subspace"
    order = [c for c in ("learned", "subspace", "euclidean") if c in hits]
    acc = {c: np.mean(hits[c]) for c in order}
    best = [c for c in order if acc[c] == max(acc.values())][0]
    choice = best if best != plain and _ahead(hits[best], hits[plain], z) else plain
    if "standardized" in hits and _ahead(hits["standardized"], hits[choice], fz):
        choice = "standardized"
    if "principal" in hits and _ahead(hits["principal"], hits[choice], fz):
        choice = "principal"
    if "principal_units" in hits and _ahead(hits["principal_units"], hits[choice], fz):
        choice = "principal_units"
    return choice
