"""Rényi DP of the subsampled Gaussian mechanism (docs/math.md §3.2 and §3.3).

* :func:`rdp_poisson` — exact RDP of the Poisson-subsampled Gaussian under add/remove-one neighbours
  (Mironov–Talwar–Zhang 2019, arXiv 1908.10530 §3.3; docs/math.md §3.2).
* :func:`rdp_without_replacement` — the Wang–Balle–Kasiviswanathan upper bound for sampling without
  replacement under replace-one neighbours (AISTATS 2019, arXiv 1808.00087, Thm 9 / "Thm 27" / Cor. 10;
  docs/math.md §3.3).

Both take ``q`` and ``sigma`` (broadcast against each other) and a 1-D array of orders, and return
``broadcast(q, sigma).shape + (len(alphas),)``: the RDP of **one** step (multiply by the number of steps).
``sigma`` is the noise standard deviation divided by the ℓ₂ sensitivity under the neighbouring relation
of the theorem (add/remove for Poisson, replace-one for sampling without replacement).

Numerics.  Integer orders sum the binomial expansion in log space; only the terms within ``e^-45/(α+1)``
of the largest are summed (located by bisection on the unimodal pieces of the term sequence) and the
omitted ones are bounded and added, so orders up to 10^4 and beyond cost a few dozen terms each.  For the
Poisson case the sum is taken for ``A_α - 1`` (all its terms are positive), so tiny RDP values keep full
relative precision.  Fractional orders use the signed two-sided series with the positive and negative
terms accumulated separately; its rounding error and tail are bounded and added.  Where the series gives
up or keeps few digits (A ≈ 1), a quadrature of ``A_α − 1`` with a positive integrand takes over.
The result is never worse than the log-convexity interpolation between the neighbouring integer orders
(an upper bound: ``log A_α`` is convex in α by Hölder's inequality).  Fractional orders above
:data:`FRAC_SERIES_MAX` use that interpolation bound directly.  Bounds are rounded up; RDP is
non-decreasing in α, so each order's bound is also capped by the bounds at higher orders.

Modules: :mod:`~dpcalc.engine.mechanisms.sgm.poisson` (§3.2), :mod:`~dpcalc.engine.mechanisms.sgm.fixed_size`
(§3.3), :mod:`~dpcalc.engine.mechanisms.sgm.replace` (§3.5), :mod:`~dpcalc.engine.mechanisms.sgm.truncated_poisson`
(§3.7: one step of truncated Poisson batches, its Rényi curve and loss models), and the private helpers
``_series`` (windowed binomial sums) and ``_orders`` (the pairs × orders table, rounding and monotonicity);
log Γ, log Φ and :class:`light_start` come from :mod:`dpcalc.engine._special`.  This package re-exports the
public names of the first two.
"""

from __future__ import annotations

from dpcalc.engine._special import light_start
from dpcalc.engine.mechanisms.sgm.fixed_size import WOR_FORWARD_DIFF_MAX, rdp_without_replacement
from dpcalc.engine.mechanisms.sgm.poisson import FRAC_SERIES_DIRECT_MAX, FRAC_SERIES_MAX, rdp_poisson

__all__ = [
    "FRAC_SERIES_DIRECT_MAX",
    "FRAC_SERIES_MAX",
    "WOR_FORWARD_DIFF_MAX",
    "light_start",
    "rdp_poisson",
    "rdp_without_replacement",
]
