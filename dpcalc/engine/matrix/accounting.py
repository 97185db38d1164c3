"""The privacy of a matrix-mechanism run C·G + Z, Z ~ N(0, σ²) per entry (docs/math.md §12.3).

* **Without amplification** (any participation pattern): the run is the Gaussian mechanism with sensitivity Δ
  of :mod:`dpcalc.engine.matrix.sensitivity` and noise σ, so ε(δ) is exact (Balle & Wang 2018, Thm 8;
  :func:`dpcalc.engine.mechanisms.gaussian_exact.eps_gaussian` at r = Δ/σ), and the smallest σ for a target ε
  exact too (:func:`~dpcalc.engine.mechanisms.gaussian_exact.sigma_gaussian`).
* **Amplified BandMF** (Choquette-Choo et al. 2023, "(Amplified) banded matrix factorization: a unified approach
  to private training", NeurIPS 2023, arXiv:2306.08153, Thm 4): for a b_C-banded lower-triangular C and cyclic
  Poisson sampling over b >= b_C partitions (the examples split into b partitions; step i uses partition
  i mod b, each of its examples with probability q), the run is dominated by DP-SGD with Poisson sampling at
  rate q, ⌈n/b⌉ steps and noise multiplier σ / max_j ‖C e_j‖ — answered by DP-SGD's rdp and pld accountants.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd import noise_calibration, pld_calibration
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.matrix.sensitivity import Participation
from dpcalc.engine.matrix.strategies import Strategy
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian, sigma_gaussian


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
    """The DP-SGD run that dominates it: (steps ⌈n/b⌉, the largest column norm)."""
    return math.ceil(s.n / p.b), float(np.max(s.column_norms()))


def bandmf_epsilon(s: Strategy, p: Participation, sigma, delta, accountant: str, eps_error=None):
    """ε of amplified BandMF: ``(upper, lower, estimate)`` arrays (lower and estimate nan for rdp)."""
    steps, norm = bandmf_run(s, p)
    sigma, delta = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(delta, float))
    eff = sigma / norm
    eff = np.where(eff * norm > sigma, np.nextafter(eff, 0.0), eff)  # never above σ / ‖C‖ (a larger ε)
    if accountant == "rdp":
        e = sgd.epsilon_rdp(p.q, eff, steps, delta, warn=False)
        nan = np.full(eff.shape, np.nan)
        return np.asarray(e.epsilon, float), nan, nan
    b = sgd_epsilon_pld(p.q, eff, steps, delta, eps_error)
    return np.asarray(b.upper, float), np.asarray(b.lower, float), np.asarray(b.estimate, float)


def bandmf_sigma(s: Strategy, p: Participation, target, delta, accountant: str, rtol: float, eps_error=None):
    """The smallest σ (within a factor 1 + rtol) whose amplified-BandMF ε meets the target, and that ε."""
    steps, norm = bandmf_run(s, p)
    target, delta = np.broadcast_arrays(np.asarray(target, float), np.asarray(delta, float))
    if accountant == "rdp":
        eff, e = noise_calibration.calibrate_noise(p.q, steps, delta, target, accountant="rdp", rtol=rtol)
        eps = np.asarray(e.epsilon, float)
    else:
        eff, (_, _, eps) = pld_calibration.calibrate_noise_pld(
            p.q, steps, delta, target, rtol=rtol, eps_error=eps_error
        )
    sigma = np.asarray(eff, float) * norm
    sigma = np.where(sigma / norm < eff, np.nextafter(sigma, np.inf), sigma)  # never below ‖C‖·σ_eff
    return sigma, np.asarray(eps, float)
