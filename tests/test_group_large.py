"""The person-level PLD at large group sizes (issue 43): the mixture ``Σ Bin(K,q)_i N(i,σ²)`` against ``N(0,σ²)``
(Ganesh 2024, arXiv:2401.10294, Thm 3.1) for K in the hundreds, where the loss spans thousands of nats but the mass
beyond a modest loss is negligible.  The certified bracket of ``sgd-epsilon --method pld`` and of ``compose
--method pld`` must contain the exact ε of one step, computed here independently in 40-digit mpmath in both
directions; the bracket's width must be within the default accuracy (0.5 % of ε)."""

from __future__ import annotations

import csv
import io
import math

import mpmath as mp
import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine.mechanisms.mixture_gaussian_loss import mixture_loss
from dpcalc.engine.mechanisms.mixture_gaussian_terms import _weighted_expm1
from dpcalc.engine.pld.epsilon import epsilon_bracket
from dpcalc.engine.pld.grid import Component
from dpcalc.engine.samplers.person import mixture_terms

#: (K, q, σ, δ): the issue's two cases
CASES = [(999, 1e-4, 3.0, 1e-6), (200, 1e-3, 2.0, 1e-5)]


def _exact_epsilon(k: int, q: float, sigma: float, delta: float) -> float:
    """ε(δ) of one step of the pair, both directions, at 40 digits.

    The loss ``L(x) = log Σ p_i e^{(i x − i²/2)/σ²}`` is increasing in x, so the event ``L > ε`` is ``x > x*``:
    remove (P = mixture, Q = N(0, σ²)): ``δ(ε) = Σ p_i Φ̄((x* − i)/σ) − e^ε Φ̄(x*/σ)`` with ``L(x*) = ε``;
    add (the swap): ``δ(ε) = Φ(x'/σ) − e^ε Σ p_i Φ((x' − i)/σ)`` with ``L(x') = −ε`` (0 where −ε <= log p_0).
    Components with p_i < 1e-80 are left out: their mass changes δ by less than 1e-77."""
    mp.mp.dps = 40
    s = mp.mpf(sigma)
    qq = mp.mpf(q)
    comps = []
    for i in range(k + 1):
        p = mp.binomial(k, i) * qq**i * (1 - qq) ** (k - i)
        if p > mp.mpf("1e-80"):
            comps.append((mp.mpf(i), p))

    def loss(x):
        return mp.log(mp.fsum(p * mp.exp((i * x - i * i / 2) / s**2) for i, p in comps))

    def x_at(ell):
        # L is increasing and convex: Newton from a point right of the root stays right of it and converges
        x = mp.mpf(k) + 60 * s
        for _ in range(500):
            w = [p * mp.exp((i * x - i * i / 2) / s**2) for i, p in comps]
            total = mp.fsum(w)
            step = (mp.log(total) - ell) / (mp.fsum(wi * i for wi, (i, _) in zip(w, comps)) / (total * s**2))
            x -= step
            if abs(step) <= mp.mpf("1e-30") * (1 + abs(x)):
                return x
        raise AssertionError("Newton did not converge")

    def sf(z):
        return mp.erfc(z / mp.sqrt(2)) / 2

    def delta_remove(eps):
        x = x_at(eps)
        return mp.fsum(p * sf((x - i) / s) for i, p in comps) - mp.exp(eps) * sf(x / s)

    log_p0 = mp.log(comps[0][1])

    def delta_add(eps):
        if -eps <= log_p0:
            return mp.mpf(0)
        x = x_at(-eps)
        return (1 - sf(x / s)) - mp.exp(eps) * mp.fsum(p * (1 - sf((x - i) / s)) for i, p in comps)

    def eps_of(delta_fn):  # δ(ε) is decreasing: bisection to 1e-13
        lo, hi = mp.mpf(0), mp.mpf(50)
        if delta_fn(lo) <= delta:
            return lo
        while hi - lo > mp.mpf("1e-13"):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if delta_fn(mid) > delta else (lo, mid)
        return hi

    return float(max(eps_of(delta_remove), eps_of(delta_add)))


def _row(args):
    result = CliRunner().invoke(main, [*args, "-f", "csv"])
    assert result.exit_code == 0, result.output
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))
    return float(row["epsilon_lower"]), float(row["epsilon"])


@pytest.mark.parametrize("k,q,sigma,delta", CASES)
def test_the_pld_bracket_contains_the_exact_epsilon(k, q, sigma, delta):
    exact = _exact_epsilon(k, q, sigma, delta)
    sgd = _row(
        [
            "sgd-epsilon",
            "--sigma",
            str(sigma),
            "--sample-rate",
            str(q),
            "--steps",
            "1",
            "--group-size",
            str(k),
        ]
        + ["--delta", str(delta), "--method", "pld"]
    )
    spec = f"mog:sigma={sigma},group={k},q={q}"
    comp = _row(["compose", spec, "--delta", str(delta), "--method", "pld"])
    for lower, upper in (sgd, comp):
        assert lower <= exact <= upper
        assert upper - lower <= 0.005 * upper
    assert sgd == comp


def test_a_wide_bin_far_below_a_large_component_is_finite():
    """``π_i·expm1(c_i dx/σ²)`` with a weight that underflows and an expm1 that overflows was 0·∞ = nan (the
    first bin of K = 999, where the loss is flat over ~100 σ), and the discretisation lost its mass."""
    log_w = np.array([-800.0, -5.0, -2000.0, 0.0])
    y = np.array([1200.0, 3.0, 1e-3, -4.0])
    got = _weighted_expm1(log_w, y)
    mp.mp.dps = 40
    want = [mp.exp(mp.mpf(a)) * mp.expm1(mp.mpf(b)) for a, b in zip(log_w, y)]
    for g, w in zip(got, want):
        assert np.isfinite(g)
        assert abs(g - float(w)) <= 1e-13 * abs(float(w)) + 1e-300


def test_the_cut_and_the_whole_mixture_give_overlapping_brackets():
    """The remove direction with its unlikely components cut to +∞ (mass counted against the lower end) and the
    whole mixture are two certified brackets of the same ε: they overlap, over 100 compositions."""
    terms = mixture_terms(50, 0.01, 1.0)
    whole = mixture_loss(terms, "remove")
    assert whole.cut is not None
    cut = whole.cut(math.log(1e-15))
    dropped = terms.c > cut.piece.tilt_rate  # the kept components end at the cut model's largest sensitivity
    assert 0 < dropped.sum() < terms.m - 2
    assert cut.cut_mass == cut.inf_mass >= math.fsum(terms.p[dropped].tolist())
    assert 0 < cut.cut_mass <= 1e-15 * (1 + 1e-9)
    whole.cut = None
    a = epsilon_bracket([Component(whole, 100)], 1e-5, None, 2 * 1024**3)
    b = epsilon_bracket([Component(mixture_loss(terms, "remove"), 100)], 1e-5, None, 2 * 1024**3)
    assert max(a[0], b[0]) <= min(a[2], b[2])
    assert b[2] - b[0] <= 0.005 * b[2]
