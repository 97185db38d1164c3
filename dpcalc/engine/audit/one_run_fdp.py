"""One-run auditing of f-DP: a μ-GDP lower bound from m canaries (docs/math.md §11.7).

Mahloujifar, Melis & Chaudhuri, "Auditing f-Differential Privacy in One Run", ICML 2025,
arXiv:2410.22235.  The game is that of :mod:`.one_run` (Steinke, Nasr & Jagielski 2023): m canaries,
each included independently with probability 1/2; the auditor guesses "in" or "out" for k of them and
v guesses are right.  Their analysis tests the hypothesis "the training is f-DP" for a whole trade-off
curve f instead of an (ε, δ) pair; here f is the Gaussian curve G_μ (Dong, Roth & Su 2019), whose
blow-up inverse is ``g_μ(x) = Φ(Φ⁻¹(x) − μ)`` (the least false-guess rate a μ-GDP mechanism allows at
right-guess rate x, flipping one canary).

The test (the paper's recursion on the guesses with the cap k on their number, its Algorithm 3,
"audit_rh_with_cap"): with significance τ = 1 − c, start from

    r = τ·v/m,    h = τ·(k − v)/m

(the least mass of right and of wrong guesses, per canary, on the event "at least v right" if that
event had probability ≥ τ), and for i = v − 1, …, 0

    h' = max(h, g_μ(r)),    r' = r + i/(k − i)·(h' − h).

If the end value r + h exceeds k/m (the whole mass of k guesses per canary, which it cannot), P[at
least v right] < τ under every μ-GDP mechanism: "μ-GDP" is rejected at level τ.  r + h never
decreases along the recursion, so the test stops as soon as it exceeds k/m (rejected), or when h no
longer moves (a fixed point: nothing changes after it), or after the v steps.

The lower bound is the largest μ that is rejected.  A μ'-GDP mechanism with μ' < μ is μ-GDP, and the
rejection is monotone in μ (``g_μ`` falls pointwise as μ grows; tests check it), so the μ that are
rejected form an interval [0, μ*): the search takes a grid of :data:`MU_MAX`/80 on [0, MU_MAX],
keeps the cell below the *first* grid point not rejected (never a rejected point above one that is
not), and refines that cell with grids of :data:`_REFINE` points down to a width of 1e-10·(1 + μ).

Rounding, all to the side that keeps the result a lower bound:

* μ is rejected only if the end value exceeds ``(k/m)·(1 + MARGIN + STEP_MARGIN·s)`` after s steps;
  the recursion's floating error (a few ulps per step on values ≤ k/m, added over the s steps) is
  below that, so a rejection in floating point is one in exact arithmetic (the tests redo the
  recursion at the reported μ in 40-digit mpmath and find it rejected there too);
* the reported μ is the rejected end of the last cell, never the point that was not rejected;
* μ = 0 is reported when even μ = 0 (g = identity: no information) is not rejected, and MU_MAX when
  all of [0, MU_MAX] is rejected (it is then still a lower bound).

The ε at δ of the bound is that of a Gaussian curve (:func:`dpcalc.engine.audit.gdp.epsilon_gdp`): a
lower bound on ε only for a mechanism whose trade-off curve is Gaussian, as the paper and jax_privacy's
``epsilon_one_run_fdp`` use it.  μ itself bounds every μ-GDP description of the mechanism.

Vectorised over audits × grid points: one array step per recursion step, on the audits still running.
"""

from __future__ import annotations

import numpy as np
from scipy import special

#: the top of the search: a μ-GDP claim with μ above it is never tested
MU_MAX = 40.0
_GRID = np.linspace(0.0, MU_MAX, 81)
_REFINE = 33
#: the relative margin by which the end value must exceed k/m, and its growth per recursion step
MARGIN = 1e-9
STEP_MARGIN = 1e-14


def blow_up_inverse(x, mu):
    """``Φ(Φ⁻¹(x) − μ)``: the least false-guess rate that μ-GDP allows at right-guess rate ``x``."""
    return special.ndtr(special.ndtri(x) - mu)


def rejects(m, k, v, confidence, mu):
    """Whether "μ-GDP" is rejected at level 1 − ``confidence`` by ``v`` right of ``k`` guesses on
    ``m`` canaries (module docstring).  All arguments broadcast; returns a bool array."""
    m, k, v, c, mu = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (m, k, v, confidence, mu)))
    shape = m.shape
    m, k, v, c, mu = (x.ravel() for x in (m, k, v, c, mu))
    tau = 1.0 - c
    r = tau * v / m
    h = tau * (k - v) / m
    cap = k / m
    out = np.zeros(m.size, dtype=bool)
    # the audits still running: positions into the flat arrays, and their state
    live = np.flatnonzero(v > 0)
    rl, hl, il = r[live], h[live], v[live] - 1.0
    kl, capl, mul = k[live], cap[live], mu[live]
    while live.size:
        h_new = np.maximum(hl, blow_up_inverse(rl, mul))
        moved = h_new > hl
        rl = rl + il / (kl - il) * (h_new - hl)
        hl = h_new
        over = rl + hl > capl * (1.0 + MARGIN + STEP_MARGIN * (v[live] - il))
        out[live[over]] = True
        il = il - 1.0
        keep = moved & ~over & (il >= 0.0)
        live, rl, hl, il, kl, capl, mul = (x[keep] for x in (live, rl, hl, il, kl, capl, mul))
    return out.reshape(shape)


def mu_lower(m, k, v, confidence):
    """The largest μ whose μ-GDP claim the one-run audit rejects at level 1 − ``confidence``: a lower
    bound on μ holding with probability ≥ ``confidence`` (module docstring).  Arrays broadcast (one
    audit per element; 0 ≤ v ≤ k ≤ m, m ≥ 1, confidence in (0, 1))."""
    m, k, v, c = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (m, k, v, confidence)))
    shape = m.shape
    m, k, v, c = (x.ravel() for x in (m, k, v, c))
    n = m.size

    def first_not_rejected(idx, grids):
        """Per audit ``idx`` (a row of ``grids``), the index of its first grid point not rejected (the
        grid's size if none)."""
        g = grids.shape[1]
        rej = rejects(m[idx, None], k[idx, None], v[idx, None], c[idx, None], grids)
        return np.where(rej.all(axis=1), g, np.argmin(rej, axis=1))

    j = first_not_rejected(np.arange(n), np.broadcast_to(_GRID, (n, _GRID.size)))
    out = np.where(j == _GRID.size, MU_MAX, 0.0)
    todo = np.flatnonzero((j > 0) & (j < _GRID.size))
    lo, hi = _GRID[j[todo] - 1], _GRID[j[todo]]
    frac = np.linspace(0.0, 1.0, _REFINE)
    while todo.size:
        grids = lo[:, None] + (hi - lo)[:, None] * frac[None, :]
        grids[:, 0], grids[:, -1] = lo, hi  # the ends stay exactly the points already decided
        # lo is rejected and hi is not (decided before): the first point not rejected is inside
        jj = np.clip(first_not_rejected(todo, grids), 1, _REFINE - 1)
        rows = np.arange(todo.size)
        lo, hi = grids[rows, jj - 1], grids[rows, jj]
        done = hi - lo <= 1e-10 * (1.0 + lo)
        out[todo[done]] = lo[done]
        todo, lo, hi = todo[~done], lo[~done], hi[~done]
    out = out.reshape(shape)
    return out[()] if out.ndim == 0 else out
