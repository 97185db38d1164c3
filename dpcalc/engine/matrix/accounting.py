"""The privacy of a matrix-mechanism run C·G + Z, Z ~ N(0, σ²) per entry (docs/math.md §12.3).

* **Without amplification** (any participation pattern): the run is the Gaussian mechanism with sensitivity Δ
  of :mod:`dpcalc.engine.matrix.sensitivity` and noise σ, so ε(δ) is exact (Balle & Wang 2018, Thm 8;
  :func:`dpcalc.engine.mechanisms.gaussian_exact.eps_gaussian` at r = Δ/σ), and the smallest σ for a target ε
  exact too (:func:`~dpcalc.engine.mechanisms.gaussian_exact.sigma_gaussian`).
* **Amplified BandMF** (Choquette-Choo et al. 2023, "(Amplified) banded matrix factorization: a unified approach
  to private training", NeurIPS 2023, arXiv:2306.08153, Thm 4): for a b_C-banded lower-triangular C and cyclic
  Poisson sampling over b >= b_C partitions (the examples split into b partitions; step i uses partition
  i mod b, each of its examples with probability q), the run is dominated by DP-SGD with Poisson sampling at
  rate q, ⌈n/b⌉ steps and noise multiplier σ / max_j ‖C e_j‖ — the rdp row (DP-SGD's rdp accountant).
* **The run itself, per partition** (the pld row; :mod:`dpcalc.engine.matrix.bandmf`): under the same conditions
  an example of partition k is, exactly, the composition of Poisson-subsampled Gaussians at σ / ‖C e_j‖ over its
  steps j; the certified PLD bracket of the worst partition, its upper end capped by Thm 4's DP-SGD (both
  certified).  Beyond :data:`~dpcalc.engine.matrix.bandmf.MAX_COMPONENTS` noise multipliers: Thm 4's upper end
  alone, with no lower end or estimate (its bracket is of the dominating DP-SGD, not of the run).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd import noise_calibration, pld_calibration
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.matrix import bandmf
from dpcalc.engine.matrix.sensitivity import Participation
from dpcalc.engine.matrix.strategies import Strategy
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian, sigma_gaussian
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.pld.bracket import Bracket
from dpcalc.engine.pld.search import _answer, _held, _search
from dpcalc.errors import InputError


def unamplified_epsilon(sens: float, sigma, delta) -> np.ndarray:
    """ε(δ) of the Gaussian mechanism with sensitivity ``sens`` and noise σ (exact, rounded up)."""
    sigma, delta = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(delta, float))
    return np.asarray(eps_gaussian(delta, sens / sigma), dtype=float)


def unamplified_sigma(sens: float, target, delta) -> np.ndarray:
    """The smallest σ with ε(δ) <= target for sensitivity ``sens`` (exact, rounded up)."""
    return np.asarray(sigma_gaussian(target, delta, sens), dtype=float)


def bandmf_refusal(s: Strategy, p: Participation) -> str | None:
    """Why amplified BandMF does not apply, or None."""
    if p.kind != "cyclic" or p.q is None:
        return "amplified BandMF needs cyclic Poisson sampling (--participation cyclic-poisson:b=B,q=Q)"
    if s.bands is None:
        return f"amplified BandMF needs a banded lower-triangular C; {s.label} is not banded"
    if s.bands > p.b:
        return f"amplified BandMF needs b >= the bands of C: {s.label} has {s.bands} bands, b = {p.b}"
    return None


def bandmf_run(s: Strategy, p: Participation) -> tuple[int, float]:
    """The DP-SGD run that dominates it (Thm 4): (steps ⌈n/b⌉, an upper bound on the largest column norm,
    exact where the norm is a double: :func:`dpcalc.engine.matrix.bandmf.largest_norm`)."""
    return math.ceil(s.n / p.b), bandmf.largest_norm(s)


def _thm4_upper(s: Strategy, p: Participation, sigma: float, delta: float, eps_error) -> tuple:
    """(lower, estimate, upper) of Thm 4's DP-SGD at σ / max norm rounded down (its upper end bounds the run;
    its lower end bounds the DP-SGD, not the run)."""
    steps, norm = bandmf_run(s, p)
    b = sgd_epsilon_pld(p.q, bandmf.multiplier_down(sigma, norm), steps, delta, eps_error)
    return float(b.lower), float(b.estimate), float(b.upper)


def _pld_note(plan: bandmf.Plan) -> str:
    if plan.why is not None:
        return (
            f"{THM4_NOTE}; the PLD bracket is of that dominating DP-SGD, not the run: no lower end or estimate "
            f"(the run per partition not computed: {plan.why})"
        )
    k, c = len(plan.parts), plan.components
    return (
        "amplified BandMF per partition (docs/math.md §12.3): a partition's columns do not overlap, so the run is "
        "the composition of Poisson-subsampled Gaussians at σ/‖C e_j‖ over its steps; certified PLD bracket of "
        f"the worst partition ({k} partition{'s' * (k != 1)}, {c} noise multiplier{'s' * (c != 1)} composed), "
        "epsilon capped by Thm 4's DP-SGD (Choquette-Choo et al. 2023: rate q, ⌈n/b⌉ steps, σ/max column norm)"
    )


#: What Thm 4 says (the rdp row, and the pld row's fallback).
THM4_NOTE = (
    "amplified BandMF (Choquette-Choo et al. 2023, Thm 4): DP-SGD at rate q, ⌈n/b⌉ steps, σ/max column norm"
)


def _pld_point(s, p, plan, sigma: float, delta: float, eps_error) -> tuple:
    """(upper, lower, estimate) of the bandmf-pld row at one (σ, δ): the per-partition bracket, its upper end
    capped by Thm 4's (both certified); Thm 4's upper end alone (no lower end) where the plan was not computed."""
    steps, _ = bandmf_run(s, p)
    if plan.why is not None:
        return _thm4_upper(s, p, sigma, delta, eps_error)[2], math.nan, math.nan
    lo, est, up = bandmf.partition_epsilon(plan, p.q, sigma, delta, eps_error)
    if not plan.is_thm4(steps):  # else the one partition kept is Thm 4's DP-SGD: the same computation
        up = min(up, _thm4_upper(s, p, sigma, delta, eps_error)[2])
        est = min(est, up)
    return up, lo, est


def bandmf_epsilon(s: Strategy, p: Participation, sigma, delta, accountant: str, eps_error=None):
    """ε of amplified BandMF: ``(upper, lower, estimate, notes)`` (arrays, lower and estimate nan where there is
    no bracket of the run: rdp, or the per-partition composition beyond its limits).  rdp: Thm 4's DP-SGD;
    pld: the run per partition (:mod:`dpcalc.engine.matrix.bandmf`), its upper end capped by Thm 4's."""
    steps, norm = bandmf_run(s, p)
    sigma, delta = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(delta, float))
    if accountant == "rdp":
        eff = np.vectorize(bandmf.multiplier_down, otypes=[float])(sigma, norm)
        e = sgd.epsilon_rdp(p.q, eff, steps, delta, warn=False)
        nan = np.full(eff.shape, np.nan)
        return np.asarray(e.epsilon, float), nan, nan, [f"{THM4_NOTE}; rdp accountant"] * eff.size
    plan = bandmf.partition_plan(s, p)
    out = np.empty((3, sigma.size))
    cache: dict = {}
    for i, (sg, d) in enumerate(zip(sigma.ravel().tolist(), delta.ravel().tolist())):
        if (sg, d) not in cache:
            cache[(sg, d)] = _pld_point(s, p, plan, sg, d, eps_error)
        out[:, i] = cache[(sg, d)]
    up, lo, est = (o.reshape(sigma.shape) for o in out)
    return up, lo, est, [_pld_note(plan)] * sigma.size


