"""The Poisson-subsampled Gaussian's Rényi curve with its lone fractional orders deferred (docs/math.md §3.2).

A fractional order alone between two whole numbers (69.7, 82.7, …, 298.9 in the default grid) costs a long
signed series or a quadrature per (q, σ) pair (MTZ 2019 §3.3), yet it can decide ε only for the rows whose
best order lies near it.  :class:`DeferredCurve` builds the curve with those orders at the chord bound
between ⌊α⌋ and ⌊α⌋ + 1 (a valid upper bound: log A_α is convex in α, Hölder; Wang, Balle, Kasiviswanathan
2019, arXiv 1808.00087, Cor. 10) and a certified lower bound on each one's exact level (the secant of
log A over [j, ⌊α⌋] extended, j the next lower whole order computed, by the same convexity).  A caller that can tell which (pair, order)
may change its answer (:func:`dpcalc.engine.conversion.of_curve.orders_that_matter`) has only those
computed (:meth:`DeferredCurve.refine`).

Every value computed is the value :func:`dpcalc.engine.mechanisms.sgm.poisson.rdp_poisson` gives (the
fractional orders' values do not depend on the others computed with them); an order left at its chord bound
is a valid upper bound, and where it is certified (``lower`` at least the level of the next lower order) not
to be the suffix minimum of any lower order, the curve at every other order is the exact one's.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.sgm._orders import (
    SIGMA_HUGE,
    _int_table,
    _monotone,
    _per_order,
    _prepare,
    _q_one,
    _round_up,
)
from dpcalc.engine.mechanisms.sgm.poisson import (
    FRAC_SERIES_MAX,
    _log_a_int_poisson,
    _rdp_poisson_generic,
    frac_log_a,
)

#: Relative margin taken off the secant lower bound: it covers the integer orders' rounding and truncation
#: allowances (below 1e-11 relative, docs/math.md §3.2) and the float arithmetic of the bound itself.
LOWER_MARGIN = 1e-9


def lone_fractional(alphas):
    """The orders that can be deferred (bool per order): fractional, at most ``FRAC_SERIES_MAX`` (above it
    the chord bound is the value anyway), ⌊α⌋ >= 2, and no other order of the grid in (⌊α⌋, ⌊α⌋ + 1)."""
    fl = np.floor(alphas)
    frac = np.isfinite(alphas) & (fl != alphas) & (alphas <= FRAC_SERIES_MAX) & (fl >= 2.0)
    inside = (alphas[None, :] > fl[:, None]) & (alphas[None, :] < fl[:, None] + 1.0)
    return frac & (inside.sum(axis=1) == 1)


class DeferredCurve:
    """The per-step curve of :func:`~dpcalc.engine.mechanisms.sgm.poisson.rdp_poisson` for arrays ``q``,
    ``sigma`` (broadcast; the rows) at ``alphas``, with the orders of :func:`lone_fractional` deferred.

    ``upper`` and ``lower`` (rows × orders): the curve with the deferred orders at their chord bound (valid),
    and a lower bound on the exact curve (equal to it at every order not deferred).  ``stale`` (per row): rows
    whose other orders could still move when a deferred order is computed (its lower bound does not clear the
    next lower order); :meth:`refine` computes every deferred order of those.  ``deferred`` (per order)."""

    def __init__(self, q, sigma, alphas):
        shape, qu, su, inv, alphas = _prepare(q, sigma, alphas)
        self.alphas, self._shape, self._inverse = alphas, shape, inv
        self._q, self._s = qu, su
        self.deferred = lone_fractional(alphas)
        fin = np.isfinite(alphas)
        self._main = (qu > 0) & (qu < 1) & (su > 0) & (su <= SIGMA_HUGE)
        P, m = qu.size, alphas.size
        self._table = None
        self._lookup = None

        def generic(qm, sm, af):
            self._lookup = _int_table(qm, sm, af, _log_a_int_poisson)
            self._table = _rdp_poisson_generic(qm, sm, af, self.deferred[fin], self._lookup)
            return self._table

        raw = self._raw(generic)
        low = raw.copy()
        unsafe = np.zeros(P, dtype=bool)
        cols = np.flatnonzero(self.deferred)
        if self._table is not None and cols.size:
            main = np.flatnonzero(self._main)
            a = alphas[cols]
            k = np.floor(a)
            t = a - k
            # the secant over [j, k], j the table's next lower integer order (1 where there is none: log A_1 = 0)
            ks = self._lookup.orders
            at = np.searchsorted(ks, k)
            j = np.where(at > 0, ks[np.maximum(at - 1, 0)], 1.0)
            s = t / (k - j)
            la_k, la_j = self._lookup(k), self._lookup(j)
            with np.errstate(invalid="ignore", over="ignore"):
                lb = ((1.0 + s) * la_k * (1.0 - LOWER_MARGIN) - s * la_j) / (a - 1.0)
            lb = np.where(np.isfinite(lb) & (lb > 0), lb, 0.0)
            low[np.ix_(main, cols)] = lb
            # the next lower order's level: a deferred order whose bound clears it is never a lower order's
            # suffix minimum, so leaving it at its chord bound moves no other order of the curve
            order = np.argsort(alphas, kind="stable")
            rank = np.empty(m, dtype=np.int64)
            rank[order] = np.arange(m)
            below = order[np.maximum(rank[cols] - 1, 0)]
            has_below = rank[cols] > 0
            clear = ~has_below | (lb >= raw[np.ix_(main, below)])
            unsafe[main] = ~np.all(clear, axis=1) | np.any(raw[main] == 0, axis=1)
        self._raw_upper = raw
        self._unsafe = unsafe
        self._upper = _monotone(_round_up(raw), alphas)
        self._lower = _monotone(low, alphas)
        self.stale = unsafe[inv].reshape(shape)

    @property
    def upper(self):
        """The curve (rows × orders) with the deferred orders at their chord bound (kept per pair, spread to
        the rows on each access: a sweep's chunk has some ten rows a pair)."""
        return self._rows(self._upper)

    @property
    def lower(self):
        """A lower bound (rows × orders) on the exact curve, equal to it at every order not deferred."""
        return self._rows(self._lower)

    def _rows(self, per_pair):
        return per_pair[self._inverse].reshape(self._shape + (self.alphas.size,))

    def _raw(self, generic):
        """The (pairs × orders) levels before rounding up and the suffix minimum (:func:`_per_order`)."""
        P = self._q.size
        with np.errstate(over="ignore"):
            return _per_order((P,), self._q, self._s, np.arange(P), self.alphas, generic, _q_one)

    def refine(self, need):
        """The curve (rows × orders) with the deferred orders computed where ``need`` (rows × orders, bool)
        says, and every deferred order of the :attr:`stale` rows; the others stay at their chord bound."""
        m = self.alphas.size
        if self._table is None:
            return self.upper
        per_pair = np.zeros((self._q.size, m), dtype=bool)
        r, o = np.nonzero(np.asarray(need, dtype=bool).reshape(-1, m) & self.deferred)
        per_pair[self._inverse.reshape(-1)[r], o] = True  # a pair needs an order where any of its rows does
        per_pair[self._unsafe] |= self.deferred
        fin = np.isfinite(self.alphas)
        main = np.flatnonzero(self._main)
        sub = per_pair[main][:, fin]  # (main pairs × finite orders), as the table
        pi, ji = np.nonzero(sub)
        if pi.size:
            af = self.alphas[fin]
            vals, ok = frac_log_a(self._q[main][pi], self._s[main][pi], af[ji])
            table = self._table.copy()
            cur = table[pi, ji]
            table[pi, ji] = np.where(ok, np.minimum(vals, cur), cur)
            raw = self._raw(lambda *_: table)
        else:
            raw = self._raw_upper
        return self._rows(_monotone(_round_up(raw), self.alphas))
