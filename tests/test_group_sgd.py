"""``sgd-epsilon --group-size K``: the guarantee of a DP-SGD run for a person who contributed K examples
(docs/math.md §3.11): the tight mixture (Ganesh 2024, Thm 3.1) for Poisson sampling, the generic group routes
(rdp-group, dp-group) for comparison, refusals where no theorem here applies."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc import api
from dpcalc.cli import main
from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.mechanisms.mixture_gaussian import binomial_weights

#: a TFP-style run, shortened: N = 10,000, B = 64 (q = 0.0064), σ = 1, δ = 1e-6
RUN = ["sgd-epsilon", "--sigma", "1", "--batch-size", "64", "--dataset-size", "10000", "--delta", "1e-6"]


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(args):
    result = _run([*args, "-f", "csv"])
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def _eps(rows, method, k=None):
    (row,) = [r for r in rows if r["method"] == method and (k is None or r["group_size"] == str(k))]
    return float(row["epsilon"]), (float(row["epsilon_lower"]) if row["epsilon_lower"] else None)


@pytest.mark.parametrize("accountant", ["rdp", "pld", "all"])
def test_group_size_one_is_the_example_level_output(accountant):
    """K = 1 gives exactly today's rows (only the group_size column says 1)."""
    plain = _rows([*RUN, "--steps", "300", "--method", accountant])
    one = _rows([*RUN, "--steps", "300", "--method", accountant, "--group-size", "1"])
    assert len(plain) == len(one)
    for a, b in zip(plain, one):
        assert a.pop("group_size") == "" and b.pop("group_size") == "1"
        assert a == b


def test_the_group_routes_at_one_example_are_the_rdp_bound():
    rows = _rows([*RUN, "--steps", "300", "--group-size", "1", "--method", "all"])
    rdp = _eps(rows, "rdp")[0]
    for route in ("rdp-group", "dp-group"):
        got = _rows([*RUN, "--steps", "300", "--method", route])
        assert _eps(got, route)[0] == rdp


def test_the_tight_rows_are_the_mixture_kind_composed():
    """The pld row is the PLD of the mixture-gaussian spec with group=K composed T times (compose), and the
    rdp row its Rényi curve converted: one implementation."""
    rows = _rows([*RUN, "--steps", "200", "--group-size", "3", "--method", "all"])
    spec = "mixture-gaussian:sigma=1,group=3,q=0.0064,count=200"
    comp = api.compose([spec], delta=1e-6, method="pld")
    up, lo = _eps(rows, "pld")
    assert lo <= float(comp.estimate) <= up
    assert float(comp.lower) <= up and lo <= float(comp.value)
    rdp = api.compose([spec], delta=1e-6, method="rdp")
    assert _eps(rows, "rdp")[0] == pytest.approx(float(rdp.value), rel=1e-9)


def test_the_bracket_agrees_with_dp_accountings_mixture_of_gaussians():
    """dp-accounting's MixtureOfGaussiansDpEvent (a test-only dependency), its pessimistic PLD at interval h:
    its ε lies above the truth, hence above our lower end, and at most T·h above the truth (each of the T losses
    rounded up by at most h), hence at most T·h above our upper end (1e-3 here, for speed; 1e-4 in
    tests/test_group_compose.py)."""
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant as pa

    k, q, steps, delta, h = 3, 0.0064, 200, 1e-6, 1e-3
    event = dp_event.SelfComposedDpEvent(
        dp_event.MixtureOfGaussiansDpEvent(1.0, [float(i) for i in range(k + 1)], binomial_weights(k, q)),
        steps,
    )
    acc = pa.PLDAccountant(value_discretization_interval=h)
    acc.compose(event)
    theirs = acc.get_epsilon(delta)
    b = api.sgd_epsilon(q, 1.0, steps, delta, accountant="pld", group_size=k)
    assert float(b.lower) <= theirs <= float(b.value) + steps * h


