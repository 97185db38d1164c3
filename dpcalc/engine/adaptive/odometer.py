"""Privacy filters and odometers over a set of Rényi orders (Lécuyer 2021; docs/math.md §6).

An adaptive interaction is a sequence of steps whose privacy parameters may depend on the answers
of earlier steps.  Every step ``i`` is ``(α, ε_i(α))``-RDP at each tracked order ``α ∈ Λ``; the
caller keeps the running sums ``r(α) = Σ_i ε_i(α)`` (shape ``(..., |Λ|)``, orders on the last axis)
and asks this module:

* :func:`filter_budgets` / :func:`filter_admits` — the (ε, δ) *filter*: a budget ``ε_RDP(α)`` per
  order, fixed before the interaction, and the rule that lets a step run;
* :func:`odometer_bound` — the *odometer*: a running (ε, δ)-DP bound valid at any stopping time,
  through the filter ladder ``ε^f(α) = 2^{f−1} γ(α)`` (:func:`gamma`, :func:`odometer_level`).

Everything is vectorised over leading axes (numpy only).  Reference: M. Lécuyer, "Practical
Privacy Filters and Odometers with Rényi Differential Privacy" (2021; arXiv:2103.01379), Thm 1, Cor. 1,
§3.4, Thm 2, Eq. (5), §4.5.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpcalc.engine.adaptive.plain import PlainBound
from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.mechanisms import sgm
from dpcalc.errors import InputError, UncertifiedError

#: The paper's orders (§4.5): 1.25, 1.5, ..., 9.75, 10, 16, 32 (|Λ| = 38).
PAPER_ORDERS = np.array([1.0 + 0.25 * k for k in range(1, 37)] + [16.0, 32.0])
#: The released code's orders (``main.py``): 2.25, 2.5, ..., 10, 16, 32 (|Λ| = 34).
CODE_ORDERS = np.array([2.0 + x / 4.0 for x in range(1, 33)] + [16.0, 32.0])

GAMMAS = ("paper", "code")
FILTER_RULES = ("union", "paper")
BUDGET_CONVERSIONS = ("optimal", "asoodeh", "balle", "mironov")


def check_orders(alphas) -> np.ndarray:
    """Validate a set of orders Λ: a non-empty 1-D array of distinct finite values > 1."""
    a = np.asarray(alphas, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise InputError("--alphas: give at least one order")
    if not np.all(np.isfinite(a)) or np.any(a <= 1.0):
        raise InputError("--alphas: every order must be a finite number > 1")
    if np.unique(a).size != a.size:
        raise InputError("--alphas: the orders must be distinct")
    return a


def check_delta(delta) -> float:
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise InputError(f"--delta: must lie in (0, 1), got {delta!r}")
    return d


def gamma(alphas, delta: float, kind: str = "paper") -> np.ndarray:
    """The first rung ``γ(α)`` of the odometer's filter ladder (docs/math.md §6.2–6.3).

    * ``"paper"``: ``γ(α) = log(2|Λ|/δ)/(α − 1)`` (Lécuyer §4.5), the smallest ε the odometer can
      ever report at order α, so the first filter is within a factor two of it;
    * ``"code"``: ``γ(α) = 6/(α − 1)``, what the paper's figures were computed with
      (``plots.py::plot_finetuning_odometer_curves``; docs/math.md §6.3).

    Any γ fixed before the interaction gives a valid odometer; the choice only moves the ladder.
    """
    a = check_orders(alphas)
    d = check_delta(delta)
    if kind == "paper":
        return np.log(2.0 * a.size / d) / (a - 1.0)
    if kind == "code":
        return 6.0 / (a - 1.0)
    raise InputError(f"--gamma: must be one of {', '.join(GAMMAS)}, got {kind!r}")


def ladder(gam, level) -> np.ndarray:
    """``ε^f(α) = 2^{f−1} γ(α)`` (Lécuyer §4.5, the display after Eq. 5), exact in floating point."""
    level = np.asarray(level, dtype=float)
    finite = np.isfinite(level)
    f = np.where(finite, level, 1.0).astype(np.int64)
    with np.errstate(over="ignore"):
        out = np.ldexp(np.asarray(gam, dtype=float), f - 1)
    return np.where(finite, out, np.inf)


def odometer_level(rdp, gam) -> np.ndarray:
    """The level reached: the smallest ``f ≥ 1`` with ``r(α) ≤ 2^{f−1} γ(α)`` (Lécuyer Alg. 2, §4.4).

    ``f = max(1, ⌈log₂(r/γ)⌉ + 1)`` (docs/math.md §6.2), corrected by one where the logarithm
    rounds the wrong way, so that ``r ≤ ε^f`` holds in floating point and ``f`` is the smallest
    such level.  ``r = ∞`` (an order where some step has no finite RDP bound) gives ``f = ∞``.
    Returned as floats (``inf`` where unbounded); ``rdp`` has orders on its last axis.
    """
    r = np.asarray(rdp, dtype=float)
    g = np.broadcast_to(np.asarray(gam, dtype=float), r.shape)
    if np.any(np.isnan(r)):
        raise UncertifiedError("odometer: an RDP value is NaN; no bound can be certified")
    finite = np.isfinite(r)
    rf = np.where(finite, np.maximum(r, 0.0), 0.0)  # RDP is >= 0; rounding below 0 only raises f
    with np.errstate(divide="ignore"):
        k = np.ceil(np.log2(np.maximum(rf, np.finfo(float).tiny) / g))
    k = np.clip(k, 0, 2000).astype(np.int64)
    with np.errstate(over="ignore"):
        k = np.where(rf > np.ldexp(g, k), k + 1, k)  # log rounded down: one rung higher
        k = np.where((k > 0) & (rf <= np.ldexp(g, k - 1)), k - 1, k)  # rounded up: one lower
    return np.where(finite, (k + 1).astype(float), np.inf)


class OdometerBound(NamedTuple):
    """The odometer's (ε, δ) bound: ``value`` (ε), the best ``alpha``, its ``index`` and ``level`` f."""

    value: np.ndarray
    alpha: np.ndarray
    index: np.ndarray
    level: np.ndarray


