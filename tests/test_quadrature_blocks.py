"""The subsampled Gaussian's quadrature (dpcalc.engine.mechanisms.sgm.poisson._log_a_frac_quad) gives an element
the same bits whatever else it is computed with: its sum (dpcalc.engine._numerics.logsumexp_rows) does not see
the padding of a block.  Reference: each element computed alone; numpy's own log-sum-exp."""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.engine._numerics import logsumexp, logsumexp_rows
from dpcalc.engine.mechanisms.sgm import poisson as sgm_poisson


def test_quadrature_value_does_not_depend_on_its_block():
    # the quadrature pads an element's grid to the longest in its block of 64: its sum must not see that
    # (with numpy's one pairwise sum over the padded row, the last element's value moved by an ulp)
    q = np.array(
        [
            0.00297912860203187,
            0.21364563285338084,
            0.028932608601278397,
            0.0064404083218936,
            0.01382993475405691,
            0.0011924328806728404,
        ]
    )
    s = np.array(
        [
            1.0592747442480377,
            3.5178098661213366,
            3.4123528020841256,
            3.2692330016656426,
            2.2265489941784757,
            4.98744471105145,
        ]
    )
    a = np.array([274.3, 298.9, 194.8, 251.8, 298.9, 231.2])  # fmt: skip
    together, _ = sgm_poisson._log_a_frac_quad(q, s, a)
    for i in range(a.size):
        alone, _ = sgm_poisson._log_a_frac_quad(q[i : i + 1], s[i : i + 1], a[i : i + 1])
        assert alone[0] == together[i]


def test_logsumexp_rows_ignores_padding_and_agrees():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 1300)) * 20.0
    base = logsumexp_rows(x)
    for pad in (1, 8, 511, 1500):
        padded = np.concatenate([x, np.full((4, pad), -np.inf)], axis=1)
        np.testing.assert_array_equal(logsumexp_rows(padded), base)
    np.testing.assert_allclose(base, logsumexp(x, axis=1), rtol=1e-14)
    assert np.all(logsumexp_rows(np.full((2, 3), -np.inf)) == -np.inf)
    assert logsumexp_rows(np.array([[np.inf, 0.0]]))[0] == np.inf


@pytest.mark.parametrize("sigmas", [160, 8])
def test_dense_integer_sums_do_not_depend_on_how_many_pairs_share_them(sigmas):
    """The integer orders up to 64 sum every term: in one padded pass for few (pair, order) elements, in a pass
    per order for many (which evaluates log(e^{c·k(k−1)} − 1) once per σ: ``sigmas`` distinct values among the
    pairs).  Both sum a fixed block, so a pair's value is the same either way, and a sweep's rows do not depend
    on the size of its chunks (before, 174 rows of a 10,000-row sweep moved by up to 7 ulps when its chunks
    went from 63 to 125 pairs)."""
    rng = np.random.default_rng(11)
    pairs = 160  # 160 pairs × 63 orders × 63 terms: above the one-pass limit
    q = 10.0 ** rng.uniform(-3, -0.7, pairs)
    s = np.repeat(rng.uniform(0.5, 3.0, sigmas), pairs // sigmas)
    orders = np.arange(2.0, 65.0)
    a, b, c = np.log(q), np.log1p(-q), 0.5 / s**2
    rep = lambda x: np.repeat(x, orders.size)  # noqa: E731
    together = sgm_poisson._dense_logsum(np.tile(orders, pairs), rep(a), rep(b), rep(c))
    for i in range(0, pairs, 7):
        one = slice(i * orders.size, (i + 1) * orders.size)
        alone = sgm_poisson._dense_logsum(orders, rep(a)[one], rep(b)[one], rep(c)[one])
        np.testing.assert_array_equal(alone, together[one])