def bandmf_rdp_curve(s: Strategy, p: Participation, sigma: float) -> np.ndarray:
    """The Rényi curve (at :data:`~dpcalc.engine.orders.DEFAULT_ORDERS`) of the bandmf-rdp row at σ: Thm 4's
    DP-SGD, the multiplier σ / max norm rounded down (the curve its ε converts)."""
    steps, norm = bandmf_run(s, p)
    return np.asarray(
        sgd.rdp_total(p.q, bandmf.multiplier_down(float(sigma), norm), steps, DEFAULT_ORDERS), float
    )


def bandmf_delta(s: Strategy, p: Participation, sigma: float, eps, eps_error=None, plan=None) -> tuple:
    """The privacy profile of the bandmf-pld row at σ: ``(lower, estimate, upper)`` arrays of δ at each ε of
    ``eps`` — the run per partition (:func:`dpcalc.engine.matrix.bandmf.partition_delta`), its upper end capped
    by Thm 4's DP-SGD (both certified: their minimum at each ε is); Thm 4's upper end alone (lower end and
    estimate nan: that bracket is of the dominating DP-SGD, not the run) where the per-partition composition is
    not computed.  ``plan``: :func:`~dpcalc.engine.matrix.bandmf.partition_plan` if already known."""
    steps, norm = bandmf_run(s, p)
    eps = np.atleast_1d(np.asarray(eps, float))
    plan = bandmf.partition_plan(s, p) if plan is None else plan

    def thm4():
        b = sgd_delta_pld(p.q, bandmf.multiplier_down(float(sigma), norm), steps, eps, eps_error)
        return np.asarray(b.upper, float).reshape(eps.shape)

    if plan.why is not None:
        nan = np.full(eps.shape, np.nan)
        return nan, nan.copy(), thm4()
    lo, est, up = bandmf.partition_delta(plan, p.q, float(sigma), eps, eps_error)
    if not plan.is_thm4(steps):  # else the one partition kept is Thm 4's DP-SGD: the same computation
        up = np.minimum(up, thm4())
        est = np.minimum(est, up)
    return lo, est, up


