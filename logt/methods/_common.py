"""Small helpers shared by the baselines added with issue 9 (the step cap option)."""
import math
import numbers



def step_cap_option(v, name):
    """``"1/L"`` (cap the step at ``1/L`` when ``L`` is known), ``"none"``, or a finite float > 0."""
    if isinstance(v, str):
        if v in ("1/L", "none"):
            return v
        raise ValueError(f"{name} must be '1/L', 'none' or a float > 0, got {v!r}")
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be '1/L', 'none' or a float > 0, got {type(v).__name__}")
    v = float(v)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return v


def resolve_step_cap(value, run):
    """The cap ``eta`` passed to the step loops (0.0 = no cap)."""
    if value == "none":
        return 0.0
    if value == "1/L":
        return 1.0 / run.L if run.L is not None else 0.0
    return float(value)