def odometer_bound(alphas, rdp, delta: float, gamma_kind: str = "paper") -> OdometerBound:
    """Running (ε, δ)-DP bound of an adaptive interaction, valid at any stopping time.

    Lécuyer Thm 2 with the union bound over orders of Eq. (5) (docs/math.md §6.2)::

        ε(δ) = min_{α∈Λ} [ ε^{f(α)}(α) + log(2|Λ| f(α)²/δ)/(α − 1) ],   ε^f(α) = 2^{f−1} γ(α),

    where ``f(α)`` is the level reached by the running RDP sum ``r(α)`` (:func:`odometer_level`).
    Validity: at level f the interaction coincides with a filter of budget ``ε^f(α)``, which is
    ``(α, ε^f(α))``-RDP (Thm 1), hence loses more than the bracket with probability at most
    ``δ/(2|Λ|f²)`` (Mironov's tail bound, docs/math.md §1.1); ``Σ_f 1/(2f²) ≤ 1`` and the union over
    the |Λ| orders give δ.  The sequence γ must not depend on the data (it depends on δ and Λ only).

    ``alphas``: shape (m,); ``rdp``: shape (..., m), the running sums; result arrays have shape
    ``rdp.shape[:-1]``.  The value is rounded up by two ulps; an interaction with no finite order
    gives ε = ∞ (alpha NaN).
    """
    a = check_orders(alphas)
    d = check_delta(delta)
    r = np.asarray(rdp, dtype=float)
    if r.ndim == 0 or r.shape[-1] != a.size:
        raise InputError(f"rdp: expected {a.size} values per row (one per order), got shape {r.shape}")
    g = gamma(a, d, gamma_kind)
    level = odometer_level(r, g)
    with np.errstate(over="ignore", invalid="ignore"):
        penalty = (np.log(2.0 * a.size / d) + 2.0 * np.log(np.where(np.isfinite(level), level, 1.0))) / (
            a - 1.0
        )
        per_order = np.where(np.isfinite(level), ladder(g, level) + penalty, np.inf)
    index = np.argmin(per_order, axis=-1)
    value = np.take_along_axis(per_order, index[..., None], axis=-1)[..., 0]
    lev = np.take_along_axis(level, index[..., None], axis=-1)[..., 0]
    finite = np.isfinite(value)
    value = np.where(finite, np.nextafter(np.nextafter(value, np.inf), np.inf), np.inf)
    alpha = np.where(finite, a[index], np.nan)
    return OdometerBound(value, alpha, index, np.where(finite, lev, np.nan))