@pytest.mark.parametrize("k", [2, 3, 10])
def test_the_tight_bound_is_below_both_group_routes(k):
    rows = _rows([*RUN, "--epochs", "5", "--group-size", str(k), "--method", "all"])
    pld, _ = _eps(rows, "pld")
    rdp, _ = _eps(rows, "rdp")
    assert pld <= rdp <= _eps(rows, "rdp-group")[0]
    assert pld <= _eps(rows, "dp-group")[0]
    assert all(math.isfinite(_eps(rows, m)[0]) for m in ("pld", "rdp"))  # finite where the mixture is


def test_dp_group_is_at_least_k_times_the_example_level_bound():
    """K·ε'(δ') with δ' < δ/K is at least K·ε(δ): the route cannot beat its own definition."""
    q, sigma, steps, delta = 0.0064, 1.0, np.array([100.0, 782.0]), 1e-6
    one = sgd.epsilon("rdp", q, sigma, steps, delta).epsilon
    for k in (2, 3, 5):
        got = sgd.epsilon("dp-group", q, sigma, steps, delta, group_size=k).epsilon
        assert np.all(got >= k * one)


def test_monotone_in_the_group_size_and_steps():
    rows = _rows([*RUN, "--steps", "100,400", "--group-size", "1:4:1", "--method", "pld"])
    assert len(rows) == 8
    for steps in ("100", "400"):
        eps = [float(r["epsilon"]) for r in rows if r["steps"] == steps]
        assert eps == sorted(eps) and len(set(eps)) == 4
    for k in ("1", "2", "3", "4"):
        short, long = (float(r["epsilon"]) for r in rows if r["group_size"] == k)
        assert short < long


def test_decreasing_in_the_noise():
    eps = [
        float(api.sgd_epsilon(0.01, s, 300, 1e-5, accountant="pld", group_size=3).value)
        for s in (0.8, 1.0, 1.5, 3.0)
    ]
    assert eps == sorted(eps, reverse=True)


def test_a_sweep_of_k_is_one_configuration_per_k():
    """-q prints the tightest certified row of each K (group_size is an input column)."""
    result = _run([*RUN, "--steps", "200", "--group-size", "1,2,3", "--method", "all", "-q"])
    assert result.exit_code == 0, result.output
    lines = [line.split("\t") for line in result.stdout.strip().split("\n")]
    rows = _rows([*RUN, "--steps", "200", "--group-size", "1,2,3", "--method", "all"])
    assert [key for key, _ in lines] == ["group_size=1", "group_size=2", "group_size=3"]
    assert [float(v) for _, v in lines] == [_eps(rows, "pld", k)[0] for k in (1, 2, 3)]


def test_noise_for_a_target_person_level_epsilon():
    rows = _rows(
        [
            *RUN[:1],
            *RUN[3:],
            "--steps",
            "300",
            "--group-size",
            "3",
            "--method",
            "pld",
            "--target-epsilon",
            "4",
        ]
    )
    (row,) = rows
    sigma = float(row["noise_multiplier"])
    assert float(api.sgd_epsilon(0.0064, sigma, 300, 1e-6, accountant="pld", group_size=3).value) <= 4.0
    smaller = sigma * (1 - 1e-3)
    assert float(api.sgd_epsilon(0.0064, smaller, 300, 1e-6, accountant="pld", group_size=3).value) > 4.0


@pytest.mark.parametrize("accountant", ["rdp", "rdp-group", "dp-group"])
def test_steps_for_a_target_person_level_epsilon(accountant):
    rows = _rows([*RUN, "--group-size", "2", "--method", accountant, "--target-epsilon", "3"])
    (row,) = rows
    t = int(row["steps"])
    assert t >= 1
    eps = [
        float(api.sgd_epsilon(0.0064, 1.0, n, 1e-6, accountant=accountant, group_size=2).value)
        for n in (t, t + 1)
    ]
    assert eps[0] <= 3.0 < eps[1]


