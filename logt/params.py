"""Parameter rules of Algorithm 1 (Theorems 1 and 2) and its closed-form counts.

Notation is the paper's: ``eta`` step size, ``M`` updates per epoch, ``B1``
first mini-batch size, ``T`` budget of oracle calls, ``L`` smoothness,
``lam`` strong convexity. Epoch ``k`` (1-based) uses mini-batches of
``B^k = B1 * 2**(k-1)`` and costs ``2*M*B^k`` oracle calls and ``2*M``
projections.

Rounding rule
-------------
``M`` and ``B1`` must be whole numbers. logt rounds both UP,
``M = ceil(M_exact)`` and ``B1 = max(1, ceil(B1_exact))`` (after removing
floating-point noise of 1e-9 relative, so an exact 48.0 stays 48): the
analysis needs ``M >= 4/(eta*lam)`` (enough contraction per epoch) and a batch
at least as large as the rule's (enough variance reduction), and both
inequalities survive rounding up. ``eta`` is never rounded. Every count is then
computed from the rounded values: the number of complete epochs is the largest
``k`` with ``2*M*B1*(2**k - 1) <= T``, the projections are exactly
``2*M*k`` and the oracle calls ``2*M*B1*(2**k - 1) <= T``; calls left over
after the last complete epoch are not used.
"""
from dataclasses import asdict, dataclass
import math
import numbers
import sys

_SQRT6 = math.sqrt(6.0)
MAX_T = 2**62             # counts and traces are int64
MAX_M = 1e9               # updates per epoch beyond which a theorem rule is refused (L/lam ~ 1e8)


def _ceil(x):
    """Ceiling that ignores floating-point noise (48.00000000001 -> 48)."""
    r = round(x)
    if abs(x - r) <= 1e-9 * max(1.0, abs(x)):
        return int(r)
    return int(math.ceil(x))


@dataclass(frozen=True)
class LogTParams:
    """Parameters of Algorithm 1 after rounding.

    eta : step size; M : updates per epoch (int >= 1); B1 : first batch (int >= 1);
    rule : "theorem1", "theorem2" or "explicit"; M_exact, B1_exact : the real
    values before rounding (None for explicit values); alpha, delta : Theorem 2 only.
    """
    eta: float
    M: int
    B1: int
    rule: str
    M_exact: float | None = None
    B1_exact: float | None = None
    alpha: float | None = None
    delta: float | None = None

    def as_dict(self):
        return asdict(self)


