"""The library's contract under hostile arguments: every public function of dpcalc.api returns its
documented type or raises InputError (bad input, naming the parameter) or UncertifiedError (a bound
that cannot be certified): never a plain ValueError, ZeroDivisionError, MemoryError or RuntimeWarning,
and never a nan where a bound is promised."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc import api
from dpcalc.errors import InputError, UncertifiedError
from dpcalc.input.spec import MechanismSpec

#: values no numeric parameter of the library accepts: signs, zero, nan, infinities, counts past 2^53,
#: wrong types, empty and mismatched arrays (each refused before any work)
INVALID = [
    -1.0,
    0.0,
    -0.0,
    math.nan,
    math.inf,
    -math.inf,
    2**60,
    "x",
    "1e-5",
    None,
    [],
    [0.5, math.nan],
    [[0.1, 0.2], [0.3, 0.4]],
    np.array([0.1, 0.2, 0.3]),
    1j,
    object(),
]
#: values some parameters accept: fractional (refused where a whole number is required), a bool
FRACTIONAL = [10.5, 0.5, True]
#: huge and tiny values: not drawn for DP-SGD, whose subsampled-Gaussian curve underflows to 0 there
#: (q = 1e-300 or σ = 1e300: a RuntimeWarning and ε = 0 at δ = 0, an engine issue reported separately)
HUGE = [1e300, 1e-300]
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: the searches (noise, steps, sample rate) and PLD compositions take up to a second an example
SLOW = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hostile_or(valid, huge=True):
    """An invalid value, a fractional one, a huge or tiny one (when ``huge``), a valid one, or an array
    of valid ones."""
    bad = st.sampled_from(INVALID + FRACTIONAL + (HUGE if huge else []))
    return st.one_of(bad, valid, st.lists(valid, min_size=1, max_size=3).map(np.array))


def floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def whole(lo, hi):
    return st.integers(lo, hi)


def pool(*values):
    """A few valid values at which the slow functions answer quickly."""
    return hostile_or(st.sampled_from(values), huge=False)


RATE = hostile_or(floats(1e-4, 1.0), huge=False)
SIGMA = hostile_or(floats(0.3, 50.0), huge=False)
STEPS = hostile_or(whole(1, 5000), huge=False)
DELTA = hostile_or(floats(1e-12, 0.5), huge=False)
EPS = hostile_or(floats(0.0, 20.0))
ALPHA = hostile_or(floats(1.01, 200.0))
FPR = hostile_or(floats(1e-6, 0.999))
NAME = st.sampled_from(
    ["optimal", "balle", "mironov", "asoodeh", "pld", "rdp", "exact", "abadi", "", "x", None, 3]
)
SPECS = st.one_of(
    st.sampled_from(
        [
            "gaussian:sigma=2,count=10",
            "laplace:scale=3",
            ["gaussian:sigma=4", "laplace:scale=10,count=2"],
            "gausian:sigma=1",
            "gaussian:sigma=-1",
            "gaussian:sigma=1,count=2.5",
            "",
            [],
            None,
            42,
            [None],
            ["gaussian:sigma=1", 3],
        ]
    ),
    st.builds(lambda s, c: f"gaussian:sigma={s!r},count={c}", floats(0.5, 20.0), whole(1, 50)),
)


def _bound_ok(b):
    assert isinstance(b, api.Bound), type(b)
    value = np.asarray(b.value, dtype=float)
    assert value.size >= 1 and not np.any(np.isnan(value)), b
    for other in (b.lower, b.estimate):
        if other is not None:
            assert np.shape(other) == np.shape(b.value)


def _call(fn, *args, **kwargs):
    """Call ``fn``; return its result, or None for an InputError / UncertifiedError (anything else
    fails the test, a RuntimeWarning included)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            message = str(exc)
            assert message and "--" not in message.split(":")[0], message  # a parameter, not an option
            return None
        except UncertifiedError:
            return None


