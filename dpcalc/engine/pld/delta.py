"""δ(ε) brackets from discretised PLDs (the ε → δ direction of :mod:`dpcalc.engine.pld.epsilon`).

The construction, error terms and guarantee are those of :mod:`dpcalc.engine.pld.epsilon`; here
the bounds are read at a given ε instead of inverted: the upper end is ``Up`` at ε (interpolated
linearly in e^ε between grid points, where the discrete profile is exactly linear), the lower end
``Low(ε + r + K·b_max) − η − η_bad`` maximised over η (Hoeffding coupling).  Where δ is far below the
double range, the Chernoff/RDP-type bound of the dominating discrete pair is reported instead
(``[0, bound]``, no FFT); where ε lies far below the bulk of the composed loss, ``[Low(bottom), 1]``.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from dpcalc.engine.pld import convolution as C
from dpcalc.engine.pld.discretise import split_bias_max
from dpcalc.engine.pld.grid import (
    _ETAS,
    DEFAULT_MEMORY_CAP,
    DEFAULT_REL_ERROR,
    FALLBACK_SCALE,
    RDP_HINT,
    _exp_up,
    _guess,
    _kc,
    _log_inf_keep,
    _prepare,
    _refuse,
    _TooBig,
    _window,
    spread,
)
from dpcalc.errors import DpcalcWarning, UncertifiedError


def delta_bracket(components, epsilon: float, eps_error: float | None = None, memory_cap=DEFAULT_MEMORY_CAP):
    """``(lower, estimate, upper)`` of δ(ε) for the composition of ``components`` (one direction).

    Upper: ``Up`` at the grid point at or below ε (δ is non-increasing).  Lower:
    ``Low(ε + r + K·b_max) − η − η_bad`` maximised over ``r`` (module docstring).  ``eps_error`` sets
    the grid as for :func:`epsilon_bracket` (default 0.5 % of max(ε, sd) with sd the spread of the
    composed loss at the tilt, :func:`~dpcalc.engine.pld.epsilon.spread`; no absolute floor).
    """
    epsilon = float(epsilon)
    log_keep = _log_inf_keep(components)
    inf0 = -math.expm1(log_keep) if log_keep > -math.inf else 1.0
    if inf0 >= 1.0:
        return 1.0, 1.0, 1.0
    lam, log_dbound = _guess(components, 0.0, eps=epsilon)
    log_dfin = min(log_dbound, 0.0)
    log_dfin = max(log_dfin, -745.0)
    basis = "ε"
    width = eps_error
    sd = 0.0
    if eps_error is None:
        # 0.5 % of ε, or of the spread of the composed (tilted) loss where that is larger (near ε = 0)
        sd = spread(components, lam)
        if sd > epsilon:
            basis = "the privacy loss's spread, as ε is smaller"
        width = DEFAULT_REL_ERROR * max(epsilon, sd)
        if not width > 0:  # ε = 0 and every finite loss equal: any grid is exact there
            width = DEFAULT_REL_ERROR
    # where the default grid would pass the memory cap, coarsen it (at most to the 0.5 % of
    # max(ε, 0.02, sd) of before, FALLBACK_SCALE) with a warning; refuse only what does not fit even then
    coarsest = DEFAULT_REL_ERROR * max(epsilon, FALLBACK_SCALE, sd) if eps_error is None else width
    coarsened = False
    while True:
        try:
            out, trunc = _delta_once(components, epsilon, width, lam, log_dfin, log_dbound, memory_cap)
            break
        except _TooBig as err:
            if width >= coarsest:
                if coarsened:
                    basis = f"max(ε, {FALLBACK_SCALE:g}, the privacy loss's spread)"
                _refuse(err, memory_cap, width, eps_error is not None, basis)
            width = min(coarsest, width * max(4.0, 24.0 * err.ratio(memory_cap)))  # aim at 1/8 of the cap
            coarsened = True
    if coarsened:
        warnings.warn(
            f"PLD: δ(ε) on a grid for an ε-accuracy of {width:.3g}, coarser than the default (memory cap); "
            "the bounds hold, the tolerance does not",
            DpcalcWarning,
            stacklevel=3,
        )
    # the grid ranges were cut where the tail mass is 1e-7 of the Chernoff-type bound on δ, which can be
    # far above δ (tiny losses): when the cut mass shows in the bracket, settle the cut on coarse grids
    # (each pass's upper end bounds δ; cutting at 1e-7 of it shrinks the cut mass by 1e-7 a pass), then
    # redo the grid asked for if that fits in an eighth of the memory cap (the longer tails can make it
    # costly).  Every bracket is certified, so their intersection is too.
    lower, est, upper = out

    def shows(up, cut, log_d):
        return 0.0 < up and cut > 1e-4 * up and math.log(up) < log_d - 1.0

    if shows(upper, trunc, log_dfin):
        log_d = log_dfin
        try:
            for _ in range(4):
                log_d = math.log(upper)
                (lo2, est2, up2), cut = _delta_once(
                    components, epsilon, 16.0 * width, lam, log_d, log_dbound, memory_cap
                )
                lower, upper = max(lower, lo2), min(upper, up2)
                est = est2
                if not shows(upper, cut, log_d):
                    break
            (lo2, est2, up2), _ = _delta_once(
                components, epsilon, width, lam, log_d, log_dbound, memory_cap / 8
            )
            lower, upper, est = max(lower, lo2), min(upper, up2), est2
        except _TooBig:  # keep the brackets found (they hold)
            pass
        est = min(max(est, lower), upper)
    return lower, est, upper


def _delta_once(components, epsilon, width, lam, log_dfin, log_dbound, memory_cap):
    """One δ(ε) bracket on the grid meeting ``width`` (tail cuts at 1e-7 of ``e^{log_dfin}``); also
    returns the mass cut off the grid ranges (``η_bad``)."""
    counts = [c.count for c in components]
    h, plds, lam = _prepare(components, width, log_dfin, lam, epsilon, memory_cap)
    if log_dbound < -600.0:
        # δ far below double range: the Chernoff/RDP-type bound of the dominating discrete
        # pair (exact cumulants, no FFT) certifies an upper bound; 0 is the lower bound
        tt = np.geomspace(1e-3, 1e4, 60)
        kd = C.kappa_bound(plds, counts, tt)
        log_b = float(np.min(kd - tt * epsilon + tt * np.log(tt) - (tt + 1.0) * np.log1p(tt)))
        inf_d = -math.expm1(sum(c * math.log1p(-d.inf_mass) for d, c in zip(plds, counts)))
        if log_b < -600.0:
            up = min(1.0, _exp_up(log_b) + inf_d * (1.0 + 1e-12))
            return (0.0, up, up), 0.0
    grid = composed_grid(components, plds, h, lam, epsilon, log_dfin, memory_cap, width)
    out, trunc, _ = read_delta(grid, epsilon)
    return out, trunc


class ComposedGrid(NamedTuple):
    """One composition's certified grid bounds and the error terms every δ(ε) reading needs."""

    gb: C.GridBounds
    h: float
    lo_idx: int
    n_fft: int
    k_total: float
    b_tot: float  # K·b_max(h), the discretisation's conditional mean bias
    slack: float  # rounding of the loss map, Σ count·loss_slack
    eta_bad: float  # mass outside the grid ranges, Σ count·bad_mass
    shift: float  # exact mean shift of the discretisation (for the estimate only)