def test_the_generic_routes_cover_other_samplers():
    rows = _rows(
        [*RUN, "--epochs", "2", "--sampling", "balls-in-bins", "--group-size", "2", "--method", "all"]
    )
    assert [r["method"] for r in rows] == ["rdp-group", "dp-group"]
    one = _rows([*RUN, "--epochs", "2", "--sampling", "balls-in-bins"])
    assert all(float(r["epsilon"]) >= float(one[0]["epsilon"]) for r in rows)


def test_a_k_beyond_the_mixture_says_why_in_its_rows():
    rows = _rows([*RUN, "--steps", "50", "--group-size", "2,1000", "--method", "all"])
    tight = [r for r in rows if r["group_size"] == "1000" and r["method"] in ("rdp", "pld")]
    assert tight and all(r["epsilon"] == "" and r["note"].startswith("does not apply") for r in tight)


@pytest.mark.parametrize(
    "extra,words",
    [
        (
            ["--sampling", "fixed-size", "--group-size", "3"],
            "no tight person-level accountant for --sampling fixed-size",
        ),
        (["--sampling", "shuffle", "--group-size", "3", "--method", "all"], "no Rényi curve"),
        (["--neighbors", "replace-one", "--group-size", "3", "--method", "pld"], "adding or removing"),
        (["--group-size", "3", "--method", "abadi"], "an example-level formula"),
        (["--group-size", "3", "--tuning-runs", "poisson:mean=3"], "--tuning-runs"),
        (["--group-size", "1000", "--method", "pld"], "at most 1000"),
        (["--group-size", "3", "--rdp-curve"], "compose subsampled-gaussian"),
        (["--group-size", "0"], "--group-size"),
        (["--group-size", "10001"], "--group-size"),
        (["--group-size", "2.5"], "--group-size"),
    ],
)
def test_refusals_are_one_line(extra, words):
    """Each a usage error: exit status 2, one line naming what is at fault."""
    result = _run([*RUN, "--steps", "100", *extra])
    assert result.exit_code == 2
    lines = result.output.strip().split("\n")
    assert len(lines) == 1 and words in lines[0], result.output


def test_fpr_refuses_a_person_level_question():
    """--fpr prints the example-level trade-off curve: never silently in place of the person's."""
    result = _run([*RUN[:-2], "--steps", "100", "--group-size", "1,3", "--fpr", "0.01"])
    assert result.exit_code == 2
    assert result.output.strip().split("\n") == [
        "Error: --group-size 3 cannot be used with --fpr here (it gives the example-level trade-off curve); use "
        "compose subsampled-gaussian:sigma=S,q=Q,count=T --group-size 3 --fpr (the person's mixture)"
    ]


def test_finite_for_a_hundred_examples():
    """K = 100: the mixture's Rényi bound is finite, and so is its PLD bracket (the loss spans hundreds of nats;
    the components beyond the sixth carry less than the grid's tail budget and are cut to +∞), below it."""
    rows = _rows([*RUN, "--epochs", "5", "--group-size", "100", "--method", "all"])
    rdp = _eps(rows, "rdp")[0]
    upper, lower = _eps(rows, "pld")
    assert math.isfinite(rdp) and math.isfinite(upper)
    assert 0 < lower <= upper <= rdp
    assert upper - lower <= 0.005 * upper


@settings(max_examples=8, deadline=None)
@given(st.floats(0.6, 4.0), st.floats(1.01, 2.0), st.integers(2, 6))
def test_decreasing_in_the_noise_everywhere(sigma, factor, k):
    lo = api.sgd_epsilon(0.01, sigma, 200, 1e-5, accountant="pld", group_size=k)
    hi = api.sgd_epsilon(0.01, sigma * factor, 200, 1e-5, accountant="pld", group_size=k)
    assert float(hi.value) <= float(lo.value)
    assert float(hi.lower) <= float(lo.lower)
