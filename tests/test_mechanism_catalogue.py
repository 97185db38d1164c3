"""The mechanism catalogue: one module per kind, read by the parser, compose, odometer and the accountants."""

import math

import numpy as np
import pytest

from dpcalc.engine.mechanisms import catalogue
from dpcalc.engine.mechanisms.base import DOMAINS, Key, Mechanism, check_alphas, up
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism

EXAMPLES = {
    "gaussian": "gaussian:sigma=2,count=3",
    "laplace": "laplace:scale=4",
    "randomized-response": "rr:epsilon=0.7",
    "exponential": "em:epsilon=0.4,count=3",
    "subsampled-gaussian": "sgm:q=0.02,sigma=1.2,count=10",
    "mixture-gaussian": "mog:sigma=2,sensitivities=0|1|2,probs=0.5|0.3|0.2,count=3",
    "tree-aggregation": "dp-ftrl:sigma=1.5,steps=100,epochs=3,count=2",
    "random-allocation": "balls-in-bins:sigma=1.1,steps=100,count=3",
    "discrete-gaussian": "discrete-gaussian:sigma=2,sensitivity=2,count=3",
    "discrete-laplace": "discrete-laplace:scale=4,sensitivity=2,count=2",
    "zcdp": "zcdp:rho=0.05",
    "rdp-curve": "rdp-curve:file=docs/examples/sgd-curve.csv,count=2",
    "dp": "dp:epsilon=0.5",
}


def test_every_kind_module_is_in_the_catalogue_in_order():
    assert list(catalogue.CATALOGUE) == [
        "gaussian",
        "discrete-gaussian",
        "laplace",
        "discrete-laplace",
        "randomized-response",
        "exponential",
        "subsampled-gaussian",
        "mixture-gaussian",
        "random-allocation",
        "tree-aggregation",
        "zcdp",
        "rdp-curve",
        "dp",
    ]
    assert set(EXAMPLES) == set(catalogue.CATALOGUE)
    for alias, kind in catalogue.KIND_ALIASES.items():
        assert catalogue.lookup(alias.upper()) is catalogue.CATALOGUE[kind]


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_kind_declares_a_grammar_the_parser_reads(kind):
    mech = catalogue.CATALOGUE[kind]
    assert mech.kind == kind and mech.keys
    for key in mech.keys:
        assert key.check in DOMAINS or (key.check == "choice" and key.default in key.choices)
    spec = parse_mechanism(EXAMPLES[kind])
    assert spec.kind == kind
    # the label is a spec that parses back to the same mechanism
    again = parse_mechanism(spec.label())
    assert again.kind == spec.kind and again.count == spec.count
    for k, v in spec.params.items():
        assert (
            again.params[k] == pytest.approx(v, rel=1e-15) if isinstance(v, float) else again.params[k] == v
        )


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_rdp_curve_is_count_times_one_release_and_non_decreasing(kind):
    spec = parse_mechanism(EXAMPLES[kind])
    one = catalogue.CATALOGUE[kind].rdp(spec.params, check_alphas(DEFAULT_ORDERS))
    total = catalogue.rdp_curve(spec, DEFAULT_ORDERS)
    assert np.all(total >= spec.count * one * (1 - 1e-15))
    assert np.all(total <= spec.count * one * (1 + 1e-12) + 1e-300)
    assert np.all(np.diff(total) >= -1e-12 * np.abs(total[1:]))  # RDP is non-decreasing in the order


@pytest.mark.parametrize("kind", [k for k in EXAMPLES if k not in ("zcdp", "rdp-curve", "tree-aggregation")])
def test_pld_pair_profile_is_below_the_rdp_route(kind):
    """δ(ε) of the PLD pair of one release never exceeds what its RDP curve certifies (both are of
    the same mechanism; the RDP route is a valid but looser bound)."""
    from dpcalc.engine.composition.pld import compose_pld
    from dpcalc.engine.conversion import methods as conversions

    spec = parse_mechanism(EXAMPLES[kind])
    lower, _, upper = compose_pld([spec], epsilon=0.5)
    rdp_delta = conversions.delta_from_curve(
        DEFAULT_ORDERS, catalogue.rdp_curve(spec, DEFAULT_ORDERS), 0.5
    ).value
    # random allocation's models only dominate its pair (no lower end): their upper end is then compared
    assert float(lower if np.isfinite(lower) else upper) <= float(rdp_delta) * (1 + 1e-9)


