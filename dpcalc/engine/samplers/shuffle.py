"""Shuffled fixed-size batches (``--sampling shuffle``): a certified upper bound and a lower bound on ε
(docs/math.md §3.6); the sampler answers with a row of its own, not with a Rényi curve or a PLD.

Each epoch splits a random permutation of the N examples into ``m = ⌊N/B⌋`` batches of B (the rest is
dropped), so an example is in at most one step of each epoch.  Under replace-one neighbours (the
clipped sum changes by at most 2C) and noise σC per step:

* **upper bound** (no amplification): given the permutation, the steps without the example are the same
  on both datasets and the one step with it is a Gaussian mechanism with ``r = 2/σ``; ``k`` epochs
  compose adaptively to a Gaussian with ``r = 2√k/σ`` (Dong, Roth & Su 2022, Cor. 3.3), whose exact
  profile is Balle & Wang 2018, Thm 8 (:mod:`dpcalc.engine.mechanisms.gaussian_exact`); averaging over
  permutations keeps the bound.  ``k = ⌈T/m⌉`` epochs are touched by T steps.
* **lower bound** (Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang 2024, ICML, "How private are
  DP-SGD implementations?", arXiv:2403.17673, §4, the shuffled batch sampler): with every other example's
  gradient −1 and the example +1 versus −1, each whole epoch releases ``P = (1/m) Σ_i N(μ e_i, I_m)`` versus
  ``Q = N(0, I_m)``, μ = 2/σ (after centring and scaling by σ).  Any event S gives
  ``δ(ε) >= P(S) − e^ε Q(S)``; S = "the per-epoch maximum exceeds τ in at least j of the k₀ = ⌊T/m⌋
  whole epochs" has the binomial probabilities of ``p₁ = 1 − Φ(τ−μ)Φ(τ)^{m−1}`` and
  ``p₀ = 1 − Φ(τ)^m``, so ``ε >= log((P(S) − δ)/Q(S))``, maximised over τ and j.  It is a lower bound on
  the ε of the run that releases every step's noisy gradient (the model after each step).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine._special import lazy_special as special
from dpcalc.engine._special import lazy_stats as stats
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian
from dpcalc.engine.samplers.base import Sampler, steps_per_epoch
from dpcalc.errors import InputError

__all__ = ["SAMPLER", "epsilon_shuffle_lower", "epsilon_shuffle_upper", "steps_per_epoch"]

#: Grid of thresholds τ and of epoch counts j searched by the lower bound.
_TAUS = 600
_JS = 120
#: Relative margin taken off the lower bound (floating-point error of the binomial tails, ~1e-14).
_MARGIN = 1e-9


def epsilon_shuffle_upper(sigma, steps, delta, m) -> tuple[np.ndarray, np.ndarray]:
    """(ε upper bound, epochs touched k): the exact profile of k Gaussians with r = 2/σ each."""
    sigma, steps, delta, m = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (sigma, steps, delta, m))
    )
    k = np.ceil(steps / m)
    pos = delta > 0  # δ = 0: the Gaussian's privacy loss is unbounded, ε = ∞ (docs/math.md §2.7)
    eps = np.full(k.shape, np.inf)
    if np.any(pos):
        eps[pos] = np.asarray(eps_gaussian(delta[pos], 2.0 * np.sqrt(k[pos]) / sigma[pos]), dtype=float)
    return eps, k


def _lower_one(mu: float, m: int, k0: int, delta: float) -> float:
    if k0 < 1:
        return 0.0
    span = np.sqrt(2.0 * np.log(m + 1.0)) + 9.0
    tau = np.linspace(-3.0, mu + span, _TAUS)
    lphi = special.log_ndtr(tau)
    p1 = -np.expm1(special.log_ndtr(tau - mu) + (m - 1) * lphi)
    p0 = -np.expm1(m * lphi)
    js = np.unique(np.round(np.geomspace(1, k0, min(k0, _JS))).astype(int))
    ps = stats.binom.sf(js[None, :] - 1, k0, p1[:, None])
    qs = stats.binom.sf(js[None, :] - 1, k0, p0[:, None])
    ok = (ps >= 2.0 * delta) & (qs > 0)  # P(S) − δ keeps its relative accuracy
    if not np.any(ok):
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(ok, np.log(ps - delta) - np.log(qs), -np.inf)
    best = float(np.max(e))
    return max(0.0, best - _MARGIN * (1.0 + abs(best)))


def epsilon_shuffle_lower(sigma, steps, delta, m) -> np.ndarray:
    """The Chua et al. 2024 lower bound on ε of ⌊T/m⌋ whole shuffled epochs (one value per broadcast row;
    a loop over distinct configurations, each vectorised over the thresholds)."""
    sigma, steps, delta, m = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (sigma, steps, delta, m))
    )
    out = np.empty(sigma.shape)
    cache = {}
    for i in np.ndindex(sigma.shape):
        key = (float(sigma[i]), int(m[i]), int(steps[i] // m[i]), float(delta[i]))
        if key not in cache:
            cache[key] = _lower_one(2.0 / key[0], key[1], key[2], key[3]) if key[3] > 0 else np.inf
        out[i] = cache[key]
    return out


class Shuffle(Sampler):
    name = "shuffle"
    order = 40
    relations = ("replace-one",)
    refusal = (
        "--sampling shuffle with --neighbors add-remove: no theorem covers it here (the batches of a "
        "permutation are analysed under replace-one); use --neighbors replace-one"
    )
    #: its own row (the accountant "shuffle"), nothing else
    accountants = {"shuffle": ("replace-one",)}
    tuning_runs = False
    whole_epochs = True
    profile_relations = ()
    caption = (
        "; shuffle: epsilon is a certified upper bound (no amplification), epsilon_lower a LOWER bound "
        "(Chua et al. 2024): the true ε lies between them; publish epsilon; an epoch is floor(N/B) steps "
        "(floor(1/q) without --dataset-size), steps = ceil(epochs × that)"
    )
    #: why ``--rdp-curve`` has nothing to print
    no_curve = "its upper bound composes one Gaussian per epoch exactly"
    notes = {
        ("shuffle", "replace-one"): (
            "replace-one; epsilon: upper bound, k = ceil(steps/floor(N/B)) Gaussians with r = 2/σ composed "
            "exactly (Balle-Wang 2018 Thm 8), no amplification; epsilon_lower: LOWER bound of Chua et al. 2024 "
            "(arXiv:2403.17673) for the shuffled run releasing every step"
        ),
    }

    def check_inputs(self, dataset_size=None, max_batch_size=None, tuning=None) -> None:
        """Nothing beyond the common checks: its refusal of ``--tuning-runs`` comes with its own row's
        (:meth:`own_accountants`), in the order the command line has always reported them."""

    def own_accountants(self, accountant: str, neighbors: str, solve, tuning) -> list[str]:
        """Its own row, refusing what it does not answer."""
        self.check_relation(neighbors)
        if accountant not in ("rdp", "all"):
            raise InputError(
                f"--method {accountant} does not apply to --sampling shuffle: its row is the exact composition "
                "of Gaussians (leave --method out)"
            )
        if solve is not None:
            raise InputError(
                "--target-epsilon is not supported with --sampling shuffle yet: give every option"
            )
        if tuning is not None:
            raise InputError("--tuning-runs is not supported with --sampling shuffle")
        return ["shuffle"]

    def own_rows(self, sigma, steps, delta, q, dataset_size=None, batch_size=None):
        """``(upper, lower)`` bounds on ε of each row (flat arrays; :func:`epsilon_shuffle_upper`,
        :func:`epsilon_shuffle_lower`)."""
        m = steps_per_epoch(q, dataset_size, batch_size)
        upper, _ = epsilon_shuffle_upper(sigma, steps, delta, m)
        return upper, epsilon_shuffle_lower(sigma, steps, delta, m)


SAMPLER = Shuffle()
