"""Speed-ups that keep every bit: the signed series of the Poisson SGM runs in a (terms × elements) layout, with
one exp per term for its two signed sums, and evaluates the normal tail that depends on the (q, σ) pair alone
once per pair; Asoodeh et al.'s closed form skips its second term where the first is certainly smaller.
Each is checked against the plain formula it replaces (so no value moves; docs/math.md §1.3, §3.2)."""

from __future__ import annotations

import numpy as np
import pytest

from dpcalc.engine._numerics import logsumexp
from dpcalc.engine.conversion import closed_form
from dpcalc.engine.mechanisms.sgm.poisson import (
    _FRAC_BLOCK,
    _log_a_frac_poisson,
    _logsumexp_terms,
    _signed_logsums,
    _sum_terms,
)
from dpcalc.engine.orders import DEFAULT_ORDERS


def _terms(rng, n):
    """(block × n) log-terms with the series' specials: −∞, a whole column of −∞, +∞ and nan."""
    t = rng.standard_normal((_FRAC_BLOCK, n)) * 10.0 ** rng.uniform(-2, 2.5, (_FRAC_BLOCK, n))
    t[rng.random(t.shape) < 0.05] = -np.inf
    t[:, 0] = -np.inf
    if n > 3:
        t[2, 1] = np.inf
        t[5, 2] = np.nan
    return t


def _rows(x):
    """The (elements × terms) C-ordered array the series used before: numpy sums each row of 8 pairwise."""
    return np.ascontiguousarray(x.T)


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("seed", range(4))
def test_sums_over_terms_are_numpys_row_sums(seed):
    rng = np.random.default_rng(seed)
    x = np.exp(rng.standard_normal((_FRAC_BLOCK, 5000)) * 20.0)
    _same(_sum_terms(x), np.sum(_rows(x), axis=1))
    t = _terms(rng, 3000)
    _same(_logsumexp_terms(t), logsumexp(_rows(t), axis=1))


@pytest.mark.parametrize("seed", range(4))
def test_signed_sums_are_two_masked_logsumexps(seed):
    rng = np.random.default_rng(10 + seed)
    t = _terms(rng, 3000)
    is_neg = rng.random(t.shape) < 0.5
    is_neg[:, 3] = True  # a column without positive terms
    is_neg[:, 4] = False  # and one without negative terms
    lps, lns = _signed_logsums(t, is_neg)
    _same(lps, logsumexp(_rows(np.where(is_neg, -np.inf, t)), axis=1))
    _same(lns, logsumexp(_rows(np.where(is_neg, t, -np.inf)), axis=1))


@pytest.mark.parametrize("seed", range(3))
def test_asoodeh_skips_its_second_term_only_where_the_first_is_smaller(seed):
    rng = np.random.default_rng(200 + seed)
    n = 400
    rdp = 10.0 ** rng.uniform(-12, 5, (n, 1)) * DEFAULT_ORDERS ** rng.uniform(0, 2, (n, 1))
    rdp[rng.random(n) < 0.05] = np.inf
    rdp[rng.random(n) < 0.05] = 0.0
    delta = 10.0 ** rng.uniform(-320, 0, (n, 1))
    with np.errstate(all="ignore"):
        first = closed_form._balle_first(DEFAULT_ORDERS, rdp, delta)
        second = closed_form._second_where_needed(DEFAULT_ORDERS, rdp, delta)
        ref = np.minimum(first, closed_form._asoodeh_second(DEFAULT_ORDERS, rdp, delta))
    assert 0.2 < np.isinf(second).mean() < 0.8  # skipped often, not always
    _same(np.minimum(first, second), ref)


def test_fractional_series_shares_a_pairs_normal_tail_without_moving_a_bit():
    """log Φ((z0 − k)/σ) is evaluated once per (q, σ) pair when the pairs are at most half the elements; every
    element's value is the one it gets computed alone (where nothing is shared)."""
    rng = np.random.default_rng(11)
    pairs = 6
    q = 10.0 ** rng.uniform(-3, -0.7, pairs)
    sigma = rng.uniform(0.5, 3.0, pairs)
    orders = DEFAULT_ORDERS[(DEFAULT_ORDERS != np.floor(DEFAULT_ORDERS)) & (DEFAULT_ORDERS < 40)][::3]
    qe, se, ae = np.repeat(q, orders.size), np.repeat(sigma, orders.size), np.tile(orders, pairs)
    together = _log_a_frac_poisson(qe, se, ae)
    alone = [_log_a_frac_poisson(qe[i : i + 1], se[i : i + 1], ae[i : i + 1]) for i in range(ae.size)]
    assert together[1].mean() > 0.5  # the series answered for most elements
    for got, ref in zip(together, zip(*alone)):
        _same(got, np.concatenate(ref))


def test_asoodeh_computes_its_large_order_branch_only_where_it_applies():
    """Where αδ >= 1 anywhere in the array the branch is computed for the whole array and chosen elementwise, as
    before; an array with none skips it.  Either way every element is the value it gets alone."""
    rng = np.random.default_rng(5)
    rows = 8
    rdp = 10.0 ** rng.uniform(-3, 1, (rows, DEFAULT_ORDERS.size))
    delta = 10.0 ** rng.uniform(-6, -0.5, (rows, 1))  # αδ >= 1 at the high orders of some rows
    for d in (delta, np.full((rows, 1), 1e-9)):
        together = closed_form.eps_asoodeh(DEFAULT_ORDERS, rdp, d)
        alone = np.array(
            [
                [
                    closed_form.eps_asoodeh(DEFAULT_ORDERS[j : j + 1], rdp[i, j : j + 1], d[i])[0]
                    for j in range(rdp.shape[1])
                ]
                for i in range(rows)
            ]
        )
        _same(together, alone)
    assert np.any(DEFAULT_ORDERS * delta >= 1.0) and np.any(DEFAULT_ORDERS * delta < 1.0)