def _real(v, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        if isinstance(v, numbers.Complex) or not hasattr(v, "__float__"):
            raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    v = float(v)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def check_lam(lam):
    """Validate the strong convexity ``0 < lam < inf`` (normal float); returns a float."""
    if lam is None:
        raise ValueError("lam is required (the strong convexity constant, usually the regularization "
                         "weight): pass lam=, or use an oracle that defines it")
    lam = _real(lam, "lam")
    if lam <= 0:
        raise ValueError(f"lam must be > 0 (strong convexity), got {lam}")
    if lam < sys.float_info.min:
        raise ValueError(f"lam={lam!r} is subnormal (below {sys.float_info.min:.3g}): no step size based on it "
                         "is representable; rescale the problem")
    return lam


def check_L(L, lam):
    """Validate the smoothness ``lam <= L < inf`` when given; None stays None."""
    if L is None:
        return None
    L = _real(L, "L")
    if L < lam:
        raise ValueError(f"L must be >= lam (an L-smooth, lam-strongly convex F has L >= lam), got L={L} < lam={lam}")
    return L


def check_L_lam(L, lam):
    """Validate ``0 < lam <= L < inf`` (both required); returns floats."""
    lam = check_lam(lam)
    if L is None:
        raise ValueError("L is required (pass it, or use an oracle that defines it)")
    return check_L(L, lam), lam


def _theorem_eta_M(L, lam):
    """Theorem 1's ``eta = 1/(sqrt(6) L)`` and ``M = 4/(eta lam) = 4 sqrt(6) L/lam``, overflow-checked."""
    kappa = L / lam
    M_exact = 4.0 * _SQRT6 * kappa
    if not math.isfinite(M_exact) or M_exact > MAX_M:
        raise ValueError(f"L/lam = {kappa:.3g} is too large for the theorem rules: they need "
                         f"M = 4 sqrt(6) L/lam = {M_exact:.3g} updates per epoch (limit {MAX_M:.0e}); "
                         "check L and lam, or give eta, M, B1 explicitly")
    eta = 1.0 / (_SQRT6 * L)
    if eta == 0.0 or not math.isfinite(eta):
        raise ValueError(f"L={L!r} gives no representable step size 1/(sqrt(6) L)")
    return eta, M_exact


def theorem1(L, lam):
    """Theorem 1: ``eta = 1/(sqrt(6) L)``, ``M = 4/(eta lam)``, ``B1 = 12 eta lam``, rounded up."""
    L, lam = check_L_lam(L, lam)
    eta, M_exact = _theorem_eta_M(L, lam)
    B1_exact = 12.0 / (_SQRT6 * (L / lam))
    return LogTParams(eta=eta, M=max(1, _ceil(M_exact)), B1=max(1, _ceil(B1_exact)),
                      rule="theorem1", M_exact=M_exact, B1_exact=B1_exact)


def theorem2_alpha(T, delta, M, eta, lam):
    """Theorem 2's ``alpha`` (and its ``k_dag``) by a fixed point over the epoch count.

    ``alpha(k)`` grows with ``k`` (through ``delta_t = delta/k``) and the epoch
    count ``k_dag(alpha) = floor(log2(T/(8 alpha) + 1))`` falls with ``alpha``.
    logt takes the smallest ``k >= 1`` with ``k_dag(alpha(k)) <= k``: then at most
    ``k`` epochs run, each with failure probability ``delta/k``, so the union bound
    over epochs holds. Returns ``(alpha, k)``.
    """
    N = math.ceil(math.log2(4.0 * M * T / (eta * lam)))

    def alpha_of(k):
        dt = delta / k
        a = math.log(8.0 * M / dt)
        b = math.log(4.0 * N / dt)
        return max(400.0 * a * a, 1.0 + 64.0 * a * a * (b + (4.0 / 9.0) * b * b))

    k = 1
    while True:
        alpha = alpha_of(k)
        k_dag = math.floor(math.log2(T / (8.0 * alpha) + 1.0))
        if k_dag <= k:
            return alpha, k
        k += 1


def theorem2(L, lam, T, delta):
    """Theorem 2 (probability ``1 - delta``): Theorem 1's ``eta`` and ``M``, ``B1 = alpha eta lam``."""
    L, lam = check_L_lam(L, lam)
    if delta is None:
        raise ValueError("params='theorem2' needs delta (the failure probability, 0 < delta < 1)")
    if not (0.0 < float(delta) < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    T = check_T(T)
    eta, M_exact = _theorem_eta_M(L, lam)
    M = max(1, _ceil(M_exact))
    alpha, _ = theorem2_alpha(T, float(delta), M, eta, lam)
    B1_exact = alpha * eta * lam
    return LogTParams(eta=eta, M=M, B1=max(1, _ceil(B1_exact)), rule="theorem2",
                      M_exact=M_exact, B1_exact=B1_exact, alpha=alpha, delta=float(delta))


def explicit(eta, M, B1):
    """User-chosen ``eta > 0`` and whole ``M >= 1``, ``B1 >= 1`` (no rounding: non-integers are refused)."""
    if eta is None or M is None or B1 is None:
        raise ValueError("explicit parameters need all of eta, M and B1")
    eta = _real(eta, "eta")
    if eta <= 0:
        raise ValueError(f"eta must be a finite number > 0, got {eta}")
    out = []
    for name, v in (("M", M), ("B1", B1)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must be a whole number, got {type(v).__name__}")
        if not math.isfinite(float(v)) or int(v) != v:
            raise ValueError(f"{name} must be a whole number, got {v!r}")
        if int(v) < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
        out.append(int(v))
    return LogTParams(eta=eta, M=out[0], B1=out[1], rule="explicit")


def check_T(T):
    """Validate the budget ``T``: a whole number in ``[1, MAX_T]`` (an integral float such as 1e6 is accepted)."""
    if isinstance(T, bool):
        raise TypeError("T must be an int, got bool")
    if isinstance(T, numbers.Integral) or hasattr(T, "__index__"):
        T = int(T)
    elif isinstance(T, numbers.Real):
        t = float(T)
        if not math.isfinite(t) or t != math.floor(t):
            raise ValueError(f"T must be a whole number of oracle calls, got {T!r}")
        T = int(t)
    else:
        raise TypeError(f"T must be an int, got {type(T).__name__}")
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    if T > MAX_T:
        raise ValueError(f"T={T} exceeds the largest supported budget MAX_T = 2**62 (counts are int64)")
    return T


def min_T(M, B1):
    """Smallest budget with one complete epoch: ``2*M*B1``."""
    return 2 * M * B1


def n_epochs(T, M, B1):
    """Number of complete epochs: the largest ``k`` with ``2*M*B1*(2**k - 1) <= T``."""
    k = 0
    while 2 * M * B1 * (2 ** (k + 1) - 1) <= T:
        k += 1
    return k


def n_calls(M, B1, k):
    """Oracle calls used by ``k`` complete epochs: ``2*M*B1*(2**k - 1)``."""
    return 2 * M * B1 * (2 ** k - 1)


def n_projections(M, k):
    """Projections used by ``k`` complete epochs: ``2*M*k``."""
    return 2 * M * k


# ---------------------------------------------------------------- the "auto" rule
# eta = AUTO_ETA_L / L_est; M = ceil(AUTO_C / (eta lam)); see logt.methods.logt for the evidence.
AUTO_ETA_L = 0.5
AUTO_C = 1.0
AUTO_B1 = 1               # the first batch before the noise at x0 is measured (see auto_B1)
AUTO_PILOT_FRAC = 0.01    # the gradient-noise measurement at x0 spends at most this fraction of T
AUTO_PILOT_B0 = 2         # its first round's batch (BATCHES_PER_ROUND means of this size)
AUTO_PROJ_FRAC = 0.0075    # M is capped so that the projections stay below this fraction of T


def auto_eta(L_est):
    """The auto rule's step ``eta = AUTO_ETA_L / L_est`` (``L_est > 0`` the estimated curvature)."""
    return AUTO_ETA_L / L_est


def auto_M_exact(L_est, lam):
    """``AUTO_C / (eta lam) = 2 L_est / lam``: the updates one contracting epoch needs, before rounding."""
    return AUTO_C / (auto_eta(L_est) * lam)


def auto_M(L_est, lam):
    """The auto rule's updates per epoch: ``ceil(AUTO_C / (eta lam)) = ceil(2 L_est / lam)`` (at least 1).

    ``M eta lam = AUTO_C`` is the contraction budget of one epoch along the
    weakest direction (curvature ``lam``): the mean of the epoch's ``M`` points
    ``z`` shrinks the error there by ``(1 - exp(-AUTO_C)) / AUTO_C = 0.63`` for
    ``AUTO_C = 1``, faster than the doubling batch shrinks the noise (``1/sqrt(2)``),
    so old noise is forgotten. Refused (``ValueError``) beyond ``MAX_M``.
    """
    M_exact = auto_M_exact(L_est, lam)
    if not math.isfinite(M_exact) or M_exact > MAX_M:
        raise ValueError(f"the estimated condition number L_est/lam = {L_est / lam:.3g} needs "
                         f"M = {M_exact:.3g} updates per epoch (limit {MAX_M:.0e}); check lam")
    return max(1, _ceil(M_exact))


AUTO_ETA_MAX_L = 0.75      # the largest step (times L_est) when the projection cap binds


def auto_eta_M(L_est, lam, M_cap):
    """Step and updates per epoch of the auto rule: ``(eta, M)``.

    Uncapped (``auto_M(L_est, lam) <= M_cap``): ``eta = 0.5/L_est`` (the fastest
    contraction of one extra-gradient step along the stiffest direction,
    ``1 - eta h + (eta h)^2`` at ``eta h = 1/2``) and ``M = ceil(2 L_est/lam)``.
    Capped (an ill-conditioned problem whose ``M`` would exceed the projection
    budget): ``M = M_cap`` and the step grows towards ``AUTO_C / (M lam)`` so that
    ``M eta lam`` stays near ``AUTO_C``, but not beyond ``AUTO_ETA_MAX_L / L_est``
    (the stiff direction still contracts by ``0.81`` per step there). Measured on
    MetricLearner's objective at ``lam = 1e-3``, ``T = 2e5``: ``F - F* = 7.6e-3``
    with ``0.5/L_est``, ``2.8e-3`` with ``0.75/L_est``. Capped, ``L_est/lam`` may exceed what
    :func:`auto_M` accepts (``MAX_M``): the capped epochs then report that they cannot contract
    (and the default runs the stages) instead of a ``ValueError``.
    """
    if _ceil(auto_M_exact(L_est, lam)) <= M_cap:   # uncapped (auto_M's rounding; no M beyond the cap is formed)
        return auto_eta(L_est), auto_M(L_est, lam)
    eta = min(AUTO_C / (M_cap * lam), AUTO_ETA_MAX_L / L_est)
    return max(eta, auto_eta(L_est)), M_cap


def epoch_rho(c):
    """``((1 - e^-c) / c)^2``: the share of the start's ``F``-excess along the weakest direction left by one epoch
    with ``M eta lam = c`` (its mean point contracts the distance by ``(1 - e^-c) / c``)."""
    return (-math.expm1(-c) / c) ** 2


def _epoch_c_min():
    """The smallest ``c = M eta lam`` whose epoch shrinks the weakest direction's excess at least as fast as
    the doubling batch halves the variance: ``((1 - e^-c) / c)^2 <= 1/2`` (bisection; about 0.735)."""
    lo, hi = 0.1, 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if epoch_rho(mid) <= 0.5:
            hi = mid
        else:
            lo = mid
    return hi


EPOCH_C_MIN = _epoch_c_min()


def _bias_removed(c):
    """Fraction of the start's ``F``-excess along the weakest direction that one epoch with
    ``M eta lam = c`` removes: ``1 - ((1 - e^-c) / c)^2`` (its mean point contracts the
    distance by ``(1 - e^-c) / c``)."""
    return 1.0 - epoch_rho(c)


def auto_B1(sigma2, mean_sq, n_samples, M, c=1.0):
    """The auto rule's first batch from the gradient noise at ``x0`` (:mod:`logt.gradient_noise`).

    ``B1 = max(1, min(k(c) sigma2 / (M mean_sq), n_samples / (2 M)))`` (rounded down), with
    ``c = M eta lam`` of the first epoch, ``k = 1/2`` for ``c >= 1`` (the uncapped rule) and
    ``k(c) = c^2 r(1) / (2 r(c))`` below, ``r`` = :func:`_bias_removed`:

    * Along the weakest direction (curvature ``lam``, where the start can be furthest
      off: ``F(x0) - F* <= ||grad F(x0)||^2 / (2 lam)``) an epoch of ``M`` steps of size
      ``eta`` removes the fraction ``r(c)`` of the start's excess (0.60 at ``c = 1``) and
      leaves a noise excess ``c^2 sigma2 / (6 lam M B)`` (the mean of a random walk of
      ``M`` steps). The break-even batch, where the noise equals what the epoch can
      remove, is ``c^2 sigma2 / (3 r(c) M ||grad F(x0)||^2)``, i.e. ``sigma2 / (2 M ...)`` at
      ``c = 1``; epochs of smaller batches cannot improve on ``x0``. When the projection
      cap shortens the epochs (``c < 1``) each epoch removes less bias, so fewer epochs
      may be skipped: ``k(c)`` falls like ``c``. ``mean_sq`` over-estimates
      ``||grad F(x0)||^2`` on average (by ``sigma2 / n_samples``), so ``B1`` errs small.
    * The first epoch's ``2 M B1`` samples never exceed the ``n_samples`` that measured
      the noise: when the gradient does not stand out of the noise, ``B1`` is what
      the measurement can support, not more.

    A gradient large against its noise (``sigma2 < M mean_sq / k``) gives the paper's
    ``B1 = 1``.
    """
    M = int(M)
    c = float(c)
    if not c > 0.0:
        raise ValueError(f"c = M eta lam must be > 0, got {c}")
    k = 0.5 if c >= 1.0 else 0.5 * c * c * _bias_removed(1.0) / _bias_removed(c)
    cap = int(n_samples) // (2 * M)
    if mean_sq > 0.0:
        ratio = k * sigma2 / (M * mean_sq)
        b = cap if not math.isfinite(ratio) or ratio >= cap else int(ratio)
    else:
        b = cap
    return max(1, b)


def auto_projections(T, M, B1=AUTO_B1):
    """Projections of the auto schedule with a constant ``M``: ``(2 M + 1) * n_epochs(T, M, B1)``
    (two per update and one for the epoch's mean)."""
    return (2 * M + 1) * n_epochs(T, M, B1)


def auto_M_cap(T, B1=AUTO_B1, frac=None):
    """Largest ``M`` whose auto schedule makes at most ``max(frac * T, 3)`` projections (at least 1).

    Found by bisection: the projection count ``(2M + 1) * n_epochs(T, M, B1)``
    grows with ``M`` (``n_epochs`` falls only like ``log2(1/M)``).
    """
    frac = AUTO_PROJ_FRAC if frac is None else frac
    P = max(frac * T, 3.0)
    lo, hi = 1, 1
    while hi < MAX_M and auto_projections(T, 2 * hi, B1) <= P:
        hi *= 2
    hi *= 2
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if auto_projections(T, mid, B1) <= P:
            lo = mid
        else:
            hi = mid
    return lo


def auto_last_batch(R, M):
    """Batch of a last epoch that absorbs the ``R`` remaining calls: ``floor(R / (2 M))``."""
    return R // (2 * M)


def auto_schedule(T, M, B1):
    """Closed-form schedule of the auto rule for a fixed ``M`` and a budget ``T`` (after the estimate).

    Epochs ``k = 1..K-1`` use ``B1 * 2**(k-1)``; the last epoch ``K`` absorbs
    everything left, ``B_K = floor((T - 2 M B1 (2**(K-1) - 1)) / (2 M))`` (at
    least ``B1 * 2**(K-1)``, at most about three times that). ``K`` is the same
    epoch count as Algorithm 1's, ``n_epochs(T, M, B1)``, so the last epoch is
    the one after which the next (doubled) epoch would not fit.

    Returns ``(batches, n_calls, n_projections)``: ``n_calls = T - r`` with
    ``0 <= r < 2 M`` (so at least ``1 - 2M/T`` of the budget is used) and
    ``n_projections = (2 M + 1) K`` (the auto rule projects each epoch's mean once).
    ``batches`` is empty when not even one epoch fits.
    """
    K = n_epochs(T, M, B1)
    if K == 0:
        return [], 0, 0
    batches = [B1 * 2 ** (k - 1) for k in range(1, K)]
    used = n_calls(M, B1, K - 1)
    batches.append(auto_last_batch(T - used, M))
    calls = sum(2 * M * b for b in batches)
    return batches, calls, (2 * M + 1) * K


def epoch_gd_schedule(T, T1=4):
    """Epoch-GD epoch lengths ``T1 * 2**(k-1)`` for the complete epochs that fit in ``T``."""
    lengths, used, Tk = [], 0, T1
    while used + Tk <= T:
        lengths.append(Tk)
        used += Tk
        Tk *= 2
    return lengths
