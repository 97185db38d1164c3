"""MMCC: amplification by Poisson sampling for the matrix mechanism C·G + Z (docs/math.md §12.4).

Choquette-Choo, Ganesh, Steinke & Thakurta 2024, "Privacy amplification for matrix mechanisms", ICLR 2024,
arXiv:2310.15526.  Each example takes part in every step independently with probability p (Poisson sampling
over the whole run); C is non-negative with its rows in release order (lower triangular; the tree's dyadic
nodes sorted by their end, shorter first).  The steps, each proved in docs/math.md §12.4:

1. **Dominating pair** (Thm 4.8, with Cor. 4.7 reducing vectors to scalars): the run is dominated by
   ``P = Σ_b p^|b| (1−p)^{n−|b|} N(C b, σ² I)`` against ``Q = N(0, σ² I)``, b ∈ {0, 1}ⁿ the steps the
   differing example takes part in.
2. **Conditional composition** (Thm 3.1): if, outside an event of probability at most δ_tail under the
   first distribution, every row's conditional pair given the rows before it is dominated by a fixed pair,
   then ``H_{e^ε}`` of the run is at most that of the product of the fixed pairs plus δ_tail, each direction.
3. **Posterior bound** (:mod:`dpcalc.engine.matrix.mmcc_posterior`): for C >= 0 the posterior odds of b_j = 1
   given the rows before row i are at most the prior odds times ``exp((T_ij − s_ij²/2)/σ²)`` with ``T_ij =
   ⟨θ_{<i}, C_{<i,j}⟩`` and ``s_ij = ‖C_{<i,j}‖``, whatever else is revealed; on the event ``T_ij <= τ_ij``,
   with τ_ij a certified upper quantile of T_ij under P at level δ_tail / (number of pairs), b_j is then at
   most a Bernoulli(p̃_ij).  Pairs with s_ij = 0 (step j not yet in any earlier row) need no event: p̃ = p.
4. **Row laws** (:mod:`dpcalc.engine.matrix.mmcc_row_laws`): by sequential coupling row i's sensitivity
   ``Σ_j C_ij b_j`` given the earlier rows is stochastically at most ``Σ_j C_ij B_j``, B_j ~ Bernoulli(p̃_ij)
   independent, and the mixture of Gaussians is monotone in the stochastic order of its sensitivity in both
   directions (Lemma B.4): so any stochastically larger law — weights rounded up to a grid, mass moved up, the
   upper envelope of several rows' laws — dominates too.
5. **Composition**: the certified PLD of the row mixtures (:func:`dpcalc.engine.composition.pld.compose_pld`,
   the ``mixture-gaussian`` kind, identical rows composed by count, both directions), ε taken at δ − δ_tail.

δ_tail is :data:`TAIL_FRACTION` of δ where some pair needs an event, else 0.  The pre-declared alternative
δ_tail = 0 makes every p̃ = 1, the unamplified Gaussian mechanism with sensitivity ‖C·1‖₂, whose ε is exact;
the smaller of the two is reported (each is a valid bound, so their minimum is).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.matrix.mmcc_posterior import (
    MAX_CELLS,
    Pairs,
    find_pairs,
    p_tilde_matrix,
    posterior_bounds,
    tail_work,
)
from dpcalc.engine.matrix.mmcc_row_laws import row_laws, row_work
from dpcalc.engine.matrix.strategies import MAX_DENSE_STEPS, Strategy
from dpcalc.engine.mechanisms.gaussian_exact import delta_gaussian, eps_gaussian
from dpcalc.errors import InputError

#: The share of δ spent on the tail events (where some pair needs one).
TAIL_FRACTION = 0.5
#: The most elementary operations of the tail and row dynamic programs (about 10 s).
MAX_WORK = 1.2e9


def causal_matrix(s: Strategy) -> np.ndarray:
    """C with its rows in release order: the Toeplitz strategies and a file's C as they are (lower
    triangular); the binary tree's complete dyadic nodes sorted by their last step, shorter first."""
    if s.n > MAX_DENSE_STEPS:
        raise InputError(f"--steps: mmcc is computed for at most {MAX_DENSE_STEPS} steps, got {s.n}")
    m = sum(s.n >> level for level in range(s.n.bit_length())) if s.label == "tree" else s.n
    if float(m + s.n) * s.n > MAX_CELLS:  # find_pairs's limit, checked before C is formed
        raise InputError(
            f"--steps: mmcc holds C ({m}×{s.n}) and its Gram matrix, above the limit of {MAX_CELLS:.2g} entries"
        )
    if s.dense is not None:
        return np.asarray(s.dense, float)
    if s.coef is not None:
        n, c = s.n, s.coef
        i = np.arange(n)
        d = i[:, None] - i[None, :]
        full = np.zeros(n)
        full[: min(c.size, n)] = c[:n]
        return np.where(d >= 0, full[np.clip(d, 0, n - 1)], 0.0)
    if s.label == "tree":
        return tree_matrix(s.n)
    raise InputError(f"--strategy {s.label!r}: mmcc needs the matrix C itself")


