"""Monte Carlo accountants in batches (issue 40, parts 1, 4 and 6; docs/math.md §3.9, §12.5): the counts of the
losses on the fixed grid bound every term from above and stay close to the exact terms; the counts merge exactly
in any order; a seed gives the same ε bit for bit whichever mapper runs the batches (in order, in reverse order, on
a pool of two processes, through the commands); the note of an ε = inf row says how many samples would certify δ,
and that count is the boundary; memory does not grow with the samples."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dpcalc import execution
from dpcalc.commands.matrix.command import matrix
from dpcalc.commands.matrix.params import MatrixParams
from dpcalc.commands.sgd.epsilon import sgd_epsilon
from dpcalc.commands.sgd.mc import _count_up
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.engine.dpsgd import balls_in_bins_conditioning as bcond
from dpcalc.engine.dpsgd import balls_in_bins_counts as bc
from dpcalc.engine.dpsgd import balls_in_bins_mc as bib
from dpcalc.engine.dpsgd import balls_in_bins_samples as bs
from dpcalc.engine.matrix import balls_in_bins_mc as bb
from dpcalc.engine.matrix.strategies import strategy


def _reversed_mapper(calls):
    """A mapper that evaluates the items last to first (as a pool finishing them out of order might), then gives
    the results in the items' order; it records how many items it ran."""

    def mapper(fn, items, weights=None):
        items = list(items)
        calls.append(len(items))
        out = [fn(x) for x in reversed(items)]
        return iter(out[::-1])

    return mapper


@pytest.fixture
def small_batches(monkeypatch):
    """Batches of a few thousand samples, so that the cheap runs below have many of them (the fork pool inherits
    the patched module)."""
    monkeypatch.setattr(bs, "BATCH_DRAWS", 2**10)


