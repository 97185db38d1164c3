"""The privacy profile δ(ε) of each row of ``dpcalc matrix``'s questions in an attacker's terms (``--advantage``,
``--prior``, ``--fpr``, ``--target-advantage``, ``--target-tpr``: :mod:`.risk`; docs/math.md §10, §10.4, §12.6).
:func:`_row` builds a row's profile (:class:`_Row`) with its columns and note, by its accountant:

* ``gaussian`` — the Gaussian mechanism at μ = Δ/σ: μ-GDP, the exact trade-off curve Φ(Φ⁻¹(α) + μ).  It is the
  run itself (lower ends shown) where the participation is deterministic and Δ exact; under sampling it is the
  unamplified bound, and where Δ is an upper bound it bounds the run from above: the upper end only.
* ``bandmf-rdp`` — the Rényi curve of Thm 4's DP-SGD: its profile through its optimal trade-off curve
  (:func:`dpcalc.engine.conversion.rdp_profile.delta_from_rdp`), an upper bound.
* ``bandmf-pld`` — the run per partition (:func:`dpcalc.engine.matrix.accounting.bandmf_delta`): a certified PLD
  bracket of δ(ε), its upper end capped by Thm 4's; Thm 4's upper end alone beyond the per-partition limits.
* ``mmcc`` — MMCC's construction with the tail events at a probability fixed in advance
  (:func:`dpcalc.engine.matrix.mmcc.mmcc_profile`): an upper bound; lower ends only where its laws are the run's.
* ``mc`` — balls-in-bins by Monte Carlo (:func:`dpcalc.engine.matrix.balls_in_bins_mc.delta_mc`): the advantage
  and success hold with probability ``confidence``, each at its own ε; no trade-off curve (a minimum over many ε,
  which the confidence at each ε does not cover).
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc import execution
from dpcalc.commands.matrix import sampled
from dpcalc.engine import risk, tradeoff
from dpcalc.engine.conversion.rdp_profile import delta_from_rdp
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.matrix import balls_in_bins_mc as bb
from dpcalc.engine.matrix import bandmf, mmcc, mmcc_posterior
from dpcalc.engine.mechanisms import gaussian_exact
from dpcalc.engine.orders import DEFAULT_ORDERS

#: The relative allowance of a sensitivity's floating-point computation (sums of at most about 2·10⁷ non-negative
#: terms and a square root: at most 2·10⁷·2⁻⁵² ≈ 4·10⁻⁹ relative), taken off Δ for the lower end of an exact row.
SENSITIVITY_REL = 1e-7
#: The tail events of an mmcc profile (docs/math.md §12.6): 10⁻³ of the smallest δ the question reads (advantage,
#: success: two passes, the second at 10⁻³ of the first's bound), 10⁻⁴ of the smallest false-positive rate (--fpr),
#: 10⁻³ of the target (--target-advantage), never below 10⁻³⁰.
TAIL_SHARE = 1e-3
TAIL_SHARE_FPR = 1e-4
TAIL_FLOOR = 1e-30

#: What each row's risk is of (the row's note begins with it).
NOTES = {
    "gaussian": "the Gaussian mechanism at μ = Δ/σ: μ-GDP (Dong, Roth & Su 2022)",
    "bandmf-rdp": f"{acc.THM4_NOTE}: the Rényi curve's profile through its optimal trade-off curve: an upper bound",
    "mmcc": "MMCC (Choquette-Choo et al. 2024): the row laws under p̃ composed by a certified PLD, plus the tail "
    "events; the unamplified Gaussian's profile where smaller: an upper bound",
    "mc": "balls-in-bins by Monte Carlo (the pair of Choquette-Choo et al. 2025, the run's own in the worst case): "
    "each upper bound holds with probability confidence over the sampling, at its own ε (not certified: -q and "
    "budget checks skip it); the estimate is of the run",
}
#: Why the mc row has no trade-off curve.
MC_NO_TRADEOFF = (
    "the trade-off bound is a minimum over many ε, and a Monte Carlo bound holds with its confidence at each ε "
    "separately, not jointly (use --advantage or --prior)"
)


def _own_gaussian(part, sens) -> str | None:
    """Why the gaussian row's profile is not the run's own (None: it is — deterministic participation, Δ exact)."""
    if not sens.exact:
        return "Δ is an upper bound"
    sampling = (part.kind in ("cyclic", "poisson") and part.q not in (None, 1.0)) or (
        part.kind == "balls-in-bins" and part.b > 1
    )
    return "the unamplified bound of a sampled run" if sampling else None


class _Row:
    """One row's privacy profile: ``delta_at(eps) -> (lower, estimate, upper)`` (None where the row has no such
    end), ``tpr(fpr) -> (lower, estimate, upper, mu)`` (or a reason it has none: :attr:`no_tradeoff`), its
    columns and note."""

    no_tradeoff: str | None = None
    cfg: dict
    note: str

    def delta_at(self, eps):  # pragma: no cover - every row defines it
        raise NotImplementedError

    def tpr(self, fpr):  # pragma: no cover
        raise NotImplementedError

    def advantage(self) -> tuple[float, object]:
        """(the certified advantage, δ(0)'s bracket): what a calibration to an advantage searches on."""
        at0 = self.delta_at(np.zeros(1))
        return float(np.atleast_1d(at0[2])[0]), at0


def _none_if_nan(v):
    if v is None:
        return None
    v = np.asarray(v, float)
    return None if np.all(np.isnan(v)) else v


class _Gaussian(_Row):
    def __init__(self, sens, sigma, own):
        self.mu = float(np.nextafter(sens.value / sigma, math.inf))
        lo = sens.value * (1 - SENSITIVITY_REL) / sigma
        self.mu_lower = float(np.nextafter(lo, 0.0)) if own else None

    def delta_at(self, eps):
        lower = None if self.mu_lower is None else risk.gaussian_delta(eps, self.mu_lower)
        return lower, None, gaussian_exact.delta_gaussian(np.asarray(eps, float), self.mu)

    def tpr(self, fpr):
        lower = None if self.mu_lower is None else tradeoff.gaussian_tpr_lower(fpr, self.mu_lower)
        return lower, None, tradeoff.gaussian_tpr(fpr, self.mu), self.mu


class _BandmfRdp(_Row):
    def __init__(self, s, part, sigma):
        self.curve = acc.bandmf_rdp_curve(s, part, sigma)

    def delta_at(self, eps):
        orders = np.asarray(DEFAULT_ORDERS, float)
        return None, None, delta_from_rdp(orders, self.curve, np.asarray(eps, float))

    def tpr(self, fpr):
        return None, None, tradeoff.rdp_tpr(DEFAULT_ORDERS, self.curve, fpr), None


class _BandmfPld(_Row):
    def __init__(self, s, part, sigma, eps_error):
        self.s, self.part, self.sigma, self.eps_error = s, part, sigma, eps_error
        self.plan = bandmf.partition_plan(s, part)

    def delta_at(self, eps):
        lo, est, up = acc.bandmf_delta(self.s, self.part, self.sigma, eps, self.eps_error, self.plan)
        return _none_if_nan(lo), _none_if_nan(est), up

    def tpr(self, fpr):
        lo, est, hi = tradeoff.pld_tpr(
            fpr,
            lambda e: acc.bandmf_delta(self.s, self.part, self.sigma, e, self.eps_error, self.plan),
            lambda d: acc.bandmf_epsilon(self.s, self.part, self.sigma, d, "pld", self.eps_error)[0],
        )
        if self.plan.why is not None:  # Thm 4's DP-SGD: its lower end and estimate are not the run's
            lo = est = None
        return lo, est, hi, None


class _Mmcc(_Row):
    def __init__(self, s, part, sens, sigma, p):
        self.C = mmcc.causal_matrix(s)
        self.pairs = mmcc_posterior.find_pairs(self.C, part.q)
        self.q, self.sigma, self.sens, self.label, self.eps_error = (
            part.q,
            sigma,
            sens.value,
            s.label,
            p.eps_error,
        )
        self.last = None

    def profile(self, tail):
        self.last = mmcc.mmcc_profile(
            self.C,
            self.q,
            self.sigma,
            max(float(tail), TAIL_FLOOR),
            eps_error=self.eps_error,
            unamplified_sensitivity=self.sens,
            label=self.label,
            pairs=self.pairs,
        )
        return self.last

    def delta_at(self, eps):
        """Two passes (docs/math.md §12.6): the tail at 10⁻³ of the smallest unamplified-Gaussian δ asked, then
        at 10⁻³ of the smallest bound found; the smaller bound kept at each ε (each pass is a valid one)."""
        eps = np.atleast_1d(np.asarray(eps, float))
        first = self.profile(
            TAIL_SHARE * float(np.min(gaussian_exact.delta_gaussian(eps, self.sens / self.sigma)))
        )
        lo, est, up = first.delta(eps)
        tail = max(TAIL_SHARE * float(np.min(up)), TAIL_FLOOR)
        if first.pairs and tail < first.tail / 2:
            second = self.profile(tail)
            up = np.minimum(up, second.delta(eps)[2])
        return _none_if_nan(lo), _none_if_nan(est), up

    def tpr(self, fpr):
        prof = self.profile(TAIL_SHARE_FPR * float(np.min(fpr)))
        lo, est, hi = tradeoff.pld_tpr(fpr, prof.delta, prof.epsilon)
        if not prof.of_run:
            lo = est = None
        return lo, est, hi, None

    def tail_note(self) -> str:
        r = self.last
        if r is None or not r.pairs:
            return ""
        return f"; δ_tail = {r.tail:.3g} for {r.pairs} (row, step) pairs, largest p̃ {r.max_p_tilde:.4g}"


class _Mc(_Row):
    no_tradeoff = MC_NO_TRADEOFF

    def __init__(self, s, part, sigma, p):
        self.s, self.b, self.sigma = s, part.b, sigma
        self.samples = sampled.MC_SAMPLES if p.mc_samples is None else p.mc_samples
        self.confidence = sampled.MC_CONFIDENCE if p.confidence is None else p.confidence
        self.seed = p.seed or 0  # its samples planned by the caller, with the sweep's (risk._planned)

    def delta_at(self, eps):
        up, est = bb.delta_mc(
            self.s,
            self.b,
            self.sigma,
            eps,
            samples=self.samples,
            confidence=self.confidence,
            seed=self.seed,
            mapper=execution.mapper(),
        )
        return None, est, up


def _refusal(method, s, part) -> str | None:
    """Why ``method`` does not apply to the run (the ε rows' rules), or None."""
    if method.startswith("bandmf"):
        return acc.bandmf_refusal(s, part)
    if method == "mmcc":
        return sampled.mmcc_refusal(s, part, None)
    if method == "mc":
        return sampled.mc_refusal(s, part, None)
    return None


def _row(method, s, part, sens, sigma, p) -> _Row:
    """The profile of ``method``'s row at σ, with its columns and note."""
    steps, _ = acc.bandmf_run(s, part) if method.startswith("bandmf") else (None, None)
    cfg = {
        "strategy": s.label,
        "participation": part.label(),
        "steps": s.n,
        "sample_rate": part.q,
        "sensitivity_bound": sens.value,
        "sensitivity_exact": sens.exact,
        "dpsgd_steps": steps,
        "noise_multiplier": float(sigma),
    }
    if method == "gaussian":
        why = _own_gaussian(part, sens)
        row: _Row = _Gaussian(sens, float(sigma), why is None)
        note = NOTES["gaussian"] + (
            ", exact: the run itself (deterministic participation, Δ exact)"
            if why is None
            else f": an upper bound only ({why}: no lower end)"
        )
    elif method == "bandmf-rdp":
        row, note = _BandmfRdp(s, part, float(sigma)), NOTES["bandmf-rdp"]
    elif method == "bandmf-pld":
        row = _BandmfPld(s, part, float(sigma), p.eps_error)
        if row.plan.why is None:
            k, c = len(row.plan.parts), row.plan.components
            note = (
                "amplified BandMF per partition (docs/math.md §12.3): the certified PLD bracket of the worst "
                f"partition's profile ({k} partition{'s' * (k != 1)}, {c} noise multiplier{'s' * (c != 1)}), its "
                "upper end capped by Thm 4's DP-SGD"
            )
        else:
            note = (
                f"{acc.THM4_NOTE}: its certified PLD upper end only (no lower end or estimate: that bracket is of the "
                f"dominating DP-SGD, not the run; the run per partition not computed: {row.plan.why})"
            )
    elif method == "mmcc":
        row, note = _Mmcc(s, part, sens, float(sigma), p), NOTES["mmcc"]
    else:
        row = _Mc(s, part, float(sigma), p)
        note = NOTES["mc"]
        cfg.update(confidence=row.confidence, samples=row.samples)
    row.cfg, row.note = cfg, note
    return row


def _mmcc_note(row: _Row, note: str) -> str:
    """An mmcc row's note, completed once its profile is computed: the tail events, and whose bracket it is."""
    if not isinstance(row, _Mmcc) or row.last is None:
        return note
    if row.last.of_run:
        return (
            note
            + "; C has one entry per row and column and its laws are exact: the bracket is of the run itself"
        )
    return (
        note
        + row.tail_note()
        + "; no lower end or estimate: the PLD bracket is of MMCC's dominating construction, not the run"
    )