@FAST
@given(q=RATE, sigma=SIGMA, steps=STEPS, delta=DELTA, conversion=NAME)
def test_sgd_epsilon_rdp(q, sigma, steps, delta, conversion):
    b = _call(api.sgd_epsilon, q, sigma, steps, delta, conversion=conversion or "optimal")
    if b is not None:
        _bound_ok(b)


@SLOW
@given(q=pool(0.01, 0.1), sigma=pool(1.0, 2.0), steps=pool(10, 100), delta=pool(1e-5, 1e-3))
def test_sgd_epsilon_pld(q, sigma, steps, delta):
    b = _call(api.sgd_epsilon, q, sigma, steps, delta, accountant="pld", eps_error=0.05)
    if b is not None:
        _bound_ok(b)


@FAST
@given(
    q=RATE,
    steps=STEPS,
    delta=DELTA,
    target=SIGMA,
    n=hostile_or(whole(1, 10**6)),
    b=hostile_or(whole(1, 1000)),
    sampling=st.sampled_from(["poisson", "fixed-size", "truncated-poisson", "shuffle", 1]),
    accountant=NAME,
)
def test_sgd_epsilon_samplers_and_options(q, steps, delta, target, n, b, sampling, accountant):
    accountant = accountant if accountant != "pld" else "rdp"
    r = _call(
        api.sgd_epsilon,
        q,
        target,
        steps,
        delta,
        sampling=sampling,
        dataset_size=n,
        max_batch_size=b,
        accountant=accountant,
    )
    if r is not None:
        _bound_ok(r)


@SLOW
@given(q=pool(0.01, 0.1), steps=pool(10, 100), delta=pool(1e-5), target=pool(2.0, 4.0), rtol=pool(1e-4, 0.01))
def test_sgd_noise_multiplier(q, steps, delta, target, rtol):
    b = _call(api.sgd_noise_multiplier, q, steps, delta, target, rtol=rtol)
    if b is not None:
        _bound_ok(b)
        assert np.all(np.asarray(b.value) > 0)


@SLOW
@given(q=pool(0.01, 0.1), sigma=pool(1.0, 2.0), delta=pool(1e-5), target=pool(2.0, 4.0))
def test_sgd_steps(q, sigma, delta, target):
    b = _call(api.sgd_steps, q, sigma, delta, target)
    if b is not None:
        _bound_ok(b)
        steps = np.asarray(b.value)
        assert np.all(steps >= 0) and np.all(steps == np.floor(steps))


@SLOW
@given(
    sigma=pool(2.0),
    delta=pool(1e-5),
    target=pool(4.0),
    steps=st.one_of(st.none(), st.none(), pool(10)),
    epochs=st.one_of(st.none(), pool(1.0, 2.5)),
    n=st.one_of(st.none(), pool(1000)),
)
def test_sgd_sample_rate(sigma, delta, target, steps, epochs, n):
    b = _call(api.sgd_sample_rate, sigma, delta, target, steps=steps, epochs=epochs, dataset_size=n)
    if b is not None:
        _bound_ok(b)
        q = np.asarray(b.value)
        assert np.all((q >= 0) & (q <= 1))


@SLOW
@given(q=pool(0.1), sigma=pool(2.0), steps=pool(10), fpr=pool(0.01, 0.5), accountant=NAME)
def test_sgd_tpr(q, sigma, steps, fpr, accountant):
    b = _call(api.sgd_tpr, q, sigma, steps, fpr, accountant=accountant, eps_error=0.05)
    if b is not None:
        _bound_ok(b)


@FAST
@given(
    alphas=hostile_or(floats(1.01, 200.0)),
    scale=hostile_or(floats(0.0, 2.0)),
    delta=hostile_or(floats(0.0, 1.0)),
    eps=EPS,
    method=NAME,
)
def test_conversions(alphas, scale, delta, eps, method):
    try:
        rdp = np.asarray(alphas, dtype=float) * np.asarray(scale, dtype=float)
    except (TypeError, ValueError):
        rdp = scale
    for fn, target in ((api.epsilon_from_rdp, delta), (api.delta_from_rdp, eps)):
        b = _call(fn, alphas, rdp, target, method=method)
        if b is not None:
            _bound_ok(b)


