"""``dpcalc compose --group-size K``: what the composition promises a person who contributed K examples
(docs/math.md §2.15).

The methods of :mod:`dpcalc.commands.compose.methods` run on each spec's person-level form
(:func:`dpcalc.input.group.person_forms`: the tightest route per spec).  Beside them, ``--method all`` shows (and
``best`` weighs) the two generic routes applied to the whole example-level composition, the comparison
people use today:

* ``rdp-group`` — the RDP group property (Mironov 2017, arXiv:1702.07476, Prop. 2) on the summed curve:
  order β >= 2 of the person reads the example-level curve at 2^c·β times 3^c (2^c >= K), converted by the
  optimal conversion over the same 225 orders;
* ``dp-group`` — the (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the example-level bound: at a
  target δ, the smallest ε' found (:func:`_search`) with K·e^((K−1)ε')·δ' <= δ, where ε' is the certified
  example-level ε at δ' of the method that is best at δ/K, and ε = K·ε' (rounded up): every δ' that passes
  that test certifies (K·ε', δ), whether or not the search found the best one; at a target ε,
  δ = K·e^((K−1)ε')·δ(ε') at ε' = ε/K, δ(ε') the smallest of every method that applies.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpcalc.commands.compose.methods import (
    METHOD_ORDER,
    METHODS,
    _at_zero,
    _zero,
    _zero_beyond_max_loss,
    rdp_rows,
)
from dpcalc.engine.mechanisms.base import decimal, up
from dpcalc.engine.mechanisms.catalogue import gaussian_r2, rdp_refusal, rdp_work_refusal, total_rdp
from dpcalc.engine.mechanisms.group import doublings, log_group_delta, rdp_group
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError

#: The dp-group search: the most doublings of the step down from δ/K, the most regula-falsi steps after,
#: and the smallest δ' tried.
_DOUBLINGS, _SECANT, _LOG_TINY = 12, 14, math.log(1e-300)


def _rdp_group(specs, want_eps, targets, opts):
    """The RDP group property on the whole example-level curve (module docstring)."""
    k, person = opts["group_size"], opts["person"]
    for s in specs:
        if (refusal := rdp_refusal(s)) is not None:
            return None, refusal, {}
    if (refusal := rdp_work_refusal(specs)) is not None:
        return None, refusal, {}
    c = doublings(k)
    curve = rdp_group(lambda o: total_rdp(specs, o), k, DEFAULT_ORDERS)
    head = (
        f"RDP group property (Mironov 2017, Prop. 2) of the example-level curve, 2^{c} = {2**c} >= K: "
        f"order α/{2**c} at {3**c}·ε(α); "
    )
    if not np.any(np.isfinite(curve)):
        why = (
            f"inf: the example-level curve is infinite at every order 2^{c}·α >= {2 ** (c + 1)} that the group "
            "property needs"
        )
        values = [math.inf if want_eps else 1.0] * targets.size
        values, notes = _at_zero(person, _zero(want_eps, targets), values, head + why, head + why)
        return values, notes, {}
    return rdp_rows(person, curve, want_eps, targets, head)


def _example(specs, want_eps, values, opts):
    """The example-level bound at ``values`` (δ, or ε): the smallest certified value of every method that
    applies (exact alone where it does), as ``(array, method names)``; ``nan`` where none applies."""
    names = ("exact",) if gaussian_r2(specs) is not None else METHOD_ORDER
    sub = {"eps_error": opts.get("eps_error"), "strict": False, "tuning": None}
    best = np.full(values.shape, np.nan)
    by = [""] * values.size
    for name in names:
        got, _, _ = METHODS[name](specs, want_eps, values, sub)
        if got is None:
            continue
        for i, v in enumerate(got):
            if v is not None and not np.isnan(v) and not (v >= best[i]):
                best[i], by[i] = float(v), name
    return best, by


def _log_group_delta(k: int, eps: float, delta: float) -> float:
    """:func:`dpcalc.engine.mechanisms.group.log_group_delta` at one point (``-inf`` at δ = 0)."""
    return float(log_group_delta(k, eps, delta))


def _eps_down(target: float, k: int) -> float:
    """The largest double ``e`` with ``k·e <= target`` in the decimals given."""
    e = target / k
    while e > 0 and k * decimal(e) > decimal(target):
        e = float(np.nextafter(e, 0.0))
    return e


def _delta_down(target: float, k: int) -> float:
    """A double ``d`` with ``k·d <= target`` exactly."""
    d = target / k
    while d > 0 and k * Fraction(d) > Fraction(target):
        d = float(np.nextafter(d, 0.0))
    return d


def _dp_group(specs, want_eps, targets, opts):
    """The (ε, δ) group conversion of the example-level bound (module docstring)."""
    k, person = opts["group_size"], opts["person"]
    head = "(ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the example-level "
    if not want_eps:  # δ at ε: K·e^((K−1)ε')·δ(ε') at ε' = ε/K
        eps = np.array([_eps_down(float(t), k) for t in targets])
        d, by = _example(specs, False, eps, opts)
        values, notes = [], []
        for e, dex, m in zip(eps, d, by):
            if np.isnan(dex):
                values.append(None)
                notes.append("does not apply: no example-level method gives δ at ε/K")
                continue
            log_d = _log_group_delta(k, float(e), float(dex))
            v = 1.0 if log_d >= 0 else float(up(math.exp(log_d), math.exp(log_d)))
            values.append(min(v, 1.0))
            notes.append(f"{head}{m} δ = {float(dex):.6g} at ε' = ε/K = {float(e):.6g}")
        values = np.array([math.nan if v is None else v for v in values])
        _zero_beyond_max_loss(person, targets, values)
        return [None if np.isnan(v) else float(v) for v in values], notes, {}
    zero = _zero(want_eps, targets)
    values, notes = [math.inf] * targets.size, [""] * targets.size
    for i in np.nonzero(~zero)[0]:
        values[i], notes[i] = _search(specs, k, float(targets[i]), opts, head)
    values, notes = _at_zero(person, zero, values, notes, head + "bound at δ = 0: K·ε of pure DP")
    if all(v is None for v in values):
        return None, notes[0].removeprefix("does not apply: "), {}
    return values, notes, {}


def _search(specs, k: int, delta: float, opts, head: str):
    """``(ε, note)``: K·ε' for the best ε' found with K·e^((K−1)ε')·δ' <= ``delta``, where ε' is the certified
    example-level ε at δ' (the method that is best at δ/K), or ``inf``.  The search runs on x = log δ':
    ``g(x) = log K + (K−1)·ε'(e^x) + x − log δ`` is negative where δ' qualifies; a point below the start
    that qualifies is found by doubling steps, then regula falsi (Illinois) narrows the bracket.  Only
    points that qualify are reported, so the answer holds however the search went."""
    dk = _delta_down(delta, k)
    start, by = _example(specs, True, np.array([dk]), opts)
    e0, name = float(start[0]), by[0]
    if np.isnan(e0):
        return None, "does not apply: no example-level method gives ε at δ/K"
    if not math.isfinite(e0):
        return math.inf, "inf: no finite example-level ε at δ/K"
    if e0 == 0.0:  # (0, δ/K) for one example: (0, δ) for K
        return 0.0, f"{head}{name} bound: ε' = 0 at δ' = δ/K"
    sub = {"eps_error": opts.get("eps_error"), "strict": False, "tuning": None}
    log_target = math.log(delta)
    best = (math.inf, math.nan)

    def g(x):
        nonlocal best
        v, _, _ = METHODS[name](specs, True, np.array([math.exp(x)]), sub)
        e = math.inf if v is None or v[0] is None or np.isnan(v[0]) else float(v[0])
        if not math.isfinite(e):
            return math.inf
        out = _log_group_delta(k, e, math.exp(x)) - log_target
        if out <= 0 and e < best[0]:
            best = (e, math.exp(x))
        return out

    hi, g_hi = math.log(dk), _log_group_delta(k, e0, dk) - log_target
    step, lo, g_lo = 2.0 * (k - 1) * e0 + 1.0, None, math.inf
    for _ in range(_DOUBLINGS):
        x = hi - step
        if x < _LOG_TINY:
            break
        gx = g(x)
        if gx <= 0:
            lo, g_lo = x, gx
            break
        hi, g_hi = x, gx  # not qualifying: the answer lies below
        step *= 2.0
    if lo is None:
        return math.inf, (
            f"inf: no δ' down to {math.exp(max(hi - step, _LOG_TINY)):.3g} has K·e^((K−1)ε')·δ' <= δ: the (ε, δ) "
            "group route gives no finite bound here"
        )
    side = 0
    for _ in range(_SECANT):  # regula falsi, Illinois variant, on [lo, hi]: g(lo) <= 0 < g(hi)
        if not math.isfinite(g_hi):
            x = 0.5 * (lo + hi)
        else:
            x = hi - g_hi * (hi - lo) / (g_hi - g_lo)
            if not lo < x < hi:
                x = 0.5 * (lo + hi)
        gx = g(x)
        if gx <= 0:
            lo, g_lo = x, gx
            if side == -1:
                g_hi *= 0.5
            side = -1
        else:
            hi, g_hi = x, gx
            if side == 1:
                g_lo *= 0.5
            side = 1
        if hi - lo < 1e-4 * max(1.0, abs(lo)):
            break
    e, d = best
    value = float(up(k * e, k * e))
    return value, f"{head}{name} bound: ε' = {e:.6g} at δ' = {d:.3g}; ε = K·ε'"


#: The generic routes over the whole composition, by row name, in the order ``--method all`` shows them.
GROUP_METHODS = {"rdp-group": _rdp_group, "dp-group": _dp_group}


def check_group_question(tuning) -> None:
    """Options that do not go with --group-size (a usage error before any work)."""
    if tuning is not None:
        raise InputError("--group-size cannot be used with --tuning-runs")