def composed_grid(components, plds, h, lam, eps_lo, log_dfin, memory_cap, width) -> ComposedGrid:
    """Window (holding the grid point of ``eps_lo`` where affordable), FFT composition and grid bounds."""
    counts = [c.count for c in components]
    kc = _kc(components)
    lo_idx, n_fft = _window(plds, counts, kc, lam, h, log_dfin, eps_lo, memory_cap, width)
    # the window must hold ε itself (mass below ε does not matter, but the grid point does)
    # (extended down to ε when affordable; otherwise ε lies far below the bulk of the composed
    # loss, δ(ε) >= δ(window bottom) ≈ 1, and the bracket is [Low(bottom), 1]: :func:`read_delta`)
    e_idx = _e_idx(eps_lo, h)
    if e_idx < lo_idx:
        n_ext = C.fast_len(n_fft + lo_idx - e_idx)
        if n_ext <= 4 * n_fft and n_ext * C.BYTES_PER_POINT <= memory_cap:
            n_fft, lo_idx = n_ext, e_idx
    w, nu = C.compose_window(plds, counts, lam, lo_idx, n_fft)
    gb = C.GridBounds(plds, counts, lam, lo_idx, n_fft, w, nu, h, kc)
    del w
    k_total = float(sum(counts))
    return ComposedGrid(
        gb,
        h,
        lo_idx,
        n_fft,
        k_total,
        k_total * split_bias_max(h),
        sum(c * d.loss_slack for d, c in zip(plds, counts)),
        sum(c * d.bad_mass for d, c in zip(plds, counts)),
        sum(c * d.mean_shift for d, c in zip(plds, counts)),
    )