@FAST
@given(alpha=ALPHA, eps=EPS, delta=hostile_or(floats(0.0, 1.0)))
def test_rdp_from_dp(alpha, eps, delta):
    b = _call(api.rdp_from_dp, alpha, eps, delta)
    if b is not None:
        _bound_ok(b)
        assert np.all(np.asarray(b.value) >= 0)


@FAST
@given(specs=SPECS, alphas=st.one_of(st.none(), hostile_or(floats(1.01, 100.0))))
def test_mechanism_and_rdp_curve(specs, alphas):
    if isinstance(specs, str) or not isinstance(specs, list):
        spec = _call(api.mechanism, specs)
        assert spec is None or isinstance(spec, MechanismSpec)
    curve = _call(api.rdp_curve, specs, alphas)
    if curve is not None:
        assert isinstance(curve, np.ndarray) and not np.any(np.isnan(curve)) and np.all(curve >= 0)


@SLOW
@given(specs=SPECS, delta=st.one_of(st.none(), DELTA), eps=st.one_of(st.none(), EPS), method=NAME)
def test_compose(specs, delta, eps, method):
    b = _call(api.compose, specs, delta=delta, epsilon=eps, method=method, eps_error=0.05)
    if b is not None:
        _bound_ok(b)


@SLOW
@given(specs=SPECS, fpr=FPR, method=NAME)
def test_compose_tpr(specs, fpr, method):
    b = _call(api.compose_tpr, specs, fpr, method=method, eps_error=0.05)
    if b is not None:
        _bound_ok(b)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: api.sgd_epsilon(0.01, 1.1, 10.5, 1e-5), "steps"),
        (
            lambda: api.sgd_epsilon(
                0.01, 1.1, 100, 1e-5, sampling="truncated-poisson", dataset_size=1000.5, max_batch_size=20
            ),
            "dataset_size",
        ),
        (lambda: api.sgd_epsilon(0.01, 1.1, 100, 1e-5, accountant="abadi"), "accountant"),
        (lambda: api.sgd_noise_multiplier(0.01, 100.5, 1e-5, 3.0), "steps"),
        (lambda: api.sgd_noise_multiplier(0.01, 100, 0.0, 3.0), "delta"),
        (lambda: api.sgd_steps(0.01, -1.0, 1e-5, 3.0), "noise_multiplier"),
        (lambda: api.sgd_sample_rate(1.0, 1e-5, 3.0, steps=100, dataset_size=10.5), "dataset_size"),
        (lambda: api.sgd_sample_rate(1.0, 1e-5, 0.0, steps=100), "target_epsilon"),
        (lambda: api.rdp_from_dp(1.0, 1.0, 1e-5), "alpha"),
        (lambda: api.sgd_tpr(0.01, 1.0, 100, [0.1, 1.0]), "fpr"),
        (lambda: api.compose("gaussian:sigma=1", delta=2.0), "delta"),
    ],
)
def test_errors_name_the_parameter(call, name):
    with pytest.raises(InputError) as info:
        call()
    assert str(info.value).startswith(f"{name}: "), str(info.value)
    assert isinstance(info.value, ValueError)  # InputError stays a ValueError for older callers


def test_the_inverse_questions_return_bounds():
    sigma = api.sgd_noise_multiplier(0.1, 10, 1e-5, 4.0)
    steps = api.sgd_steps(0.1, 2.0, 1e-5, 4.0)
    rate = api.sgd_sample_rate(2.0, 1e-5, 4.0, epochs=1, dataset_size=1000)
    zeta = api.rdp_from_dp(10.0, 1.0, 1e-5)
    for b in (sigma, steps, rate, zeta):
        assert isinstance(b, api.Bound) and b.value is not None
    assert api.sgd_epsilon(0.1, sigma.value, 10, 1e-5).value <= 4.0
    assert api.sgd_epsilon(0.1, 2.0, steps.value, 1e-5).value <= 4.0
    assert api.rdp_from_dp(10.0, 1.0, 1e-5).value == zeta.value