def _losses(rng, n):
    x = np.concatenate(
        [
            rng.normal(0.5, 1.0, n),
            rng.exponential(3.0, n // 4),
            10.0 ** rng.uniform(-12, 2.5, n // 4),  # tiny and large positive losses
            [0.0, -0.0, -np.inf, -3.0, 2.0**-24, 2.0**-30, 1e300],
        ]
    )
    return rng.permutation(x)


def test_grid_bounds_every_term_from_above_and_closely():
    """For any losses and ε (also ε < 0), the mean of the bins' terms is at least the exact mean, and at most the
    exact mean of the losses raised by a relative 2^-16 (plus the allowance and 2^-24 near 0)."""
    rng = np.random.default_rng(0)
    losses = _losses(rng, 20_000)
    pad = bc.sgd_allowance(1.0, 10, 2)
    d = bc._Direction(bc.bin_losses(losses), 1.0, lambda e: 0.0 * e, -math.inf, pad)
    raised = np.where(losses > 0, losses * (1 + 2.0**-16) + 2.0**-24, 0.0)
    raised = raised + pad(raised)
    for eps in [-1.0, 0.0, 1e-9, 1e-6, 0.01, 0.3, 1.0, 2.5, 7.0, 40.0, 299.0]:
        with np.errstate(invalid="ignore"):
            exact = np.sum(np.clip(-np.expm1(eps - losses), 0.0, None)) / losses.size
            high = np.sum(np.clip(-np.expm1(eps - raised), 0.0, None)) / losses.size
        got = float(d.mean(eps)[0])
        assert exact <= got <= high * (1 + 1e-12) + 1e-15, eps
        if eps >= 0:  # (below 0 the losses <= 0 share one bin: sound, loose, and never asked for)
            assert got - exact <= 1e-4 * max(exact, 1e-12) + 1e-7


def test_nan_and_inf_losses_count_as_the_largest_term():
    d = bc._Direction(
        bc.bin_losses([np.nan, np.inf, 0.5]), 1.0, lambda e: 0.0 * e, -math.inf, bc.sgd_allowance(1, 2, 1)
    )
    assert d.max_loss == math.inf
    assert float(d.mean(1e3)[0]) == pytest.approx(2 / 3, rel=1e-15)


def test_tilted_bins_bound_the_weighted_terms():
    """The tilted add direction: each bin's bound (the weight at its lower edge, capped at 1, times the term at
    its upper edge) is at least the exact weighted mean of the sums S it came from, and close to it."""
    rng = np.random.default_rng(1)
    m, lam, eps0 = 10, 2.0, 0.5
    sums = bcond._sample_add_tilted(1.0, m, lam, 40_000, rng)
    t = bc._Tilted(bc.bin_losses(math.log(m) - np.log(sums)), m, lam, 0.0, eps0, bc.sgd_allowance(1.0, m, 1))
    cap = m * math.exp(-eps0)
    for eps in [0.5, 0.8, 1.2, 2.0]:
        g = np.clip(-np.expm1(np.log(sums / m) + eps), 0.0, None)
        exact = np.sum(np.exp(lam * (sums - cap)) * g) / sums.size
        got = float(t.mean(eps)[0])
        assert exact <= got <= exact * (1 + 1e-3) + 1e-9


def test_counts_merge_exactly_in_any_order():
    rng = np.random.default_rng(2)
    parts = [bc.bin_losses(_losses(rng, n)) for n in (10, 5000, 1, 300, 2000)]
    whole = bc.merge(parts)
    for order in (parts[::-1], parts[2:] + parts[:2]):
        other = bc.merge(order)
        assert np.array_equal(other.index, whole.index) and np.array_equal(other.count, whole.count)
        assert (other.nonpositive, other.top) == (whole.nonpositive, whole.top)
    merger = bc.Merger()
    for part in parts:
        merger.add(part)
    assert np.array_equal(merger.result().count, whole.count)
    assert whole.samples == sum(p.samples for p in parts)


def test_batches_depend_on_the_configuration_only():
    assert bs.batch_rows(234, 10**6) == bs.BATCH_DRAWS // 234
    assert bs.batch_rows(1, 10**6) == bs.BATCH_ROWS_MAX and bs.batch_rows(10**7, 10**6) == bs.BATCH_ROWS_MIN
    assert len(bs.batches(10**13, bs.batch_rows(234, 10**13))) <= bs.MAX_BATCHES
    sizes = bs.batches(10_001, 1000)
    assert len(sizes) == 11 and sum(r for _, r in sizes) == 10_001 and sizes[-1] == (10, 1)


@pytest.mark.parametrize(
    "sigma, m, epochs, delta",
    [(0.8, 3, 1, 1e-3), (1.0, 1, 1, 1e-3), (1.2, 5, 2, 1e-2)],  # tilted add, conditioned both ways, plain
)
def test_dp_sgd_same_bits_under_any_mapper(small_batches, sigma, m, epochs, delta):
    n = 20_000
    serial = bib.epsilon_balls_in_bins_mc(sigma, m, epochs, delta, samples=n, seed=7)
    calls: list = []
    rev = bib.epsilon_balls_in_bins_mc(
        sigma, m, epochs, delta, samples=n, seed=7, mapper=_reversed_mapper(calls)
    )
    assert calls and calls[0] >= 10  # many batches were run, out of order
    assert rev == serial and all(math.isfinite(x) for x in serial)
    with execution.using(jobs=2):
        pooled = bib.epsilon_balls_in_bins_mc(
            sigma, m, epochs, delta, samples=n, seed=7, mapper=execution.mapper()
        )
    assert pooled == serial
    assert bib.epsilon_balls_in_bins_mc(sigma, m, epochs, delta, samples=n, seed=8) != serial
    d_serial = bib.delta_balls_in_bins_mc(sigma, m, epochs, 1.0, samples=n, seed=7)
    assert bib.delta_balls_in_bins_mc(
        sigma, m, epochs, 1.0, samples=n, seed=7, mapper=_reversed_mapper([])
    ) == (d_serial)


def test_matrix_same_bits_under_any_mapper(small_batches):
    s = strategy("sqrt:bands=3", 12)
    kw = dict(samples=20_000, confidence=0.95, seed=3)
    serial = bb.epsilon_mc(s, 4, [1.5, 2.0], [1e-3, 1e-3], **kw)
    calls: list = []
    rev = bb.epsilon_mc(s, 4, [1.5, 2.0], [1e-3, 1e-3], mapper=_reversed_mapper(calls), **kw)
    assert calls == [2 * 2 * len(bs.batches(20_000, bb.batch_rows(4, 20_000)))] and calls[0] >= 20
    with execution.using(jobs=2):
        pooled = bb.epsilon_mc(s, 4, [1.5, 2.0], [1e-3, 1e-3], mapper=execution.mapper(), **kw)
    for other in (rev, pooled):
        assert np.array_equal(other[0], serial[0]) and np.array_equal(other[1], serial[1])
    assert np.all(np.isfinite(serial[0])) and serial[0][1] < serial[0][0]
    up, est = bb.delta_mc(s, 4, 2.0, [0.5, 1.0], mapper=_reversed_mapper([]), **kw)
    assert np.array_equal(up, bb.delta_mc(s, 4, 2.0, [0.5, 1.0], **kw)[0])


def _sgd_params(**kw):
    base = dict(
        sigma=[1.0],
        batch_size=[50],
        dataset_size=[500],
        steps=[10],
        delta=[1e-3],
        accountant="mc",
        sampling="balls-in-bins",
        mc_samples=20_000,
        seed=5,
    )
    base.update(kw)
    return SgdEpsilonParams(**base)


def test_sgd_epsilon_command_same_rows_on_one_and_two_processes(small_batches):
    with execution.using(jobs=1):
        one = sgd_epsilon(_sgd_params())
    with execution.using(jobs=2):
        two = sgd_epsilon(_sgd_params())
    assert one.column("epsilon") == two.column("epsilon")
    assert one.column("epsilon_estimate") == two.column("epsilon_estimate")
    assert math.isfinite(one.column("epsilon")[0])


def test_matrix_command_same_rows_on_one_and_two_processes(small_batches):
    params = MatrixParams(
        strategies=["sqrt:bands=4"],
        steps=40,
        delta=[1e-3],
        sigma=[2.0],
        participation="balls-in-bins:b=10",
        method="mc",
        mc_samples=20_000,
        seed=1,
    )
    with execution.using(jobs=1):
        one = matrix(params)
    with execution.using(jobs=2):
        two = matrix(params)
    assert one.column("epsilon") == two.column("epsilon")
    assert one.column("epsilon_estimate") == two.column("epsilon_estimate")
    assert math.isfinite(one.column("epsilon")[0])


def test_the_dp_sgd_sample_count_is_the_boundary():
    """Below the count samples_to_certify gives, ε is inf (whatever the draws: the floor is above δ); from it on,
    finite.  m = 1, one epoch: the conditioned samplers (p(E) < 1 changes the count)."""
    sigma, m, k, delta = 1.0, 1, 1, 1e-3
    need = bib.samples_to_certify(sigma, m, k, delta, samples=100)
    assert 100 < need < 10_000
    assert math.isfinite(bib.epsilon_balls_in_bins_mc(sigma, m, k, delta, samples=int(need), seed=1)[0])
    assert bib.epsilon_balls_in_bins_mc(sigma, m, k, delta, samples=int(need * 0.99), seed=1)[0] == math.inf
    # the plain sampler's count is log(1/(1 − c))/δ, to within rounding
    assert bs.samples_for_floor(1e-6, 0.95) == pytest.approx(-math.log(0.05) / 1e-6, rel=1e-5)


def test_the_matrix_sample_count_is_the_boundary():
    s = strategy("identity", 4)
    need = bb.samples_to_certify(1e-3, 0.9)
    kw = dict(confidence=0.9, seed=0)
    assert bb.epsilon_mc(s, 2, 1.0, 1e-3, samples=int(need), **kw)[0][0] < math.inf
    assert bb.epsilon_mc(s, 2, 1.0, 1e-3, samples=int(need) - 1, **kw)[0][0] == math.inf


def test_notes_say_how_many_samples_would_certify():
    res = sgd_epsilon(_sgd_params(delta=[1e-5], mc_samples=2000))
    assert res.column("epsilon")[0] == math.inf
    m, k = 10, 1  # N/B = 10 steps an epoch, 10 steps
    need = bib.samples_to_certify(1.0, m, k, 1e-5, samples=2000, confidence=0.95)
    note = res.column("note")[0]
    assert f"{_count_up(need)} samples per direction would" in note and "raise --mc-samples" in note
    assert "2,000 samples cannot certify δ = 1e-05" in note
    params = MatrixParams(
        strategies=["sqrt:bands=4"],
        steps=40,
        delta=[1e-5],
        sigma=[2.0],
        participation="balls-in-bins:b=10",
        method="mc",
        mc_samples=2000,
    )
    row = matrix(params)
    assert row.column("epsilon")[0] == math.inf
    assert (
        f"{_count_up(bb.samples_to_certify(1e-5, 0.95))} samples per direction would" in row.column("note")[0]
    )
    assert _count_up(bb.samples_to_certify(1e-5, 0.95)) == "300,000"


def test_count_rounds_up():
    assert (
        _count_up(299_573.2) == "300,000"
        and _count_up(300_000) == "300,000"
        and _count_up(300_001) == "310,000"
    )
    assert _count_up(7.2) == "8" and _count_up(3.1e20) == "3.10e+20" and _count_up(math.inf) == "no number of"


def test_memory_does_not_grow_with_the_samples():
    """12 million samples per direction (their raw losses: 96 MB a direction, both held and sorted before): the
    peak memory grows by well under the raw losses."""
    code = textwrap.dedent(
        """
        import resource
        from dpcalc.engine.dpsgd.balls_in_bins_mc import epsilon_balls_in_bins_mc
        epsilon_balls_in_bins_mc(1.0, 1, 1, 1e-3, samples=1000, seed=0)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        up, _ = epsilon_balls_in_bins_mc(1.0, 1, 1, 1e-3, samples=12_000_000, seed=0)
        assert up < 4.0, up
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    grown = float(out.stdout)
    assert grown < 0.6 * 2 * 96, grown


def test_matrix_many_samples_are_estimated_and_capped_up_front():
    """What was refused by its work (10⁸ samples over 200 bins) is now planned: its estimate is said, and a cap
    below it refuses before any draw (the refusal names the samples and the cap)."""
    import time

    params = MatrixParams(
        strategies=["sqrt:bands=4"],
        steps=200,
        delta=[1e-4],
        sigma=[2.0],
        participation="balls-in-bins:b=200",
        method="mc",
        mc_samples=100_000_000,
    )
    start = time.perf_counter()
    with (
        execution.using(max_seconds=60.0),
        pytest.raises(execution.WorkCapExceeded) as err,
    ):
        matrix(params)
    assert time.perf_counter() - start < 5.0
    assert "--max-seconds 60" in str(err.value) and "samples of Monte Carlo" in str(err.value)
    from dpcalc.commands.matrix.sampled import mc_seconds

    assert mc_seconds(100_000_000, 200) > 60.0 * execution.cpu_count()