def bandmf_sigma(s: Strategy, p: Participation, target, delta, accountant: str, rtol: float, eps_error=None):
    """The smallest σ (within a factor 1 + rtol) whose amplified-BandMF ε meets the target: ``(σ, upper,
    lower, estimate, notes)`` at it.  rdp: Thm 4's DP-SGD calibrated.  pld: Thm 4's calibration first (its σ
    meets the target); where the per-partition composition is computed and is not Thm 4's DP-SGD itself, a
    monotone search (:func:`dpcalc.engine.pld.search.boundary`) of the row's own ε (the smaller of the two upper
    ends) below that σ: the answer's ε computed within the target, σ/(1 + rtol) computed above it."""
    steps, norm = bandmf_run(s, p)
    target, delta = np.broadcast_arrays(np.asarray(target, float), np.asarray(delta, float))
    if accountant == "rdp":
        eff, e = noise_calibration.calibrate_noise(p.q, steps, delta, target, accountant="rdp", rtol=rtol)
        sigma = np.vectorize(_sigma_at_least, otypes=[float])(eff, norm)
        nan = np.full(sigma.shape, np.nan)
        return sigma, np.asarray(e.epsilon, float), nan, nan, [f"{THM4_NOTE}; rdp accountant"] * sigma.size
    eff, _ = pld_calibration.calibrate_noise_pld(p.q, steps, delta, target, rtol=rtol, eps_error=eps_error)
    sigma0 = np.vectorize(_sigma_at_least, otypes=[float])(eff, norm)
    plan = bandmf.partition_plan(s, p)
    out = np.empty((4, sigma0.size))
    notes = []
    for i, (s0, t, d) in enumerate(
        zip(sigma0.ravel().tolist(), target.ravel().tolist(), delta.ravel().tolist())
    ):
        note = _pld_note(plan)
        if not math.isfinite(s0):
            out[:, i] = (s0, math.inf, math.nan, math.nan)
        elif plan.why is not None or plan.is_thm4(steps):
            out[:, i] = (s0, *_pld_point(s, p, plan, s0, d, eps_error))
            note += "; noise_multiplier: Thm 4's DP-SGD calibrated"
        elif (found := _search_sigma(s, p, plan, s0, t, d, rtol, eps_error))[0] is None:
            out[:, i] = (s0, *_pld_point(s, p, plan, s0, d, eps_error))
            note += "; noise_multiplier: Thm 4's DP-SGD calibrated (no smaller σ met the target)"
        else:
            sg, row, evaluations, refused = found
            out[:, i] = (sg, *row)
            how = (
                "refused by the PLD (its loss beyond what it holds)"
                if refused
                else "computed and above the target"
            )
            note += (
                f"; noise_multiplier: the smallest found by a monotone search of this row's ε ({evaluations} "
                f"evaluations, from Thm 4's σ {s0:.6g} down; σ/(1 + {rtol:g}) {how})"
            )
        notes.append(note)
    sigma, up, lo, est = (o.reshape(sigma0.shape) for o in out)
    return sigma, up, lo, est, notes


