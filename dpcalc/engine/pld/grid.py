"""What every PLD bracket (:mod:`dpcalc.engine.pld.epsilon`, :mod:`~dpcalc.engine.pld.delta`,
:mod:`~dpcalc.engine.pld.profile`) sets up before reading its bounds: the components, their
cumulant-based guess of the tilt and scale (step 1 of :mod:`dpcalc.engine.pld.epsilon`), the spread of the
composed loss, the grid step that meets a width, the memory checks and refusals, the discretised PLDs
and the FFT window (step 2; docs/math.md §7.2–§7.5), and the defaults they share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine._numerics import unimodal_argmin
from dpcalc.engine.mechanisms.loss_models import LossModel
from dpcalc.engine.mechanisms.mixture_loss import support_nodes
from dpcalc.engine.pld import convolution as C
from dpcalc.engine.pld.discretise import TooManyPanels, choose_range, discretise
from dpcalc.errors import InputError

_U = float(np.finfo(float).eps)

#: Default memory cap for one PLD computation (bytes).
DEFAULT_MEMORY_CAP = 2 * 1024**3
#: Work cap of one attempt: most points of the per-mechanism grids together (each costs quadrature, its
#: share of the cumulant bounds and of the transforms: a few µs; 2·10^6 points take some 5 s), checked
#: before discretising, like the memory cap.  An attempt past it is coarsened or refused as one past the
#: memory cap is.
MAX_GRID_POINTS = 4_000_000
#: Work cap of one attempt's transforms: distinct mechanisms times the FFT window's length.
MAX_FFT_WORK = 64_000_000
#: Work cap of one attempt's quadrature: most panels (4 nodes each) of all the per-mechanism grids.
MAX_PANELS = 4_000_000
#: Default bracket width, relative to ε (no absolute floor: a tiny ε is bracketed as tightly as a large one).
DEFAULT_REL_ERROR = 0.005
#: Where ε lies below this fraction of the spread (standard deviation) of the composed privacy loss, the
#: default width is 0.5 % of that instead: as δ approaches δ(0) the answer ε tends to 0 while the grid that
#: 0.5 % of ε needs grows without bound.  (ε = 0 itself, δ >= δ(0), is found exactly: the upper end is 0.)
TINY_SPREAD = 0.1
#: Where the first grid of the default accuracy would pass the memory cap (tiny ε beside a long-tailed
#: loss), the grid is coarsened, at most to 0.5 % of max(ε, this, the loss's spread), and the bracket comes
#: with a warning if it misses the tolerance; only a request that does not fit even then is refused.
FALLBACK_SCALE = 0.02
#: Most attempts per bracket (each is certified; the grid shrinks geometrically, so the last one dominates).
_ATTEMPTS = 8
_ETAS = (3e-1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-6, 1e-9)
#: How a refusal of the PLD accountant names the alternative; a command replaces it by its own option
#: (``--method rdp``).
RDP_HINT = "the RDP accountant"


@dataclass
class Component:
    """One mechanism in one direction: a loss model and how many times it is composed."""

    model: LossModel
    count: int


def _log_inf_keep(components) -> float:
    out = 0.0
    for c in components:
        if c.model.inf_mass >= 1.0:
            return -math.inf
        out += c.count * math.log1p(-c.model.inf_mass)
    return out


def _extend(t: np.ndarray, top: float) -> np.ndarray:
    """The geometric grid ``t`` continued at the same density up to ``top`` (unchanged if ``top`` is not
    beyond its end): the tilts a composed loss of spread sd needs reach about 1/sd."""
    end = float(t[-1])
    if not (math.isfinite(top) and top > end * 1.01):
        return t
    per = (len(t) - 1) / math.log(end / float(t[t > 0][0]))
    n = max(1, int(math.ceil(per * math.log(top / end))))
    return np.concatenate([t, np.geomspace(end, top, n + 1)[1:]])


def _t_top(sd: float) -> float:
    """How far the tilt grids reach for a composed loss of spread ``sd`` (1e4 unless sd < 0.01)."""
    return 100.0 / sd if sd > 0 else math.inf


def _guess(components, log_delta_fin: float, eps: float | None = None):
    """``(t*, bound)``: the Chernoff/RDP-type bound on ε at δ (or on log δ at ε) and its minimiser."""
    t = np.geomspace(1e-4, 1e4, 64)

    def vals(t):
        # g(t) = κ(t) + t·log t − (t+1)·log(1+t) is convex; g(t) − tε is convex and g(t)/t − log δ/t is
        # quasi-convex ((t·g' − g)' = t·g'' >= 0): both unimodal along the grid
        kap = sum(c.count * c.model.log_mgf(t) for c in components)
        conv = t * np.log(t) - (t + 1.0) * np.log1p(t)
        return (kap + conv - log_delta_fin) / t if eps is None else kap - t * eps + conv

    i, v = unimodal_argmin(vals, t)
    return float(t[i]), v


def spread(components, t: float = 0.0) -> float:
    """Standard deviation of the composed finite privacy loss under ``P`` tilted by ``e^{tL}``, from the
    models' atoms and quadrature nodes (moments computed directly, so it stays accurate for losses of any
    size, where finite differences of the cumulant function drown in round-off).  An estimate that sets
    tolerances, never part of a bound."""
    var = 0.0
    for c in components:
        lw, lx = support_nodes(c.model, t)
        if not lw.size:
            continue
        keep = np.isfinite(lw) & np.isfinite(lx)
        if not np.any(keep):
            continue
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            v = lw[keep] + t * lx[keep]
            w = np.exp(v - np.max(v))
            w /= np.sum(w)
            x = lx[keep]
            mean = float(np.sum(w * x))
            var += c.count * float(np.sum(w * (x - mean) ** 2))
    return math.sqrt(var) if var > 0 and math.isfinite(var) else 0.0  # 0: none, or beyond double range


def _grid_step(width: float, k_total: float, log_eta: float) -> float:
    """Largest ``h`` with ``h·(sqrt(K·log(1/η)/2) + 4) + K·b_max(h) <= width`` (b_max ≈ h²/8)."""
    h = width / (math.sqrt(k_total * max(-log_eta, 1.0) / 2.0) + 2.0)
    return min(h, math.sqrt(0.8 * width / max(k_total, 1.0)), 1.0)


def _width_for(h: float, k_total: float, log_eta: float) -> float:
    """The smallest ``width`` whose :func:`_grid_step` is at least ``h`` (its inverse, where h < 1)."""
    return max(h * (math.sqrt(k_total * max(-log_eta, 1.0) / 2.0) + 2.0), h * h * max(k_total, 1.0) / 0.8)


def _human(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.1f} MiB"


class _TooBig(Exception):
    """Raised before allocation when a grid would pass the memory cap, or before the work when it would pass
    a work cap (turned into InputError).  ``need`` and ``cap`` in ``unit`` (bytes, or grid points for a
    work cap); ``over`` = need/cap, by which the grid is too fine."""

    def __init__(self, need: float, what: str, cap: float | None = None, unit: str = "bytes", fit=None):
        super().__init__(what)
        self.need, self.what, self.cap, self.unit = need, what, cap, unit
        self.over = need / cap if cap else math.nan
        self.fit = fit  # a bracket width whose grid would fit (None: estimated from ``over``)

    def ratio(self, memory_cap: float) -> float:
        """By how much the grid is too fine: need/cap (for the memory cap, against ``memory_cap``)."""
        return self.over if self.unit != "bytes" else self.need / memory_cap


def _mem_refusal(need: float, cap: float, width: float, what: str):
    raise _TooBig(need, what)


def _work_refusal(need: float, cap: float, what: str, fit=None):
    raise _TooBig(need, what, cap, "points", fit)


def _refuse(err: _TooBig, cap: float, goal: float, given: bool, basis: str = "ε"):
    """The user-facing refusal: what was asked, what it needs, and a tolerance that fits the cap.
    ``basis``: what the default accuracy is 0.5 % of (ε, or what it was coarsened to)."""
    asked = (
        f"--eps-error {goal:.3g}" if given else f"the default accuracy (0.5 % of {basis}, about {goal:.3g})"
    )
    if err.unit != "bytes" and err.fit == math.inf:
        raise InputError(
            f"the privacy loss distribution needs about {err.need:.3g} {err.what}, above the work "
            f"cap of {err.cap:.3g} (at any --eps-error); use {RDP_HINT}"
        ) from None
    relax = max(err.fit, goal * 1.5) if err.fit else goal * err.ratio(cap) * 3.0
    if not (math.isfinite(err.need) and err.need < 2.0**70 and math.isfinite(relax)):
        raise InputError(
            f"--eps-error: the privacy loss spans too wide a range for a grid (ε about {goal:.3g}); use {RDP_HINT}"
        ) from None
    if err.unit != "bytes":
        raise InputError(
            f"--eps-error: {asked} needs about {err.need:.3g} {err.what}, above the work cap of {err.cap:.3g}; "
            f"relax --eps-error to at least {relax:.3g}, or use {RDP_HINT}"
        ) from None
    raise InputError(
        f"--eps-error: {asked} needs about {_human(err.need)} for {err.what}, above the memory cap of "
        f"{_human(cap)}; relax --eps-error to at least {relax:.3g}, or use {RDP_HINT}"
    ) from None


def _prepare(components, width, log_delta_fin, lam, eps_center, memory_cap):
    """Discretise all components on a grid meeting ``width``; return what composition needs."""
    k_total = float(sum(c.count for c in components))
    log_eta = log_delta_fin + math.log(1e-3)
    h = _grid_step(width, k_total, log_eta)
    # bounded losses push the saddle point to infinity: cap the tilt so neighbouring grid points
    # differ by at most a factor e in the tilted frame (both stay far above the FFT noise floor)
    lam = min(lam, 1.0 / h)
    log_target = log_delta_fin + math.log(1e-7) - math.log(k_total * len(components))
    # a model that can shed a tail of negligible mass (a mixture's unlikely components) does so at the level
    # its grid gives up anyway: the cut mass goes to +∞ and counts against the lower end (discretise)
    components = [
        Component(c.model.cut(log_target - math.log(c.count)), c.count) if c.model.cut is not None else c
        for c in components
    ]
    ranges = [choose_range(c.model, h, log_target - math.log(c.count)) for c in components]
    step_points = sum(ib - ia + 1 for ia, ib in ranges)
    # the per-mechanism grids are sized before allocation here; the FFT window (the large
    # allocation) is sized from the discrete PLDs' exact cumulants by ``_window`` and checked there
    need = step_points * C.BYTES_PER_STEP_POINT
    if k_total == 1:  # one mechanism used once: its window is about its whole grid (and sized only
        need += step_points * C.BYTES_PER_POINT  # after the costly discretisation): count it here
    if need > memory_cap:
        # refuse; size the suggestion by the larger of this and a (rough) estimate of the window
        d = max(1e-3 * lam, 1e-4)
        kk = sum(c.count * c.model.log_mgf(np.array([lam, lam + d, lam + 2 * d])) for c in components)
        sd = math.sqrt(max((kk[2] - 2 * kk[1] + kk[0]) / d**2, 0.0))
        z = math.sqrt(2.0 * max(30.0, -log_delta_fin + 30.0)) + 4.0
        span = sum(c.count * (ib - ia) for c, (ia, ib) in zip(components, ranges))
        window = min(2.0 * z * sd / h, span) * C.BYTES_PER_POINT
        _mem_refusal(max(need, window), memory_cap, width, "the per-mechanism grids and the FFT window")
    if step_points > MAX_GRID_POINTS:  # the grid points scale as 1/h: this h would fit
        fit = _width_for(h * 1.25 * step_points / MAX_GRID_POINTS, k_total, log_eta)
        _work_refusal(step_points, MAX_GRID_POINTS, "grid points (of the per-mechanism grids)", fit)
    plds, left = [], MAX_PANELS
    for c, (ia, ib) in zip(components, ranges):
        try:
            plds.append(discretise(c.model, h, ia, ib, left))
        except TooManyPanels as exc:
            # (the panels follow the noise's scale, not the grid's: a coarser grid needs about as many)
            _work_refusal(MAX_PANELS - left + exc.need, MAX_PANELS, "quadrature panels", math.inf)
        left -= plds[-1].panels
    return h, plds, lam


def _kc(components):
    """The quadrature cumulant function ``t ↦ Σ count·log E_P[e^{tL}; L < ∞]`` (vectorised)."""
    return lambda t: sum(c.count * c.model.log_mgf(t) for c in components)


def _window(plds, counts, kc, lam, h, log_delta_fin, eps_lo, memory_cap, width, grow=(1.0, 1.0)):
    kap = C.kappa(plds, counts, lam)
    log_tau = math.log(1e-10) + log_delta_fin - (kap - lam * eps_lo) - C.log_w_star(lam)
    log_tau = min(log_tau, math.log(1e-10))
    lo_idx, n = C.window_for(plds, counts, lam, log_tau, math.log(1e-10) + log_delta_fin, h, kc)
    if grow != (1.0, 1.0):  # a previous attempt's answer fell outside: extend that side
        extra_lo, extra_hi = int((grow[0] - 1.0) * n), int((grow[1] - 1.0) * n)
        lo_idx -= extra_lo
        n += extra_lo + extra_hi
    n_fft = C.fast_len(n)
    if n_fft * C.BYTES_PER_POINT > memory_cap:
        _mem_refusal(n_fft * C.BYTES_PER_POINT, memory_cap, width, "the FFT window")
    if len(plds) > 1 and len(plds) * n_fft > MAX_FFT_WORK:
        _work_refusal(len(plds) * n_fft, MAX_FFT_WORK, "transformed points (mechanisms × FFT window)")
    return lo_idx, n_fft


def _exp_up(log_v: float) -> float:
    """``e^{log_v}`` rounded up, never 0 unless ``log_v = −inf`` (the smallest subnormal below 1e-308)."""
    if log_v == -math.inf:
        return 0.0
    return min(1.0, max(math.exp(log_v) * (1.0 + 1e-9), 5e-324))
