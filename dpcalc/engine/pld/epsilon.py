"""ε(δ) brackets from discretised PLDs: the certified bracket and its refinement (the set-up they share
with δ(ε) — guess, grid, memory cap, window — is :mod:`dpcalc.engine.pld.grid`).

(The δ(ε) direction, on the same construction, is :mod:`dpcalc.engine.pld.delta`.)

Given a list of ``(LossModel, count)`` (one direction of each mechanism's dominating pair):

1. **Guess.**  The cumulant function ``κ(t) = Σ count·log E_P[e^{tL}]`` (quadrature) gives the
   Chernoff-type bound ``δ(ε) <= e^{κ(t)−tε}·t^t/(t+1)^{t+1}`` (the optimal RDP conversion in PLD
   form; Canonne, Kamath & Steinke 2020, Prop. 12; docs/math.md §1.2).  Its minimiser ``t*`` is the
   tilt λ (the saddle point of the composed loss near the answer) and its ε the scale of the answer.
2. **Grid.**  The bracket width is at most ``r + K·b_max(h) + 2h`` plus small terms (below), with
   ``r = h·sqrt(K·log(1/η)/2)``; ``h`` is chosen so that this meets ``eps_error`` (default 0.5 % of ε,
   relative with no absolute floor; see :data:`TINY_SPREAD` for ε near 0).  The grid range of each
   mechanism and the FFT window follow from tail bounds.  Memory is estimated **before** allocation;
   a first grid of the default accuracy above ``memory_cap`` is coarsened (:data:`FALLBACK_SCALE`),
   and a request that does not fit even so is refused with a message saying what to relax.
3. **Bracket** (for the composed pessimistic discrete PLD ω', :mod:`dpcalc.engine.pld.convolution`
   certifies ``Low_k <= δ_ω'(l_k) <= Up_k`` at grid points):

   * upper: the discrete pair dominates the true one (:mod:`dpcalc.engine.pld.discretise`), so
     ``δ(ε) <= δ_ω'(ε) <= Up``; ``ε_upper`` is the first grid point with ``Up <= δ``.
   * lower: with the coupling ``L' = L + D`` (conditional range h, conditional mean <= b_max), by
     Hoeffding's inequality ``P(Σ(D − E[D|L]) > r) <= η = exp(−2r²/(Kh²))``, and with the bad event
     "some loss outside its grid range" (probability <= η_bad),
     ``δ(ε) >= δ_ω'(ε + r + K·b_max) − η − η_bad``.  So ``ε_lower = x − r − K·b_max`` for the last
     grid point ``x`` with ``Low(x) >= δ + η + η_bad`` (maximised over a few η).
   * estimate: the ε where the computed profile crosses δ (interpolated), shifted back by the exact
     mean shift of the discretisation ``Σ count·E[D]``, clipped into the bracket.

   Rounding of the loss map is covered by ``loss_slack`` (added/subtracted).
4. **Refinement.**  When the bracket is wider than the tolerance the grid is refined (at most 3×
   per step near the tolerance, in one larger step when far from it, judged at half the certified
   upper end so that a grid is never much finer than the answer needs: a tiny ε below a coarse first
   grid takes a few geometric steps); the tilt is re-centred on the estimate only when the upper end
   sits far above the estimate (the answer fell into the FFT noise floor, as at very small δ).
   Every attempt's bracket is certified, so the answer is their intersection.  If a refinement
   would pass the memory cap, the certified bracket found so far is returned with a
   :class:`DpcalcWarning` (the bounds hold; the tolerance does not); if even the first attempt would
   (after the coarsening above), the request is refused with an :class:`InputError` naming
   ``--eps-error`` and a value that fits.

Guarantee: ``epsilon_lower <= ε(δ) <= epsilon_upper`` for the exact privacy profile of the
composition, up to the stated a-posteriori FFT round-off estimate (``ν``) and the 1e-13 relative
margin for quadrature; every other error (truncation, aliasing, discretisation) enters as a bound.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpcalc.engine.pld import convolution as C
from dpcalc.engine.pld.discretise import split_bias_max
from dpcalc.engine.pld.grid import (
    _ATTEMPTS,
    _ETAS,
    _U,
    DEFAULT_MEMORY_CAP,
    DEFAULT_REL_ERROR,
    FALLBACK_SCALE,
    RDP_HINT,
    TINY_SPREAD,
    _extend,
    _guess,
    _kc,
    _log_inf_keep,
    _prepare,
    _refuse,
    _t_top,
    _TooBig,
    _window,
    spread,
)
from dpcalc.errors import DpcalcWarning, UncertifiedError

__all__ = ["epsilon_bracket"]


def epsilon_bracket(
    components,
    delta: float,
    eps_error: float | None = None,
    memory_cap=DEFAULT_MEMORY_CAP,
    below: float | None = None,
):
    """``(lower, estimate, upper)`` of ε(δ) for the composition of ``components`` (one direction).

    See the module docstring for the construction and the guarantee.  ``eps_error`` is the target
    width ``upper − lower`` (default: 0.5 % of ε, with no absolute floor; see :data:`TINY_SPREAD` for ε
    near 0); raises :class:`InputError` when the grid it needs would pass ``memory_cap`` bytes (for the
    default, only if a grid coarsened as :data:`FALLBACK_SCALE` says would too).  ``below``: stop refining as soon as the upper end
    is at most this value (used for the direction of a pair that does not decide the answer).
    """
    log_keep = _log_inf_keep(components)
    inf0 = -math.expm1(log_keep) if log_keep > -math.inf else 1.0
    if inf0 >= delta:
        return math.inf, math.inf, math.inf
    log_delta_fin = math.log(delta - inf0) if inf0 > 0 else math.log(delta)
    sd = spread(components)
    lam, eps_rdp = _guess(components, log_delta_fin)
    eps_scale = max(eps_rdp, 0.0) if math.isfinite(eps_rdp) else 0.0
    tiny = TINY_SPREAD * sd
    if not tiny > 0:  # no spread at all (every finite loss equal): any grid is exact there
        tiny = TINY_SPREAD * max(eps_scale, 1.0)

    def goal_at(eps: float) -> float:
        return eps_error if eps_error is not None else DEFAULT_REL_ERROR * max(eps, tiny)

    # (the first grid: 0.5 % of the RDP-type scale, but not finer than 0.5 % of the spread (or of
    # FALLBACK_SCALE, the floor of before) where that scale is small, as when δ >= δ(0) and ε = 0: any
    # grid through 0 shows that; refinements go finer)
    first = DEFAULT_REL_ERROR * max(0.85 * eps_scale, min(tiny / TINY_SPREAD, FALLBACK_SCALE))
    width = eps_error if eps_error is not None else first
    center = eps_scale
    # every attempt's bracket is certified, so their intersection is too
    best = None
    # a direction that may not decide the answer gets a cheap coarse look first
    coarse = below is not None and math.isfinite(below)
    recentred = False
    prev = None  # (tilt, width of its own bracket) of the last successful attempt
    grow = (1.0, 1.0)
    info = "not run"
    coarsened = squeezed = False
    ok_width = math.inf  # the grid width of the last attempt that fitted
    for attempt in range(_ATTEMPTS):
        try:
            w_now = width * 8.0 if coarse else width
            out, info = _epsilon_once(components, delta, w_now, lam, center, memory_cap, grow)
        except _TooBig as err:
            if best is not None:
                # a large step can overshoot what fits: try once the finest grid that does (if it is
                # still finer than the last one), else keep the certified bracket found (warned below)
                fit = width * max(2.0, 2.0 * err.ratio(memory_cap))  # about half the cap
                if not squeezed and fit < 0.5 * ok_width:
                    width, squeezed = fit, True
                    continue
                break
            coarsest = DEFAULT_REL_ERROR * max(0.85 * eps_scale, FALLBACK_SCALE, tiny / TINY_SPREAD)
            if eps_error is None and width < coarsest:  # see FALLBACK_SCALE (warned below if short)
                width = min(coarsest, width * max(4.0, 24.0 * err.ratio(memory_cap)))  # 1/8 of the cap
                coarsened = True
                continue
            if eps_error is not None:
                _refuse(err, memory_cap, eps_error, True)
            if coarsened:
                _refuse(err, memory_cap, width, False, "ε, coarsened to fit")
            _refuse(err, memory_cap, DEFAULT_REL_ERROR * max(center, FALLBACK_SCALE), False)
        if info == "ok":
            ok_width = w_now
            own = out[2] - out[0]
            if recentred and prev is not None and own > prev[1]:
                lam = prev[0]  # the re-centred tilt did worse: go back to the previous one
            prev = (lam, own)
            best = out if best is None else (max(best[0], out[0]), out[1], min(best[2], out[2]))
            lo, est, up = best = (best[0], min(max(best[1], best[0]), best[2]), best[2])
            if below is not None and up <= below:
                return best
            if coarse:  # it may decide the answer after all: redo at the requested accuracy
                coarse = False
                continue
            goal = goal_at(est)
            if up - lo > goal and attempt < _ATTEMPTS - 1 and math.isfinite(up):
                # re-centre the tilt on the estimate (once) and shrink the grid
                # (only when the upper end sits far above the estimate: the tilt left the answer
                # in the FFT noise floor, as at very small δ)
                lam_new = _saddle(components, est, lam, sd) if up - est > 0.25 * goal else lam
                if abs(lam_new - lam) > 0.05 * max(lam, 1e-3) and not recentred:
                    lam, center, recentred = lam_new, est, True
                # The bracket's width is about proportional to the grid's: aim at 0.95 of the goal
                # (0.85 over a step of more than 3×, where the ratio drifts by some 10 %: missing by a
                # little would cost one more grid of that size).  While the bracket is wide the estimate
                # says little, so the goal is judged at half the certified upper end (>= half the
                # answer): no grid is much finer than the answer needs, and a tiny ε below a coarse
                # first grid is reached in a few geometric steps.  A lower end clipped at 0 hides the
                # bracket's real width: the grid's own width (times the 0.6 or more seen) stands for it.
                aim = goal_at(max(est, 0.5 * up))
                size = max(up - out[0], 0.6 * w_now if out[0] <= 0.0 else 0.0)
                f = 0.95 * aim / size if size > 0 else 0.3
                width *= min(0.95, f if f >= 0.3 else max(1e-3, f * 0.85 / 0.95))
                continue
            return best
        # the answer fell outside the window: extend the window on that side
        if info == "window too low":
            grow = (grow[0], grow[1] * 4.0)
        else:
            grow = (grow[0] * 4.0, grow[1])
    if best is None:
        raise UncertifiedError(f"PLD accounting did not converge ({info}); try {RDP_HINT}")
    goal = goal_at(best[1])
    if best[2] - best[0] > goal:
        warnings.warn(
            f"PLD: the certified bracket [{best[0]:.6g}, {best[2]:.6g}] is wider than the requested "
            f"{goal:.3g} (memory cap or attempts reached); the bounds hold, the tolerance does not",
            DpcalcWarning,
            stacklevel=3,
        )
    return best


def _saddle(components, eps: float, lam0: float, sd: float = 1.0) -> float:
    """λ >= 0 with κ'(λ) ≈ ε (the quadrature cumulant), by bisection on a geometric grid (reaching
    further for a composed loss of small spread ``sd``)."""
    t = np.concatenate([[0.0], _extend(np.geomspace(1e-5, 1e4, 90), _t_top(sd))])
    d = 1e-6 * np.maximum(t, 1e-3)
    kp = (
        sum(c.count * c.model.log_mgf(t + d) for c in components)
        - sum(c.count * c.model.log_mgf(t) for c in components)
    ) / d
    idx = np.nonzero(kp >= eps)[0]
    return float(t[idx[0]]) if idx.size else lam0


def _epsilon_once(components, delta, width, lam, center, memory_cap, grow=(1.0, 1.0)):
    counts = [c.count for c in components]
    k_total = float(sum(counts))
    log_keep = _log_inf_keep(components)
    inf0 = -math.expm1(log_keep) if log_keep > -math.inf else 1.0
    log_delta_fin = math.log(delta - inf0) if inf0 > 0 else math.log(delta)
    h, plds, lam = _prepare(components, width, log_delta_fin, lam, center, memory_cap)
    kc = _kc(components)
    lo_idx, n_fft = _window(plds, counts, kc, lam, h, log_delta_fin, 0.75 * center, memory_cap, width, grow)
    w, nu = C.compose_window(plds, counts, lam, lo_idx, n_fft)
    gb = C.GridBounds(plds, counts, lam, lo_idx, n_fft, w, nu, h, kc)
    del w
    ld = math.log(delta)
    b_tot = k_total * split_bias_max(h)
    slack = sum(c * d.loss_slack for d, c in zip(plds, counts))
    eta_bad = sum(c * d.bad_mass for d, c in zip(plds, counts))
    shift = sum(c * d.mean_shift for d, c in zip(plds, counts))

    def grid(k):
        return (lo_idx + k) * h

    def crossing(fn, level, upper, below=None):
        """The ε where ``fn`` crosses ``e^level`` (None if already below at the window's bottom; inf if
        still above at its top); ``below``: search down from this index (for ``Low``)."""
        k = (
            gb.last_above(fn, level, strict=upper)
            if below is None
            else gb.last_at_least_below(fn, level, below)
        )
        if k < 0:
            return None
        if k == n_fft - 1:
            return math.inf
        v = fn(np.array([k, k + 1]))
        return _cross(float(v[0]), float(v[1]), level, grid(k), h, upper=upper)

    # upper: where Up crosses δ (Up is linear in e^ε between grid points, module docstring)
    k_up = gb.last_above(gb.log_up, ld)
    up = crossing(gb.log_up, ld, True)
    if up is None:
        if grid(0) > 0:
            return (0.0, grid(0), grid(0)), "window too high"
        up = 0.0
    elif up == math.inf:
        return (grid(n_fft - 1), grid(n_fft - 1), math.inf), "window too low"
    else:
        up += slack
    est_raw = crossing(gb.log_s, ld, True)
    est_raw = up if est_raw is None or est_raw == math.inf else est_raw - shift
    # lower
    lo = -math.inf
    for eta_rel in _ETAS:
        eta = eta_rel * delta
        x = crossing(gb.log_low, math.log(delta + eta + eta_bad), False, below=k_up + 1)
        if x is None:
            continue
        if x == math.inf:
            x = grid(n_fft - 1)
        r = h * math.sqrt(k_total * math.log(1.0 / eta) / 2.0)
        lo = max(lo, x - r - b_tot - slack)
    if lo == -math.inf and grid(0) > 0:
        return (0.0, up, up), "window too high"
    lo = max(lo, 0.0)
    up = max(up, 0.0)
    est = min(max(est_raw, lo), up)
    return (lo, est, up), "ok"


def _cross(lv0: float, lv1: float, lt: float, x0: float, h: float, upper: bool) -> float:
    """Where ``v`` (given by its logs at ``x0`` and ``x0 + h``, with ``v(x0) > e^{lt} >= v(x0+h)``) meets
    ``e^{lt}`` when ``v`` is linear in ``e^x`` on the cell.  Rounded to the safe side by 1e-9·h, or by a few
    ulps of the result where h is below 1e-6 of it (the sum ``x0 + …`` rounds by an ulp)."""
    if not math.isfinite(lv1) or lv1 < lv0 - 700:
        f = -math.expm1(lt - lv0)
    else:
        den = -math.expm1(lv1 - lv0)
        f = (-math.expm1(lt - lv0)) / den if den > 0 else 1.0
    f = min(max(f, 0.0), 1.0)
    x = x0 + math.log1p(f * math.expm1(h))
    pad = max(1e-9 * h, 4.0 * _U * abs(x))  # the sum's rounding matters once h is below 1e-6·|x|
    return min(x + pad, x0 + h + 2.0 * _U * abs(x0 + h)) if upper else max(x - pad, x0)
