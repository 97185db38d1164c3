"""DP-SGD's step budget: the largest number of steps whose ε is within a target (docs/math.md §3; the
forward accounting is :mod:`dpcalc.engine.dpsgd.accounting`).

Conservative by construction: ε(T) was computed and found within the target, and ε(T + 1) above it (but for
T = :data:`STEPS_LIMIT`, reported with a warning where even that many steps fit).
"""

from __future__ import annotations

import warnings

import numpy as np

from dpcalc.engine.dpsgd._multisect import multisect
from dpcalc.engine.dpsgd.accounting import (
    _bcast,
    eps_of_curve,
    epsilon,
    rdp_per_step,
)
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import DpcalcWarning

#: The largest step count searched by default: 2^53.  Every count up to it is a double; above it not every
#: one is (2^53 + 1 is not, and T + 1 == T in floating point), so "ε(T) within the target and ε(T + 1) above
#: it" could not be checked.  ε is non-decreasing in T, so searching [1, 2^53] finds every answer that can
#: be stated exactly.
STEPS_LIMIT = float(2**53)


def max_steps(q, sigma, delta, target, *, accountant="rdp", steps_max=STEPS_LIMIT, **kw):
    """Largest number of steps T with ε(q, σ, T, δ) <= target, vectorised (0 where even one step exceeds it;
    ``steps_max`` where that many still fit, with a warning: the largest count that fits is then at least
    that).  Conservative by construction: ε(T) was computed and found <= target, and ε(T + 1) above it.
    ``steps_max`` is capped at :data:`STEPS_LIMIT`.  Returns ``(steps, Epsilon at steps)`` (ε nan where
    steps = 0).
    """
    steps_max = min(float(steps_max), STEPS_LIMIT)
    q, sigma, delta, target = _bcast(q, sigma, delta, target)
    shape = q.shape
    qf, sf, df, ef = (x.reshape(-1) for x in (q, sigma, delta, target))
    n = qf.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        if accountant == "rdp":
            orders = np.asarray(kw.pop("orders", DEFAULT_ORDERS), dtype=float)
            conv = kw.get("conversion", "optimal")
            per_step = rdp_per_step(
                qf,
                sf,
                orders,
                sampling=kw.get("sampling", "poisson"),
                neighbors=kw.get("neighbors", "add-remove"),
            )

            def eps_steps(t, rows):
                with np.errstate(invalid="ignore", over="ignore"):
                    tot = np.where(per_step[rows, None] == 0, 0.0, t[..., None] * per_step[rows, None])
                return eps_of_curve(orders, tot, df[rows, None], conv).value
        else:

            def eps_steps(t, rows):
                return epsilon(accountant, qf[rows, None], sf[rows, None], t, df[rows, None], **kw).epsilon

        all_rows = np.arange(n)
        ends = eps_steps(np.stack([np.ones(n), np.full(n, float(steps_max))], axis=1), all_rows)
        one_ok = ends[:, 0] <= ef
        all_ok = ends[:, 1] <= ef

        def f(x, active):
            out = np.zeros(x.shape, dtype=bool)
            rows = np.nonzero(active)[0]
            out[rows] = eps_steps(x[rows], rows) > ef[rows, None]  # "too many" is the True side
            return out

        search = one_ok & ~all_ok
        lo, hi = multisect(
            f,
            np.ones(n),
            np.full(n, float(steps_max)),
            lambda a, b: ~search | (b - a <= 1.0),
            points=15,
            rounds=40,
            integer=True,
        )
        steps = np.where(all_ok, float(steps_max), np.where(one_ok, lo, 0.0))
        e_final = np.where(steps >= 1, eps_steps(np.maximum(steps, 1.0)[:, None], all_rows)[:, 0], np.nan)
    if np.any((steps >= 1) & (e_final > ef)):
        raise AssertionError("max_steps returned a count above the target")
    if np.any(steps == 0):
        warnings.warn(
            "--target-epsilon: even one step exceeds the target for "
            f"{int(np.sum(steps == 0))} row(s) (steps 0, no epsilon)",
            DpcalcWarning,
            stacklevel=2,
        )
    if np.any(steps >= steps_max):
        limit = " = 2^53, the largest count held exactly" if steps_max == STEPS_LIMIT else ""
        warnings.warn(
            f"--target-epsilon: {int(steps_max)} steps (the most searched{limit}) still fit the target for "
            f"{int(np.sum(steps >= steps_max))} row(s): that count is reported; more may fit",
            DpcalcWarning,
            stacklevel=2,
        )
    return steps.reshape(shape), e_final.reshape(shape)
