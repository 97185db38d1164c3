"""Every sampler of ``sgd-epsilon --sampling`` (docs/math.md §3.5–§3.9) through the library API: ε never NaN,
non-increasing in the noise, non-decreasing in the batch size and in the epochs (hypothesis), and the
samplers ordered as the theory orders them."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc import api

N = 10_000

#: (sampling, extra keywords) of the rdp rows compared; truncated Poisson with a cap 1.3 times the batch.
SAMPLERS = ("poisson", "truncated-poisson", "balls-in-bins", "random-allocation")


def _eps(sampling, batch, sigma, epochs, delta=1e-5, accountant="rdp"):
    q = batch / N
    steps = math.ceil(epochs / q)
    if sampling == "balls-in-bins":
        steps = epochs * (N // batch)  # whole epochs of floor(N/B) steps
    kw = {}
    if sampling in ("truncated-poisson", "balls-in-bins"):
        kw["dataset_size"] = N
    if sampling == "truncated-poisson":
        kw["max_batch_size"] = math.ceil(1.3 * batch)
    b = api.sgd_epsilon(q, sigma, steps, delta, sampling=sampling, accountant=accountant, **kw)
    return float(np.asarray(b.value))


@settings(max_examples=12, deadline=None)
@given(
    sampling=st.sampled_from(SAMPLERS),
    batch=st.integers(8, 500),
    sigma=st.floats(0.6, 8.0),
    epochs=st.integers(1, 30),
)
def test_monotone_and_finite(sampling, batch, sigma, epochs):
    e = _eps(sampling, batch, sigma, epochs)
    assert not math.isnan(e) and e > 0
    assert _eps(sampling, batch, sigma * 1.25, epochs) <= e * (1 + 1e-9)
    assert _eps(sampling, batch, sigma, epochs + 3) >= e * (1 - 1e-9)
    if sampling != "truncated-poisson":  # there the cap moves with the batch (checked below at a fixed cap)
        assert _eps(sampling, min(2 * batch, N), sigma, epochs) >= e * (1 - 1e-9)


@settings(max_examples=8, deadline=None)
@given(batch=st.integers(20, 400), cap_factor=st.floats(1.0, 2.0), sigma=st.floats(0.7, 4.0))
def test_truncated_monotone_in_batch_at_a_fixed_cap_and_in_the_cap(batch, cap_factor, sigma):
    cap = math.ceil(cap_factor * batch)

    def eps(b, c):
        q = b / N
        return float(
            np.asarray(
                api.sgd_epsilon(
                    q, sigma, 500, 1e-5, sampling="truncated-poisson", dataset_size=N, max_batch_size=c
                ).value
            )
        )

    e = eps(batch, cap)
    assert eps(min(batch + 10, cap), cap) >= e * (1 - 1e-9)  # more examples per batch, same cap
    assert eps(batch, cap + 20) <= e * (1 + 1e-9)  # a looser cap cuts less
    assert eps(batch, N) == float(np.asarray(api.sgd_epsilon(batch / N, sigma, 500, 1e-5).value))  # no cut


def test_pld_brackets_are_ordered_and_never_nan():
    """At one setting: truncated Poisson >= Poisson (both pld, add/remove); replace-one >= add/remove.  Truncated
    Poisson's bracket is of its revealed mixture, a model that only dominates the run: no lower end or estimate."""
    q, sigma, steps = 256 / 60000, 1.1, 2000
    plain = api.sgd_epsilon(q, sigma, steps, 1e-5, accountant="pld")
    cut = api.sgd_epsilon(
        q,
        sigma,
        steps,
        1e-5,
        accountant="pld",
        sampling="truncated-poisson",
        dataset_size=60000,
        max_batch_size=280,
    )
    repl = api.sgd_epsilon(q, sigma, steps, 1e-5, accountant="pld", neighbors="replace-one")
    for b in (plain, repl):
        assert all(math.isfinite(float(np.asarray(x))) for x in (b.lower, b.estimate, b.value))
    assert math.isfinite(float(cut.value))
    assert np.isnan(float(np.asarray(cut.lower))) and np.isnan(float(np.asarray(cut.estimate)))
    assert float(cut.value) >= float(plain.value)
    assert float(repl.lower) >= float(plain.value)