def tree_matrix(n: int) -> np.ndarray:
    """The binary tree's rows (the complete dyadic intervals [a·2^l, (a+1)·2^l) within n steps), sorted by the
    end of the interval, shorter first (the order DP-FTRL releases them)."""
    levels = np.arange(max(0, n.bit_length()))
    size = 1 << levels
    starts = np.concatenate([np.arange(n // L) * L for L in size])
    lengths = np.concatenate([np.full(n // L, L) for L in size])
    order = np.lexsort((lengths, starts + lengths))
    starts, lengths = starts[order], lengths[order]
    cols = np.arange(n)
    return ((cols >= starts[:, None]) & (cols < (starts + lengths)[:, None])).astype(float)


def check_nonnegative(C: np.ndarray, label: str) -> None:
    if np.any(C < 0):
        raise InputError(
            f"--strategy {label!r}: mmcc needs C >= 0 entrywise (Choquette-Choo et al. 2024); this C has "
            "negative entries"
        )


def specs_of(laws, sigma: float) -> list:
    """The laws as mechanism specs of :func:`~dpcalc.engine.composition.pld.compose_pld`: a single value is the
    Gaussian mechanism, ``{0, v}`` the Poisson-subsampled Gaussian (noise σ/v rounded down), else the
    ``mixture-gaussian`` kind."""
    specs = []
    for v, m, cnt in laws:
        if v.size == 1:
            specs.append(("gaussian", {"sigma": sigma, "sensitivity": float(v[0])}, cnt))
        elif v.size == 2 and v[0] == 0:
            s = sigma / float(v[1])
            if s * float(v[1]) > sigma:
                s = float(np.nextafter(s, 0.0))
            specs.append(("subsampled-gaussian", {"q": float(m[1]), "sigma": s}, cnt))
        else:
            specs.append(
                (
                    "mixture-gaussian",
                    {"sigma": sigma, "sensitivities": tuple(v.tolist()), "probs": tuple(m.tolist())},
                    cnt,
                )
            )
    return specs


@dataclass
class MMCC:
    """One answer: the ε bracket (``upper`` the certified bound on the run; ``lower`` and ``estimate`` those of
    the construction composed — the row laws under p̃, which dominates the run — so of the run only where
    ``of_run``), the δ spent on the tail events, the number of pairs that needed one, the largest p̃, and the
    row laws composed."""

    upper: float
    lower: float
    estimate: float
    tail_delta: float
    pairs: int
    max_p_tilde: float
    laws: int
    unamplified: bool
    of_run: bool = False


def laws_are_the_run(C: np.ndarray, p: float, laws, sigma: float) -> bool:
    """Whether the laws composed are the run's own, so that the PLD bracket's lower end and estimate are the
    run's: every row and every column of C holds at most one non-zero entry (no pair needs a tail event, p̃ = p:
    the rows are independent Poisson-subsampled Gaussians, exactly the run in its worst case), every law is
    {0, C_ij} with mass p on C_ij itself (not rounded up, no envelope) and σ / C_ij is a double (the noise
    multiplier of :func:`specs_of` not rounded).  C = I: DP-SGD."""
    nz = C != 0
    if not 0 < p < 1 or np.any(nz.sum(axis=0) > 1) or np.any(nz.sum(axis=1) > 1):
        return False
    want: dict = {}
    for v in C[nz].tolist():
        want[v] = want.get(v, 0) + 1
    got: dict = {}
    for v, m, cnt in laws:
        if v.size != 2 or v[0] != 0 or m[1] != p:
            return False
        got[float(v[1])] = got.get(float(v[1]), 0) + cnt
    return got == want and all(Fraction(sigma) / Fraction(v) == Fraction(sigma / v) for v in want)


def _check_work(C: np.ndarray, pairs: Pairs, sigma, label: str) -> None:
    """Refuse (before any work) where the tail bounds and row laws at every σ of ``sigma`` pass :data:`MAX_WORK`."""
    sigma = np.atleast_1d(np.asarray(sigma, float))
    work = sum(tail_work(pairs, float(s)) for s in sigma) + row_work(C) * sigma.size
    if work > MAX_WORK:
        raise InputError(
            f"--method mmcc: {label} over {C.shape[1]} steps needs about {work:.2g} operations (tail bounds of "
            f"{len(pairs.s2)} distinct pairs, {C.shape[0]} rows, {sigma.size} points), above the limit of "
            f"{MAX_WORK:.2g}: more noise, fewer steps or a banded strategy"
        )


def _construction(C: np.ndarray, p: float, pairs: Pairs, sigma: float, tail: float):
    """Steps 3–5 at noise σ with the tail events at total probability ``tail`` (0 where no pair needs one):
    ``(row laws, p̃ matrix)``."""
    n_pairs = int(pairs.rows.size)
    per_key = posterior_bounds(pairs, p, sigma, tail / n_pairs) if n_pairs else np.empty(0)
    pt = p_tilde_matrix(C, pairs, per_key, p)
    return row_laws(C, pt), pt


def _unamplified(C: np.ndarray, sensitivity) -> float:
    """An upper bound on ‖C·1‖₂ (``sensitivity`` if given)."""
    if sensitivity is None:
        return float(np.linalg.norm(C.sum(axis=1))) * (1 + 1e-12)
    return float(sensitivity)


def _checked(C, p, label) -> np.ndarray:
    C = np.asarray(C, float)
    check_nonnegative(C, label)
    if not 0 < p <= 1:
        raise InputError(f"--participation: the sample rate must be in (0, 1], got {p!r}")
    return C


def mmcc_epsilon(
    C: np.ndarray,
    p: float,
    sigma,
    delta,
    *,
    eps_error=None,
    unamplified_sensitivity=None,
    label="C",
    pairs: Pairs | None = None,
    memory_cap: int | None = None,
) -> list[MMCC]:
    """ε(δ) of MMCC (module docstring) at each (σ, δ) of the broadcast arrays; ``unamplified_sensitivity``:
    an upper bound on ‖C·1‖₂ (computed, rounded up, when None); ``pairs``: :func:`find_pairs` of (C, p) if
    already known (a search reuses them); ``memory_cap``: the PLD's (its default when None)."""
    C = _checked(C, p, label)
    sigma, delta = (
        a.ravel() for a in np.broadcast_arrays(np.asarray(sigma, float), np.asarray(delta, float))
    )
    pairs = find_pairs(C, p) if pairs is None else pairs
    _check_work(C, pairs, sigma, label)
    unamplified_sensitivity = _unamplified(C, unamplified_sensitivity)
    out = []
    for s, d in zip(sigma.tolist(), delta.tolist()):
        n_pairs = int(pairs.rows.size)
        tail = TAIL_FRACTION * d if n_pairs else 0.0
        laws, pt = _construction(C, p, pairs, s, tail)
        cap = {} if memory_cap is None else {"memory_cap": memory_cap}
        b = compose_pld(specs_of(laws, s), delta=d - tail, eps_error=eps_error, **cap)
        exact = float(eps_gaussian(d, unamplified_sensitivity / s))
        up, lo, est = float(b.upper), float(b.lower), float(b.estimate)
        use_exact = exact < up
        if use_exact:
            up, lo, est = exact, min(lo, exact), min(est, exact)
        of_run = n_pairs == 0 and laws_are_the_run(C, p, laws, s)
        out.append(
            MMCC(up, lo, est, tail, n_pairs, float(pt.max()) if pt.size else p, len(laws), use_exact, of_run)
        )
    return out


@dataclass
class Profile:
    """MMCC's bound on the run's privacy profile at one σ (docs/math.md §12.4): the tail events at total
    probability ``tail`` fixed in advance, so that for **every** ε, H_{e^ε} of the run is at most that of the row
    laws composed plus ``tail`` (Thm 3.1 holds at each ε with the same events), and at most the unamplified
    Gaussian's δ(ε) at μ = ‖C·1‖₂/σ (step 7, the pre-declared alternative).  ``of_run``: the laws are the run's
    own (:func:`laws_are_the_run`; then no pair needs an event and ``tail`` is 0), so the PLD's lower end and
    estimate are the run's."""

    specs: list
    tail: float
    mu: float
    pairs: int
    max_p_tilde: float
    laws: int
    of_run: bool
    eps_error: float | None = None
    memory_cap: int | None = None

    def _cap(self) -> dict:
        return {} if self.memory_cap is None else {"memory_cap": self.memory_cap}

    def delta(self, eps) -> tuple:
        """``(lower, estimate, upper)`` arrays of δ at each ε of ``eps``: the upper end the smaller of the two
        bounds (the PLD's upper end plus the tail, rounded up; the unamplified Gaussian's), the lower end and
        estimate nan unless ``of_run``."""
        eps = np.atleast_1d(np.asarray(eps, float))
        b = compose_pld(self.specs, epsilon=eps, eps_error=self.eps_error, **self._cap())
        up = np.asarray(b.upper, float).reshape(eps.shape)
        if self.tail > 0:
            up = np.nextafter(up + self.tail, np.inf)
        up = np.minimum(np.minimum(up, np.asarray(delta_gaussian(eps, self.mu), float)), 1.0)
        if not self.of_run:
            nan = np.full(eps.shape, np.nan)
            return nan, nan.copy(), up
        lo = np.minimum(np.asarray(b.lower, float).reshape(eps.shape), up)
        est = np.clip(np.asarray(b.estimate, float).reshape(eps.shape), lo, up)
        return lo, est, up

    def epsilon(self, delta: float) -> float:
        """An upper bound on ε at ``delta`` from the same bound (inf where ``delta`` is not above the tail and
        the unamplified Gaussian's is infinite)."""
        exact = float(eps_gaussian(delta, self.mu))
        if delta <= self.tail:
            return exact
        b = compose_pld(self.specs, delta=delta - self.tail, eps_error=self.eps_error, **self._cap())
        return min(float(b.upper), exact)


def mmcc_profile(
    C: np.ndarray,
    p: float,
    sigma: float,
    tail: float,
    *,
    eps_error=None,
    unamplified_sensitivity=None,
    label="C",
    pairs: Pairs | None = None,
    memory_cap: int | None = None,
) -> Profile:
    """MMCC's privacy profile (:class:`Profile`) at noise σ with the tail events at total probability ``tail``
    (used only where some pair needs an event; any value in (0, 1) gives a valid bound, a smaller one larger
    row laws).  The arguments as :func:`mmcc_epsilon`'s."""
    C = _checked(C, p, label)
    if not 0 < tail < 1:
        raise InputError(f"mmcc: the tail probability must be in (0, 1), got {tail!r}")
    pairs = find_pairs(C, p) if pairs is None else pairs
    _check_work(C, pairs, sigma, label)
    n_pairs = int(pairs.rows.size)
    tail = tail if n_pairs else 0.0
    laws, pt = _construction(C, p, pairs, float(sigma), tail)
    mu = float(np.nextafter(_unamplified(C, unamplified_sensitivity) / float(sigma), np.inf))
    of_run = n_pairs == 0 and laws_are_the_run(C, p, laws, float(sigma))
    return Profile(
        specs_of(laws, float(sigma)),
        tail,
        mu,
        n_pairs,
        float(pt.max()) if pt.size else p,
        len(laws),
        of_run,
        eps_error,
        memory_cap,
    )


__all__ = [
    "MMCC",
    "Profile",
    "causal_matrix",
    "laws_are_the_run",
    "mmcc_epsilon",
    "mmcc_profile",
    "tree_matrix",
]
