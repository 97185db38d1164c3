"""The optimal conversion of ρ-zCDP to a trade-off curve (Bun & Steinke 2016, arXiv:1605.02065, Def. 1.1:
D_λ <= λρ at every order λ > 1, hence KL <= ρ): the Rényi conversion of
:mod:`dpcalc.engine.conversion.rdp_tradeoff` (its constraints, solve and rounding) applied to the curve λρ on
a geometric grid of orders chosen per false-positive rate and refined around the binding order."""

from __future__ import annotations

import numpy as np

from dpcalc.engine._numerics import require
from dpcalc.engine.conversion.rdp_tradeoff import _beta_out, _excess, _solve, _special, _tpr_out

#: zCDP: orders on a geometric grid of λ − 1 up to ZCDP_SPAN·sqrt(s/ρ) (s = max(log(1/a), log(1/(1−a)), 1);
#: the best order sits near sqrt(s/ρ)), then REFINE rounds of a finer grid between the best order's neighbours
ZCDP_GRID = 80
ZCDP_SPAN = 8.0
ZCDP_POINTS = 17
ZCDP_REFINE = 3
_ORDER_MAX = 1e15


def _zcdp_rows(rho, fpr):
    rho = require(rho, lambda v: v >= 0, "rho: must be >= 0 (inf allowed)", lambda v: f"{v:g}")
    a = require(fpr, lambda v: (v >= 0) & (v <= 1), "fpr: must lie in [0, 1]", lambda v: f"{v:g}")
    k, m = rho.size, a.size
    af = np.tile(a.reshape(-1), k)
    rho_r = np.repeat(rho.reshape(-1), m)
    beta_s, tpr_s, special = _special(af, np.isfinite(rho_r), rho_r == 0)
    x = np.full(af.shape, -np.inf)
    idx = np.nonzero(~special)[0]
    if idx.size:
        x[idx] = _zcdp_solve(af[idx], rho_r[idx])
    return x, beta_s, tpr_s, special, af, rho.shape + a.shape


def _zcdp_solve(a, rho):
    """Logit of the lower bound on β under ρ-zCDP (D_λ <= λρ for every λ > 1, KL <= ρ) at rows (a, ρ):
    the constraints of a grid of orders, then of finer grids around the best one (each a subset of the
    continuum of orders, so each gives a valid bound; the largest is kept)."""
    la, lna = np.log(a), np.log1p(-a)
    s = np.maximum(np.maximum(-la, -lna), 1.0)
    top = np.minimum(ZCDP_SPAN * np.sqrt(s / rho), _ORDER_MAX)
    lam = _geom_orders(np.minimum(1e-6, top / 10.0), top, ZCDP_GRID)
    x = _solve(la, lna, lam, _zcdp_level(lam, rho), rho)
    u = np.nonzero(np.isfinite(x))[0]  # rows where β does not round to 0
    lam, rho_u, la_u, lna_u = lam[u], rho[u], la[u], lna[u]
    r = np.arange(u.size)
    n = lam.shape[1]
    for _ in range(ZCDP_REFINE if u.size else 0):
        # the order binding at the lower end (its excess is the largest there), and its neighbours
        j = np.argmax(_excess(x[u], la_u, lna_u, lam, _zcdp_level(lam, rho_u), None), axis=1)
        left = np.where(j == 0, (lam[r, 0] - 1.0) / 2.0, lam[r, np.maximum(j - 1, 0)] - 1.0)
        right = np.where(j == n - 1, 2.0 * (lam[r, n - 1] - 1.0), lam[r, np.minimum(j + 1, n - 1)] - 1.0)
        lam = _geom_orders(left, np.minimum(right, _ORDER_MAX), ZCDP_POINTS)
        n = ZCDP_POINTS
        x[u] = np.maximum(x[u], _solve(la_u, lna_u, lam, _zcdp_level(lam, rho_u), rho_u))
    return x


def _geom_orders(lo, hi, n):
    """Orders 1 + (geometric grid from ``lo`` to ``hi``, n points) per row: shape (rows, n)."""
    t = np.linspace(0.0, 1.0, n)
    return 1.0 + np.exp(np.log(lo)[:, None] * (1.0 - t) + np.log(hi)[:, None] * t)


def _zcdp_level(orders, rho):
    """(λ − 1)·λρ, the log of c for the curve λρ (inf where it overflows: no constraint)."""
    with np.errstate(over="ignore"):
        return (orders - 1.0) * orders * rho[:, None]


def beta_from_zcdp(rho, fpr):
    """Certified lower bound on the type-II error β at each ``fpr`` under ρ-zCDP (Bun & Steinke 2016,
    arXiv:1605.02065, Def. 1.1: D_λ <= λρ for every λ in (1, ∞), hence KL <= ρ in the limit): the
    conversion of :func:`~dpcalc.engine.conversion.rdp_tradeoff.beta_from_rdp` applied to the curve λρ on a geometric grid of orders, refined three
    times around the best one, plus the KL constraint (Zhu, Dong & Wang 2022, arXiv:2106.08567, App. F.1;
    the intersection over all orders is optimal: Riess et al. 2026, arXiv:2602.04562), rounded down.  Any
    finite set of orders gives a valid bound, so the grid only costs tightness (within 1e-7 relative of a
    60 000-order grid in our checks).  Orders in [0.5, 1) are not used: ρ-zCDP does not imply D_τ <= τρ
    there (riskcal's docstring values 0.34 and 0.232 at FPR 0.2 and 0.3 for ρ = 0.5 assume it; we give
    0.33857 and 0.22862, as riskcal's current solver does).

    ``rho`` >= 0 (any shape; ``inf`` allowed), ``fpr`` in [0, 1]; returns β (probabilities) with shape
    ``rho.shape + fpr.shape``."""
    x, beta_s, _, special, _, shape = _zcdp_rows(rho, fpr)
    return _beta_out(x, beta_s, special).reshape(shape)


def tpr_from_zcdp(rho, fpr):
    """Certified upper bound on the TPR 1 − β at each ``fpr`` under ρ-zCDP (:func:`beta_from_zcdp`),
    rounded up and clamped to [fpr, 1]; shape ``rho.shape + fpr.shape``."""
    x, _, tpr_s, special, af, shape = _zcdp_rows(rho, fpr)
    return _tpr_out(x, tpr_s, special, af).reshape(shape)