def filter_budgets(
    alphas, epsilon: float, delta: float, rule: str = "union", conversion: str = "optimal"
) -> np.ndarray:
    """Per-order RDP budgets ``ε_RDP(α)`` of the (ε, δ) filter (Lécuyer §3.4; docs/math.md §6.1, §1.4).

    ``rule="union"`` (default, valid unconditionally): each order gets δ/|Λ|::

        ε_RDP(α) = ζ_α^ε(δ/|Λ|)      (the largest RDP level at α that certifies (ε, δ/|Λ|)-DP)

    Why it is sound, and why the tighter DP → RDP conversions may be used here: for a *fixed*
    order α, the interaction truncated by the single-order filter at α is ``(α, ε_RDP(α))``-RDP
    (Thm 1).  On the event that α stayed within its budget, the real interaction's view equals the
    truncated one, and the filter guarantees one such α always exists (Cor. 1's argument).  So
    ``P0(A) = Σ_α P0(A ∩ C_α) ≤ Σ_α [e^ε P1(A ∩ C_α) + δ/|Λ|]`` where ``C_α`` (α is the first order
    within budget) is a function of the view: each term needs only the fixed-order guarantee
    converted to (ε, δ/|Λ|)-DP for one pair of neighbouring inputs, which any valid per-order
    conversion provides — Mironov ``ε − log(|Λ|/δ)/(α − 1)``, Balle et al.'s inverse ``g``, the
    maximum of ``g`` and Asoodeh et al.'s ``f``, or the exact ``ζ_opt`` (``conversion`` = "mironov",
    "balle", "asoodeh", "optimal"; docs/math.md §1.4).

    ``rule="paper"``: Lécuyer's Cor. 1 + Eq. 2 exactly, ``ε_RDP(α) = ε − log(1/δ)/(α − 1)``, with
    no union bound.  Cor. 1 applies a fixed-order theorem at an order chosen by the realised
    answers, so this rule is *not* proven (docs/math.md §6.1, caution); it is offered to reproduce
    the paper and is never tightened by another conversion (``conversion`` is ignored).

    Orders whose budget is ≤ 0 admit nothing.  Budgets are rounded down by two ulps.
    """
    a = check_orders(alphas)
    d = check_delta(delta)
    eps = float(epsilon)
    if not (np.isfinite(eps) and eps > 0):
        raise InputError(f"--filter: the budget ε must be a finite number > 0, got {epsilon!r}")
    if rule == "paper":
        budgets = eps - np.log(1.0 / d) / (a - 1.0)
    elif rule == "union":
        dd = d / a.size
        if conversion == "mironov":
            budgets = eps - np.log(1.0 / dd) / (a - 1.0)
        elif conversion in ("optimal", "asoodeh", "balle"):
            if conversion == "optimal":
                budgets = conversions.zeta_opt(a, eps, dd)
            elif conversion == "balle":
                budgets = conversions.zeta_g(a, eps, dd)
            else:
                budgets = np.maximum(conversions.zeta_g(a, eps, dd), conversions.zeta_f(a, eps, dd))
            budgets = np.asarray(budgets, dtype=float)
            # never looser than the plain Mironov budget's validity needs: all are valid, keep the largest
            budgets = np.maximum(budgets, eps - np.log(1.0 / dd) / (a - 1.0))
        else:
            raise InputError(
                f"--conversion: must be one of {', '.join(BUDGET_CONVERSIONS)}, got {conversion!r}"
            )
    else:
        raise InputError(f"--filter-rule: must be one of {', '.join(FILTER_RULES)}, got {rule!r}")
    budgets = np.asarray(budgets, dtype=float)
    if np.any(np.isnan(budgets)):
        raise UncertifiedError("the filter's per-order budgets could not be computed (NaN)")
    return np.nextafter(np.nextafter(budgets, -np.inf), -np.inf)