def test_kinds_without_an_rdp_curve_or_pld_say_so():
    dp = parse_mechanism("dp:epsilon=1,delta=1e-6")
    assert catalogue.rdp_refusal(dp) == "dp:epsilon=1,delta=1e-6 has delta > 0: no Rényi-DP curve"
    with pytest.raises(InputError, match="no Rényi-DP curve"):
        catalogue.rdp_curve(dp, DEFAULT_ORDERS)
    assert catalogue.pld_pair("zcdp", {"rho": 1.0}) is None
    with pytest.raises(InputError, match="Poisson sampling only"):
        catalogue.pld_pair("sgm", {"q": 0.1, "sigma": 1.0, "sampling": "fixed-size"})


def test_per_release_and_gaussian_ratio_come_from_the_kind():
    assert catalogue.per_release_dp(parse_mechanism("laplace:scale=4,sensitivity=2")) == ((0.5, 0.0), None)
    pair, reason = catalogue.per_release_dp(parse_mechanism("zcdp:rho=1"))
    assert pair is None and "zcdp has no per-release" in reason
    specs = [parse_mechanism("gaussian:sigma=2,count=3"), parse_mechanism("gaussian:sigma=1,sensitivity=2")]
    assert catalogue.gaussian_r2(specs) == pytest.approx(3 / 4 + 4, rel=1e-14)
    assert catalogue.gaussian_r2(specs + [parse_mechanism("laplace:scale=1")]) is None
    assert catalogue.relations(
        [parse_mechanism("sgm:q=0.1,sigma=1"), parse_mechanism("gaussian:sigma=1")]
    ) == {"poisson"}


class _Exponential(Mechanism):
    """A toy kind, as a new module would declare it: pure ε-DP with ε = 1/temperature."""

    kind = "toy"
    keys = (Key("temperature", "pos", aliases=("t",)),)
    order = 99

    def rdp(self, params, alphas):
        from dpcalc.engine.mechanisms.approx_dp import rdp_pure_dp

        return rdp_pure_dp(1.0 / params["temperature"], alphas)

    def per_release(self, params):
        return (1.0 / params["temperature"], 0.0), None


def test_a_new_kind_is_one_declaration(monkeypatch, invoke):
    """Registering one Mechanism is all the parser and compose need (the module list names it)."""
    monkeypatch.setitem(catalogue.CATALOGUE, "toy", _Exponential())
    spec = parse_mechanism("toy:t=2,count=4")
    assert spec.params == {"temperature": 2.0} and spec.count == 4
    with pytest.raises(InputError, match="unknown key 'x' for kind toy"):
        parse_mechanism("toy:x=1")
    res = invoke(["compose", "toy:t=2,count=4", "--delta", "1e-5", "--method", "all", "-f", "csv"])
    assert res.exit_code == 0, res.stderr
    rows = {line.split(",")[0]: line for line in res.stdout.splitlines()[1:]}
    basic = float(rows["basic"].split(",")[2])  # 4 releases of 0.5-DP, rounded up
    assert 2.0 <= basic <= 2.0 * (1 + 1e-14)
    assert "toy has no per-release" not in res.stdout
    eps_rdp = float(rows["rdp"].split(",")[2])
    assert 0 < eps_rdp <= 2.0 + 1e-12


def test_up_rounds_away_from_the_value():
    assert up(1.0, 1.0) > 1.0 and up(0.0, 0.0) == 0.0 and math.isinf(up(math.inf, 1.0))