def _sigma_at_least(eff: float, norm: float) -> float:
    """The smallest double σ with σ / norm >= eff exactly (so the multiplier rounded down is at least eff)."""
    sigma = eff * norm
    if not math.isfinite(sigma):
        return sigma
    while Fraction(sigma) < Fraction(eff) * Fraction(norm):
        sigma = float(np.nextafter(sigma, math.inf))
    return sigma


def _search_sigma(s, p, plan, sigma0: float, target: float, delta: float, rtol: float, eps_error):
    """``(σ, (upper, lower, estimate), evaluations, neighbour refused)``: the least σ in (0, σ0] whose
    bandmf-pld ε (upper end) meets the target, by the coarse-then-fine monotone search of DP-SGD's own
    calibration (:func:`dpcalc.engine.pld.search._search`; every answer decided at the requested accuracy; a
    computation the PLD refuses counts as a miss; the warnings of the answer's computation alone are given);
    σ None where even σ0 recomputed misses (Thm 4's calibration met it within its own bracket).  The run's ε is
    at least that of ⌈n/b⌉ steps at σ / (the smallest column norm), so no σ below σ0 times the ratio of the
    smallest to the largest norm meets it: the range's floor, halved."""
    refused: list = []
    evaluations = [0]

    def row(sg: float, err) -> Bracket:
        evaluations[0] += 1
        try:
            lo, est, up = bandmf.partition_epsilon(plan, p.q, sg, delta, err)
            if up > target:  # Thm 4's may still meet it (both are upper ends): the row reports the smaller
                up = min(up, _thm4_upper(s, p, sg, delta, err)[2])
                est = min(est, up)
        except InputError:
            refused.append(sg)
            raise
        return Bracket(lo, est, up)

    norms = s.column_norms()
    floor = sigma0 * float(np.min(norms)) / float(np.max(norms)) / 2
    # a start: Thm 4's σ scaled by the root-mean-square column norm of the heaviest partition
    heavy = max(sum(c * hi * hi for _, hi, c in part) for part in plan.parts)
    steps, _ = bandmf_run(s, p)
    start = min(sigma0, max(floor, sigma0 * math.sqrt(heavy / steps) / plan.largest_hi))
    found = _search(
        lambda err: lambda sg: _held(lambda: row(sg, err)),
        eps_error,
        target,
        start,
        ok_above=True,
        lo=floor,
        hi=sigma0,
        rtol=rtol,
    )
    if found.x is None:
        return None, None, evaluations[0], False
    x, lo, est, up = _answer(found.x, found)
    # the row's ε as --noise-multiplier gives it (:func:`_pld_point`): the smaller of the two upper ends
    up = min(up, _thm4_upper(s, p, x, delta, eps_error)[2])
    neighbour_refused = any(x / (1 + rtol) * (1 - 1e-9) <= r < x for r in refused)
    return x, (up, lo, min(est, up)), evaluations[0], neighbour_refused
