"""ε of Poisson-sampled DP-SGD runs by RDP, computing the costly fractional orders only where they can
matter (docs/math.md §3.2, §1.6).

The answer is that of :func:`dpcalc.engine.conversion.of_curve.eps_of_curve` on the full curve of
:func:`dpcalc.engine.mechanisms.sgm.rdp_poisson`, value and order alike: the lone fractional orders
(:class:`~dpcalc.engine.mechanisms.sgm.deferred.DeferredCurve`) start at their chord bound with a certified
lower bound, :func:`~dpcalc.engine.conversion.of_curve.orders_that_matter` says which of them each row's
conversion can depend on, and only those (per (q, σ) pair, for all its rows) are computed.  The others
cannot be the best order nor enter an exact-conversion window, and leave every other order unchanged.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.conversion.of_curve import closed_form, eps_of_curve, orders_that_matter
from dpcalc.engine.mechanisms.sgm.deferred import DeferredCurve
from dpcalc.engine.samplers.base import run_curve


def eps_poisson_rdp(q, sigma, steps, delta, orders, conversion):
    """:func:`eps_of_curve` of ``steps`` × the Poisson-subsampled Gaussian's curve (add/remove-one) at
    ``orders`` (q, σ, steps, δ: arrays of one shape, the rows).  Returns a :class:`conversions.CurveBound`."""
    curve = DeferredCurve(q, np.asarray(sigma, dtype=float), orders)
    up = run_curve(steps, curve.upper)
    if not np.any(curve.deferred):
        return eps_of_curve(orders, up, delta, conversion)
    need, closed = orders_that_matter(
        orders, curve.deferred, up, run_curve(steps, curve.lower), delta, conversion
    )
    del up  # (rows × orders): not held through the conversion, where a sweep's chunk peaks
    total = run_curve(steps, curve.refine(need))
    # the closed form changes only at the deferred orders (and, on stale rows, anywhere)
    kind = closed_form(conversion)
    cols = np.flatnonzero(curve.deferred)
    closed[..., cols] = conversions.eps_per_order(orders[cols], total[..., cols], delta, kind)
    stale = curve.stale
    if np.any(stale):
        closed[stale] = conversions.eps_per_order(orders, total[stale], delta[stale], kind)
    return eps_of_curve(orders, total, delta, conversion, closed=closed)