def filter_admits(spent, new, budgets) -> np.ndarray:
    """Whether the filter lets a step run (Lécuyer Eq. 4): iff ``r(α) + ε_new(α) ≤ ε_RDP(α)`` for some α.

    ``spent``, ``new``: shape (..., m) — the RDP already admitted and the new step's curve;
    ``budgets``: shape (m,).  Returns a bool array of shape ``(...)``.  A step that does not run
    costs nothing (ε_i = 0), so the caller adds ``new`` to ``spent`` only where this is True.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.asarray(spent, dtype=float) + np.asarray(new, dtype=float)
        return np.any(total <= np.asarray(budgets, dtype=float), axis=-1)


def run_filter(curves, budgets) -> np.ndarray:
    """Admission decisions for a sequence of steps (rows of ``curves``, shape (n, m)) in order.

    A loop over the steps (each decision depends on the earlier ones); returns a bool array (n,).
    """
    c = np.asarray(curves, dtype=float)
    spent = np.zeros(c.shape[-1])
    out = np.zeros(c.shape[0], dtype=bool)
    for i in range(c.shape[0]):
        if filter_admits(spent, c[i], budgets):
            spent = accumulate(spent, c[i], first=not out.any())
            out[i] = True
    return out


def sgm_curve(sample_rate: float, noise_multiplier: float, steps: int, alphas) -> np.ndarray:
    """RDP of ``steps`` steps of the Poisson-subsampled Gaussian (Mironov–Talwar–Zhang 2019;
    docs/math.md §3.2; add/remove neighbours, as Lécuyer's §2.1), shape ``(len(alphas),)``."""
    a = check_orders(alphas)
    per_step = np.asarray(
        sgm.rdp_poisson(float(sample_rate), float(noise_multiplier), a), dtype=float
    ).reshape(a.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.where(per_step == 0, 0.0, per_step * int(steps))
    return np.nextafter(total, np.inf) if steps > 1 else total


class Accountant:
    """Running state of an adaptive interaction: the odometer, and optionally an (ε, δ) filter.

    ``add(curve)`` takes the next step's RDP curve over ``alphas`` and returns a dict with the
    step number, whether it ran (always True without a filter), the odometer bound (``epsilon``,
    ``alpha``, ``level``; Lécuyer Thm 2/Eq. 5) and the plain non-adaptive RDP bound
    (``epsilon_rdp``, by ``conversion``; valid only if the steps had been fixed in advance).
    With a filter, steps that do not run cost nothing and the odometer covers the steps that ran.
    A loop over steps is inherent (each decision depends on the past); each step is vectorised
    over the orders.
    """

    def __init__(
        self,
        alphas,
        delta: float,
        *,
        gamma_kind: str = "paper",
        conversion: str = "optimal",
        filter_epsilon: float | None = None,
        filter_rule: str = "union",
    ) -> None:
        self.alphas = check_orders(alphas)
        self.delta = check_delta(delta)
        if gamma_kind not in GAMMAS:
            raise InputError(f"--gamma: must be one of {', '.join(GAMMAS)}, got {gamma_kind!r}")
        if conversion not in conversions.METHODS:
            raise InputError(
                f"--conversion: must be one of {', '.join(conversions.METHODS)}, got {conversion!r}"
            )
        self.gamma_kind = gamma_kind
        self.conversion = conversion
        self._plain = PlainBound(self.alphas, self.delta, conversion)
        self.spent = np.zeros(self.alphas.size)
        self.steps = 0
        self.admitted = 0
        self.filter_epsilon = filter_epsilon
        self.budgets = None
        if filter_epsilon is not None:
            self.budgets = filter_budgets(self.alphas, filter_epsilon, self.delta, filter_rule, conversion)

    def add(self, curve) -> dict:
        """The next step (one RDP curve over the orders): its row (see the class docstring)."""
        return self.add_many(np.asarray(curve, dtype=float)[None, :])[0]

    def add_many(self, curves) -> list[dict]:
        """The next steps, rows of ``curves`` (n, m) in order: their rows, as :meth:`add` one by one.

        The admissions and running sums are a loop over the steps (each depends on the past); the
        bounds are vectorised over the steps, and the plain RDP ε is computed incrementally
        (:class:`~dpcalc.engine.adaptive.plain.PlainBound`: the same numbers, a fraction of the work)."""
        c = _check_curve(np.asarray(curves, dtype=float).reshape(-1, self.alphas.size), self.alphas)
        n = c.shape[0]
        sums = np.empty_like(c)
        ran = np.ones(n, dtype=bool)
        for i in range(n):
            if self.budgets is not None:
                ran[i] = bool(filter_admits(self.spent, c[i], self.budgets))
            if ran[i]:
                self.spent = accumulate(self.spent, c[i], first=self.admitted == 0)
                self.admitted += 1
            sums[i] = self.spent
        odo = odometer_bound(self.alphas, sums, self.delta, self.gamma_kind)
        plain = self._plain.rows(sums)
        last = self.alphas.size - 1
        rows = []
        for i in range(n):
            self.steps += 1
            value, level = float(odo.value[i]), float(odo.level[i])
            index = int(odo.index[i])
            rows.append(
                {
                    "step": self.steps,
                    "run": bool(ran[i]),
                    "epsilon": value,
                    "alpha": float(odo.alpha[i]),
                    "level": None if not np.isfinite(level) else int(level),
                    "epsilon_rdp": float(plain.value[i]),
                    "alpha_rdp": float(plain.alpha[i]),
                    "odometer_at_edge": bool(np.isfinite(value) and index in (0, last)),
                    "rdp_at_edge": bool(plain.at_edge[i]),
                }
            )
        return rows


def _check_curve(curve, alphas) -> np.ndarray:
    c = np.asarray(curve, dtype=float)
    if c.shape[-1:] != alphas.shape:
        raise InputError(f"rdp: expected {alphas.size} values (one per order), got shape {c.shape}")
    if np.any(np.isnan(c)):
        raise UncertifiedError("a step's RDP curve has NaN values; no bound can be certified")
    return np.maximum(c, 0.0)


def accumulate(spent, curve, *, first: bool = False) -> np.ndarray:
    """``spent + curve`` rounded up by one ulp (RDP composition, Mironov 2017 Prop. 1; docs/math.md §2.4).

    The one definition of a running sum, shared by streaming and the ledger so both give the same
    digits.  The first step is taken as is."""
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.asarray(spent, dtype=float) + np.asarray(curve, dtype=float)
        return total if first else np.nextafter(total, np.inf)


def running_sums(curves) -> np.ndarray:
    """Running RDP sums after each step, shape (n, m) like ``curves`` (a loop over the steps)."""
    c = np.asarray(curves, dtype=float)
    out = np.empty_like(c)
    spent = np.zeros(c.shape[-1])
    for i in range(c.shape[0]):
        spent = accumulate(spent, c[i], first=i == 0)
        out[i] = spent
    return out


def running_bounds(
    alphas,
    curves,
    delta: float,
    gamma_kind: str = "paper",
    conversion: str = "optimal",
    last_only: bool = False,
) -> dict:
    """Odometer and plain RDP bounds after each of the steps ``curves`` (n, m), vectorised over steps.

    Same numbers as feeding the curves one by one to :class:`Accountant` (no filter).  Returns a
    dict of arrays (``step``, ``epsilon``, ``alpha``, ``level``, ``epsilon_rdp``, ``alpha_rdp``,
    ``odometer_at_edge``, ``rdp_at_edge``); ``last_only`` evaluates the bounds after the last step only.
    """
    a = check_orders(alphas)
    c = _check_curve(np.asarray(curves, dtype=float).reshape(-1, a.size), a)
    sums = running_sums(c)
    steps = np.arange(1, c.shape[0] + 1)
    if last_only:
        sums, steps = sums[-1:], steps[-1:]
    odo = odometer_bound(a, sums, delta, gamma_kind)
    if last_only:
        plain = conversions.eps_from_curve(a, sums, delta, method=conversion)
    else:  # the same numbers, incrementally (the sums only grow)
        plain = PlainBound(a, check_delta(delta), conversion).rows(sums)
    return {
        "step": steps,
        "epsilon": odo.value,
        "alpha": odo.alpha,
        "level": odo.level,
        "epsilon_rdp": np.asarray(plain.value, dtype=float),
        "alpha_rdp": np.asarray(plain.alpha, dtype=float),
        "odometer_at_edge": np.isfinite(odo.value) & ((odo.index == 0) | (odo.index == a.size - 1)),
        "rdp_at_edge": np.asarray(plain.at_edge, dtype=bool),
    }