def _e_idx(epsilon, h):
    return int(math.floor((epsilon - 2.0 * h) / h)) - 2


def read_delta(g: ComposedGrid, epsilon, log_up=None, log_low=None, eta_bad=None):
    """``((lower, estimate, upper), η_bad, case)`` of δ(ε) read from a composed grid (module docstring);
    ``case`` is ``"in"``, ``"below"`` (ε below the window: ``[Low(bottom), 1]``) or ``"above"``.

    The one place the bounds are read, for one ε (:func:`delta_bracket`) or many on one grid
    (:mod:`dpcalc.engine.pld.profile`).  ``log_up``/``log_low``/``eta_bad`` default to the certified
    ``Up``/``Low``/``η_bad``; passing ``log_s`` and 0 gives the noise-free reading that
    :mod:`~dpcalc.engine.pld.profile` compares against (a diagnostic, never reported)."""
    gb, h, lo_idx, n_fft = g.gb, g.h, g.lo_idx, g.n_fft
    log_up = gb.log_up if log_up is None else log_up
    log_low = gb.log_low if log_low is None else log_low
    eta_bad = g.eta_bad if eta_bad is None else eta_bad
    slack = g.slack

    def at(fn, x):
        """``v(x)`` interpolated linearly in e^x between the grid points around ``x``."""
        u = x / h - lo_idx
        k = int(math.floor(u))
        if k < 0 or k >= n_fft - 1:
            return None
        g_ = math.expm1((u - k) * h) / math.expm1(h)  # position of e^x between e^{l_k} and e^{l_k+1}
        v0, v1 = (float(v) for v in fn(np.array([k, k + 1])))
        if not math.isfinite(v1):
            return v0 + math.log1p(-g_) if g_ < 1 else -math.inf
        return float(np.logaddexp(v0 + math.log1p(-g_), v1 + math.log(g_))) if g_ > 0 else v0

    bottom = lo_idx * h

    def low_at(x):
        """A lower bound on log δ_ω'(x): below the window, δ_ω'(x) >= δ_ω'(bottom) >= Low_0."""
        return float(log_low(np.array([0]))[0]) if x <= bottom else at(log_low, x)

    def lower_bound(upper):
        lower = 0.0
        for eta_rel in _ETAS:
            eta = eta_rel * upper
            if not eta > 1e-300:
                continue
            r = h * math.sqrt(g.k_total * math.log(1.0 / eta) / 2.0)
            vl = low_at(epsilon + r + g.b_tot + slack)
            if vl is None:
                continue
            lower = max(lower, math.exp(vl) * (1.0 - 1e-9) - eta - eta_bad)
        return lower

    if _e_idx(epsilon, h) < lo_idx or epsilon - slack < bottom:
        lower = lower_bound(1.0)
        est = min(max(math.exp(float(gb.log_s(np.array([0]))[0])), lower), 1.0)
        return (lower, est, 1.0), 0.0, "below"
    top = (lo_idx + n_fft - 1) * h
    if epsilon - slack >= top:
        # above the window: Up is non-increasing, and δ >= δ(∞) = ω(∞)
        v = float(log_up(np.array([n_fft - 1]))[0])
        upper = _exp_up(v)
        lower = math.exp(gb.log_inf_lo) if gb.log_inf_lo > -math.inf else 0.0
        est = min(max(math.exp(float(gb.log_s(np.array([n_fft - 1]))[0])), lower), upper)
        return (lower, est, upper), eta_bad, "above"
    v = at(log_up, epsilon - slack)
    if v is None:
        raise UncertifiedError(f"PLD accounting: ε={epsilon:g} fell outside the FFT window; try {RDP_HINT}")
    upper = _exp_up(v)
    lower = lower_bound(upper)
    ve = at(gb.log_s, epsilon + g.shift)
    est = min(max(math.exp(ve) if ve is not None else upper, lower), upper)
    return (lower, est, upper), eta_bad, "in"
