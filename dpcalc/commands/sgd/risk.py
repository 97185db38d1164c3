"""``dpcalc sgd-epsilon --advantage`` / ``--prior P`` / ``--target-advantage A``: membership-inference risk of a
DP-SGD run (docs/math.md §10.4; rows as :mod:`dpcalc.commands.risk`): rdp (the run's Rényi curve), pld (a
certified bracket) and, with ``--method all``, exact at q = 1.  The samplers are those of ``--fpr``.

``--target-advantage A`` (the noise left out): the least noise multiplier whose certified advantage is at most
A, per accountant — a monotone search (:func:`dpcalc.engine.pld.search.boundary`) on the advantage the row
prints (the σ found computed and within A, σ/(1 + 1e-4) computed and above it; Kulynych et al. 2024,
arXiv:2407.02191, calibrate to such a risk instead of to ε) — with ε at ``--delta`` of that noise beside it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcalc.commands import noise_std
from dpcalc.commands.risk import NOTES, refused_rows, risk_result, risk_rows
from dpcalc.commands.sgd.group import refuse_group
from dpcalc.commands.sgd.question import eps_error_of, left_out
from dpcalc.commands.sgd.tradeoff import profile_configs, profile_setting
from dpcalc.engine import risk
from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.conversion.rdp_profile import delta_from_rdp
from dpcalc.engine.dpsgd.accounting import rdp_total
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.mechanisms import gaussian_exact
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError
from dpcalc.result import Result

#: The relative step of the noise search, and its range (as sgd-epsilon's --target-epsilon).
SIGMA_RTOL = 1e-4
SIGMA_RANGE = (1e-3, 1e6)
#: The most configurations one --target-advantage answers (each a search).
MAX_TARGET_CONFIGS = 16


def sgd_risk(params, priors, target=None, tpr_at=None) -> Result:
    """One row per configuration, accountant and prior; with ``target`` (an advantage) or ``tpr_at`` = (T, F)
    (a TPR T at false-positive rate F), the noise found."""
    question = (
        "--target-advantage"
        if target is not None
        else "--target-tpr"
        if tpr_at is not None
        else ("--prior" if priors is not None else "--advantage")
    )
    refuse_group(params, question)
    if params.target_epsilon is not None:
        raise InputError(f"{question} cannot be used with --target-epsilon (one target at a time)")
    sampler, neighbors, extra = profile_setting(params, question)
    plain = (sampler.name, neighbors) == ("poisson", "add-remove")
    accountant = params.accountant
    if accountant not in ("rdp", "pld", "all"):
        raise InputError(f"{question}: applies to --method rdp, pld or all, not {accountant}")
    has_pld = sampler.covers("pld")
    if accountant == "pld" and not has_pld:
        raise InputError(f"{question}: --method pld does not apply to --sampling {sampler.name}; use rdp")
    params = replace(params, eps_error=eps_error_of(params, has_pld and accountant in ("pld", "all")))
    pld_kw = sampler.pld_setting(neighbors, extra.get("dataset_size"), extra.get("max_batch_size"))
    rdp_kw = dict(sampling=sampler.name, neighbors=neighbors, **extra)
    names = [n for n in ("exact", "rdp", "pld") if accountant == "all" or n == accountant]

    def methods(q, sigma, steps, only=None):
        """(name, delta_at) of each method that applies to the configuration (``only``: that one alone, so
        that a search on one method computes no other's curve)."""
        wanted = names if only is None else [only]
        out = []
        if "exact" in wanted and q == 1.0 and plain:
            mu = math.sqrt(steps) / sigma

            def exact(e, mu=mu):  # Balle & Wang's profile: an upper bound rounded up, its formula below
                return risk.gaussian_delta(e, mu), None, gaussian_exact.delta_gaussian(e, mu)

            out.append(("exact", exact))
        if "rdp" in wanted:
            curve = rdp_total(q, sigma, steps, DEFAULT_ORDERS, **rdp_kw)
            orders = np.asarray(DEFAULT_ORDERS, float)
            out.append(("rdp", lambda e, c=curve: (None, None, delta_from_rdp(orders, c, e))))
        if "pld" in wanted and has_pld:

            def pld(e, c=(q, sigma, steps)):
                b = sgd_delta_pld(*c, e, params.eps_error, **pld_kw)
                if sampler.pld_upper_only:  # the models dominate the run: their ends are not its own
                    return None, None, b.upper
                return b.lower, b.estimate, b.upper

            out.append(("pld", pld))
        return out

    setting = f"sampling: {sampler.name}; neighbours: {neighbors}" + "".join(
        f"; {k}: {v:g}" for k, v in extra.items() if k in sampler.captioned_inputs
    )
    setting += noise_std.caption(params.noise_std)
    if target is not None or tpr_at is not None:
        goal = _Goal(target, tpr_at, rdp_kw, params.eps_error, pld_kw)
        return _calibrated(params, sampler, question, goal, methods, names, priors, setting, rdp_kw, pld_kw)
    rows = []
    for q, sigma, steps in profile_configs(params, sampler, question):
        cfg = {"sample_rate": q, "noise_multiplier": sigma, "steps": steps}
        for name, delta_at in methods(q, sigma, steps):
            note = None
            if name == "pld" and sampler.pld_upper_only:
                why = sampler.pld_upper_why
                note = f"{NOTES['pld']}: its upper end only (no lower end or estimate: {why})"
            rows += risk_rows(name, delta_at, priors, cfg, note)
    return risk_result(rows, "sgd-epsilon", setting, priors)


class _Goal:
    """What a calibration to risk holds below its target: the advantage (δ(0)), or the TPR at a false-positive
    rate F (the profile's trade-off bound, :mod:`dpcalc.engine.tradeoff`: exact, pld's certified upper end, or
    the Rényi curve's)."""

    def __init__(self, advantage, tpr_at, rdp_kw, eps_error, pld_kw):
        self.target = advantage if advantage is not None else tpr_at[0]
        self.fpr = None if tpr_at is None else tpr_at[1]
        self.what = "advantage" if tpr_at is None else f"TPR at FPR {self.fpr:g}"
        self.rdp_kw, self.eps_error, self.pld_kw = rdp_kw, eps_error, pld_kw

    def start(self, unknown, q, sigma, steps, lo, hi) -> float:
        """Where the search starts (it only steers): the value whose central-limit μ (Dong, Roth & Su 2022, Thm
        5.3: μ = q·√(T·(e^{1/σ²} − 1))) meets the target as μ-GDP."""
        if self.fpr is None:
            mu = 2.0 * float(special.ndtri((1.0 + self.target) / 2.0))
        else:
            mu = max(float(special.ndtri(self.target) - special.ndtri(self.fpr)), 1e-12)
        if unknown == "sigma":
            x = _clt_sigma(q, steps, mu)
        else:
            growth = math.expm1(min(1.0 / sigma**2, 700.0))
            x = (mu / q) ** 2 / growth if unknown == "steps" else mu / math.sqrt(steps * growth)
        return min(max(x, lo), hi)

    def value(self, name, delta_at, q, sigma, steps):
        """``(the certified value, what the row shows)``: δ(0)'s bracket, or the TPR bracket at F."""
        if self.fpr is None:
            at0 = delta_at(np.zeros(1))
            return float(np.atleast_1d(at0[2])[0]), at0
        from dpcalc.engine import tradeoff  # lazy: scipy, for the trade-off questions only

        f = np.array([self.fpr])
        if name == "exact":
            hi = tradeoff.gaussian_tpr(f, math.sqrt(steps) / sigma)
            lo = tradeoff.gaussian_tpr_lower(f, math.sqrt(steps) / sigma)
        elif name == "rdp":
            curve = rdp_total(q, sigma, steps, DEFAULT_ORDERS, **self.rdp_kw)
            lo, hi = None, tradeoff.rdp_tpr(DEFAULT_ORDERS, curve, f)
        else:
            lo, _, hi = tradeoff.pld_tpr(
                f,
                lambda e: sgd_delta_pld(q, sigma, steps, e, self.eps_error, **self.pld_kw),
                lambda d: sgd_epsilon_pld(q, sigma, steps, d, self.eps_error, **self.pld_kw).upper,
            )
        tpr = {"fpr": self.fpr, "tpr": float(hi[0]), "tpr_lower": None if lo is None else float(lo[0])}
        return float(hi[0]), tpr


#: What a calibration to risk finds: (the noun of its note, the search's direction and range).
_UNKNOWNS = {
    "sigma": ("the least noise multiplier", True, SIGMA_RANGE),
    "steps": ("the most steps", False, (1.0, 1e9)),
    "q": ("the largest sample rate", False, (1e-9, 1.0)),
}


def _unknown(params, question) -> str:
    """Which input the calibration finds: the one left out (exactly one of noise, length, rate)."""
    left = left_out(params)
    if len(left) != 1:
        raise InputError(
            f"{question}: leave out exactly one of --noise-multiplier, --steps (or --epochs) and --sample-rate "
            "(it is what is found)"
        )
    if left == ["q"] and params.dataset_size is not None:
        raise InputError(f"{question}: the sample rate is found as a rate: leave out --dataset-size too")
    return left[0]


def _configs(params, sampler, question, unknown) -> list[tuple]:
    """``(q, σ, steps)`` of every configuration, the unknown one None."""
    if unknown == "sigma":
        return [(q, None, t) for q, _, t in profile_configs(params, sampler, question, sigmas=[1.0])]
    if unknown == "q":
        if params.steps is None:
            raise InputError(f"{question}: with the sample rate left out, give --steps (not --epochs)")
        return [(None, float(s), int(t)) for s in params.sigma for t in params.steps]
    return [
        (q, s, None)
        for q, s, _ in profile_configs(params, sampler, question, sigmas=params.sigma, length=False)
    ]


def _calibrated(params, sampler, question, goal, methods, names, priors, setting, rdp_kw, pld_kw) -> Result:
    """``--target-advantage`` / ``--target-tpr``: per configuration and accountant, the least noise multiplier,
    the most steps or the largest sample rate (whichever was left out) whose certified risk is at most the
    target: a monotone search (the risk is non-increasing in σ, non-decreasing in steps and rate)."""
    target = goal.target
    unknown = _unknown(params, question)
    if params.delta is None or len(params.delta) != 1:
        raise InputError(f"{question} needs one --delta (ε of the answer is shown at it)")
    delta = float(params.delta[0])
    configs = _configs(params, sampler, question, unknown)
    if len(configs) > MAX_TARGET_CONFIGS:
        raise InputError(
            f"{question}: {len(configs)} configurations, above the limit of {MAX_TARGET_CONFIGS}"
        )
    what, ok_above, (lo, hi) = _UNKNOWNS[unknown]
    rows = []
    for q0, s0, t0 in configs:

        def fill(x, q0=q0, s0=s0, t0=t0):
            return (
                x if unknown == "q" else q0,
                x if unknown == "sigma" else s0,
                int(round(x)) if unknown == "steps" else t0,
            )

        for name in names:
            if name == "exact" and (unknown == "q" or q0 != 1.0):
                continue

            def risk_of(x, name=name, fill=fill):
                q, sigma, steps = fill(x)
                got = dict(methods(q, sigma, steps, name)).get(name)
                if got is None:
                    return math.inf, None
                return goal.value(name, got, q, sigma, steps)  # the value, and what the row shows (info)

            found = boundary(
                risk_of,
                target,
                goal.start(unknown, q0, s0, t0, lo, hi),
                ok_above=ok_above,
                lo=lo,
                hi=hi,
                integer=unknown == "steps",
                rtol=SIGMA_RTOL,
                first_step=1.05,
            )
            if found.x is None or not math.isfinite(found.x):
                none = math.inf if unknown == "sigma" else None  # no σ meets it; no length or rate does
                cfg = {
                    "sample_rate": none if unknown == "q" else q0,
                    "noise_multiplier": none if unknown == "sigma" else s0,
                    "steps": none if unknown == "steps" else t0,
                    "delta": delta,
                }
                reason = f"no value in [{lo:g}, {hi:g}] has {goal.what} ≤ {target:g}"
                rows += refused_rows(name, priors, reason, cfg)
                continue
            q, sigma, steps = fill(float(found.x))
            # without priors an advantage row reads δ(0) alone: the search's own bracket at the answer
            plain = priors is None and goal.fpr is None
            delta_at = (lambda e, b=found.info: b) if plain else dict(methods(q, sigma, steps, name))[name]
            extra = found.info if goal.fpr is not None else {}
            if name == "pld":
                eps = float(sgd_epsilon_pld(q, sigma, steps, delta, params.eps_error, **pld_kw).upper)
            elif name == "rdp":
                curve = rdp_total(q, sigma, steps, DEFAULT_ORDERS, **rdp_kw)
                conv = params.conversion or "optimal"
                eps = float(
                    np.asarray(eps_of_curve(np.asarray(DEFAULT_ORDERS, float), curve, delta, conv).value)
                )
            else:
                eps = float(gaussian_exact.eps_gaussian(delta, math.sqrt(steps) / sigma))
            note = f"{what} with {goal.what} ≤ {target:g}; epsilon: its ε at δ = {delta:g}"
            if name == "pld" and sampler.pld_upper_only:
                note += f" (no lower end or estimate: {sampler.pld_upper_why})"
            cfg = {"sample_rate": q, "noise_multiplier": sigma, "steps": steps, "delta": delta}
            rows += risk_rows(name, delta_at, priors, dict(cfg, epsilon=eps, **extra), note)
    found_column = {"sigma": "noise_multiplier", "steps": "steps", "q": "sample_rate"}[unknown]
    return risk_result(
        rows, "sgd-epsilon", setting + f"; target {goal.what} {target:g}", priors, found_column
    )


def _clt_sigma(q, steps, mu) -> float:
    """The σ whose central-limit μ (Dong, Roth & Su 2022, Thm 5.3: μ = q·√(T·(e^{1/σ²} − 1))) is ``mu``: where
    a search for a risk target starts (it only steers)."""
    x = (mu / q) ** 2 / steps
    sigma = 1.0 / math.sqrt(math.log1p(x)) if x > 0 else SIGMA_RANGE[1]
    return min(max(sigma, SIGMA_RANGE[0]), SIGMA_RANGE[1])
