"""The conversions between Rényi DP and (ε, δ)-DP (docs/math.md §1): ε or δ certified by a Rényi curve, and
the Rényi level that certifies (ε, δ)."""

from __future__ import annotations

from dpcalc.api.contract import Bound, broadcast, choice, contract, real
from dpcalc.engine.conversion import methods as conversions
from dpcalc.errors import InputError

_CONVERSIONS = ("optimal", "asoodeh", "balle", "mironov")


def _curve(alphas, rdp):
    alphas = real("alphas", alphas, lo=1, lo_open=True, inf=True)
    rdp = real("rdp", rdp, lo=0, inf=True)
    if getattr(alphas, "ndim", 0) != 1:
        raise InputError("alphas: the orders of a curve must be a 1-D array")
    return alphas, rdp


@contract
def epsilon_from_rdp(alphas, rdp, delta, method: str = "optimal") -> Bound:
    """The smallest ε at ``delta`` certified by a Rényi-DP curve ``rdp`` over the orders ``alphas``
    (a 1-D array > 1; ``rdp`` >= 0 has the orders on its last axis, +inf where there is no bound),
    minimised over the orders.  ``method``: optimal (Asoodeh et al. 2021), asoodeh, balle (Balle et
    al. 2020 / Canonne et al. 2020), mironov (Mironov 2017).  docs/math.md §1."""
    method = choice("method", method, _CONVERSIONS)
    alphas, rdp = _curve(alphas, rdp)
    delta = real("delta", delta, lo=0, hi=1)
    b = conversions.eps_from_curve(alphas, rdp, delta, method=method)
    return Bound(b.value, alpha=b.alpha)


@contract
def delta_from_rdp(alphas, rdp, epsilon, method: str = "optimal") -> Bound:
    """The smallest δ at ``epsilon`` (>= 0) certified by a Rényi-DP curve (as :func:`epsilon_from_rdp`)."""
    method = choice("method", method, _CONVERSIONS)
    alphas, rdp = _curve(alphas, rdp)
    epsilon = real("epsilon", epsilon, lo=0, inf=True)
    b = conversions.delta_from_curve(alphas, rdp, epsilon, method=method)
    return Bound(b.value, alpha=b.alpha)


@contract
def rdp_from_dp(alpha, epsilon, delta) -> Bound:
    """The largest Rényi-DP level ζ at order ``alpha`` (> 1) such that every (α, ζ)-RDP mechanism is
    (ε, δ)-DP: Asoodeh et al.'s exact conversion, rounded down (``value``: every level up to it certifies
    (ε, δ); what a privacy filter may spend).  docs/math.md §1.3–§1.4."""
    alpha = real("alpha", alpha, lo=1, lo_open=True)
    epsilon = real("epsilon", epsilon, lo=0, inf=True)
    delta = real("delta", delta, lo=0, hi=1)
    broadcast(alpha=alpha, epsilon=epsilon, delta=delta)
    return Bound(conversions.zeta_opt(alpha, epsilon, delta))
