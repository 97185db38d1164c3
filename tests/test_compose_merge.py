"""Exact merging before PLD (dpcalc.engine.composition.merge) and the work limits of compose's methods."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest

from dpcalc.engine.composition import merge
from dpcalc.engine.composition import pld as accountant
from dpcalc.engine.composition.merge import Merged, merge_exact
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.mechanisms import catalogue
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian
from dpcalc.engine.pld import grid
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanisms

GAUSSIANS = ["gaussian:sigma=2,count=10", "gaussian:sigma=3,sensitivity=2,count=5", "gaussian:sigma=1.7"]


def _exact_r2(texts) -> Fraction:
    return sum(
        (
            s.count * (Fraction(s.params["sensitivity"]) / Fraction(s.params["sigma"])) ** 2
            for s in parse_mechanisms(texts)
        ),
        Fraction(0),
    )


def test_identical_specs_sum_their_counts_in_first_order():
    out = merge_exact(
        parse_mechanisms(["laplace:scale=2", "rr:epsilon=1,count=3", "laplace:scale=2,count=4"])
    )
    assert [(m.kind, m.count) for m in out] == [("laplace", 5), ("randomized-response", 3)]


def test_plain_gaussians_become_one_gaussian_never_more_private():
    out = merge_exact(parse_mechanisms(GAUSSIANS))
    assert len(out) == 1 and out[0].count == 1
    r = Fraction(out[0].params["sensitivity"]) / Fraction(out[0].params["sigma"])
    exact = _exact_r2(GAUSSIANS)
    assert r * r >= exact  # never under-reports ε
    assert float(r * r / exact) - 1 < 1e-14  # and exact up to a few ulps


def test_one_gaussian_spec_and_subsampled_or_other_kinds_are_kept():
    texts = [
        "gaussian:sigma=2,count=10",
        "gaussian:sigma=1,q=0.1",
        "sgm:q=0.01,sigma=1",
        "sgm:q=0.02,sigma=1",
    ]
    out = merge_exact(parse_mechanisms(texts + ["laplace:scale=1", "laplace:scale=2"]))
    assert [(m.kind, m.count) for m in out] == [
        ("gaussian", 10),
        ("gaussian", 1),
        ("subsampled-gaussian", 1),
        ("subsampled-gaussian", 1),
        ("laplace", 1),
        ("laplace", 1),
    ]


def test_gaussians_whose_sum_overflows_are_left_as_they_are():
    out = merge_exact(
        parse_mechanisms(["gaussian:sigma=1e-200,count=1e12", "gaussian:sigma=1e-200,sensitivity=2"])
    )
    assert len(out) == 2


def test_merged_gaussians_pld_brackets_the_closed_form():
    delta = 1e-6
    b = compose_pld(parse_mechanisms(GAUSSIANS), delta=delta)
    exact = float(eps_gaussian(delta, math.sqrt(float(_exact_r2(GAUSSIANS)))))
    assert b.lower <= exact <= b.upper
    assert b.upper - b.lower <= 0.006 * exact


@pytest.mark.parametrize("target", [{"delta": 1e-5}, {"epsilon": 1.5}])
def test_merged_equals_unmerged_within_the_bracket(monkeypatch, target):
    specs = parse_mechanisms([*GAUSSIANS, "laplace:scale=20,count=3", "gaussian:sigma=2,count=10"])
    merged = compose_pld(specs, **target)

    def unmerged(items):
        return [Merged(s.kind, s.params, s.count, s.text) for s in items]

    monkeypatch.setattr(accountant, "merge_exact", unmerged)
    plain = compose_pld(specs, **target)
    assert max(merged.lower, plain.lower) <= min(merged.upper, plain.upper)  # both certified: they meet


def test_too_many_distinct_mechanisms_are_refused_before_any_grid(monkeypatch):
    specs = [f"sgm:q={0.001 + i * 1e-5:.5f},sigma=1" for i in range(accountant.MAX_MECHANISMS + 1)]
    monkeypatch.setattr(grid, "_prepare", lambda *a, **k: pytest.fail("a grid was built"))
    with pytest.raises(InputError, match=rf"above the limit of {accountant.MAX_MECHANISMS} .*RDP accountant"):
        compose_pld(parse_mechanisms(specs), delta=1e-5)


def test_many_gaussian_specs_merge_under_the_limit():
    specs = [f"gaussian:sigma={1 + i / 100}" for i in range(5 * accountant.MAX_MECHANISMS)]
    b = compose_pld(parse_mechanisms(specs), delta=1e-5)
    exact = float(eps_gaussian(1e-5, math.sqrt(float(_exact_r2(specs)))))
    assert b.lower <= exact <= b.upper


def test_a_grid_past_the_work_cap_is_refused_before_discretising(monkeypatch):
    monkeypatch.setattr(grid, "discretise", lambda *a, **k: pytest.fail("discretised past the work cap"))
    spec = parse_mechanisms(["sgm:q=0.001,sigma=1,count=32"])
    with pytest.raises(
        InputError,
        match=rf"grid points .* above the work cap of {re.escape(f'{grid.MAX_GRID_POINTS:.3g}')}; relax --eps-error to at least",
    ):
        compose_pld(spec, delta=1e-5, eps_error=1e-6)


def test_the_suggested_eps_error_fits_the_work_cap():
    spec = parse_mechanisms(["sgm:q=0.001,sigma=1,count=32"])
    with pytest.raises(InputError, match="work cap") as err:
        compose_pld(spec, delta=1e-5, eps_error=1e-6)
    fit = float(str(err.value).split("at least ")[1].split(",")[0])
    b = compose_pld(spec, delta=1e-5, eps_error=fit)
    assert b.upper - b.lower <= fit


def test_a_subsampled_atom_beyond_double_range_is_refused_not_lost():
    with pytest.raises(InputError, match="beyond the range of double precision"):
        compose_pld(parse_mechanisms(["laplace:scale=1e-6,q=1e-9,count=1000000"]), delta=1e-15)


def test_rdp_work_refusal_counts_distinct_subsampled_specs():
    n = catalogue.MAX_RDP_SUBSAMPLED
    ok = parse_mechanisms(
        [f"sgm:q={0.001 + i * 1e-6:.6f},sigma=1" for i in range(n)] + ["laplace:scale=1"] * 3
    )
    assert catalogue.rdp_work_refusal(ok) is None
    over = ok + parse_mechanisms(["laplace:scale=1,q=0.5"])
    assert f"above the limit of {n}" in catalogue.rdp_work_refusal(over)


def test_merge_module_cites_the_composition_theorem():
    assert "Dong, Roth" in merge.__doc__ and "Balle & Wang" in merge.__doc__


# ------------------------------------------------------------------------------- the command's limits


def _compose(texts, **kw):
    from dpcalc.commands.compose.command import compose

    kw.setdefault("delta", None)
    kw.setdefault("epsilon", None)
    kw.setdefault("method", "best")
    return compose(texts, **kw)


def test_best_runs_only_exact_where_it_answers(monkeypatch):
    from dpcalc.commands.compose import command as cmd

    for name in ("pld", "rdp"):
        monkeypatch.setitem(cmd.METHODS, name, lambda *a: pytest.fail("a slow method ran"))
    res = _compose(GAUSSIANS, delta=[1e-5, 1e-7])
    assert res.columns["method"] == ["exact", "exact"]


# tables past the old limits on targets are estimated, capped and computed: tests/test_heavy_compose.py


def test_exact_calibration_scales_the_combined_sensitivity():
    from dpcalc.commands.compose.calibration import calibrate

    res = calibrate(["gaussian:count=1e12,sensitivity=1e300"], [1.0], [1e-5], "exact")
    one = calibrate(["gaussian:sensitivity=1"], [1.0], [1e-5], "exact")
    assert res.columns["sigma"][0] == pytest.approx(one.columns["sigma"][0] * 1e306, rel=1e-12)
    with pytest.raises(InputError, match="combined sensitivity"):
        calibrate(["gaussian:count=1e12,sensitivity=1e305"], [1.0], [1e-5], "exact")


def test_random_allocation_sigma_range_and_pld_steps_limit():
    from dpcalc.engine.mechanisms.allocation_round import MAX_PLD_STEPS

    with pytest.raises(InputError, match=r"sigma='1e-300' \(must lie in \[1e-100, 1e\+100\]"):
        parse_mechanisms(["random-allocation:sigma=1e-300,steps=10"])
    spec = parse_mechanisms([f"random-allocation:sigma=1,steps={MAX_PLD_STEPS + 1}"])
    with pytest.raises(InputError, match=rf"steps up to {MAX_PLD_STEPS}"):
        compose_pld(spec, delta=1e-5)


def test_random_allocation_below_the_gaussian_threshold_is_the_k_gaussian_steps():
    from dpcalc.engine.mechanisms.allocation_round import SIGMA_GAUSSIAN_BELOW

    alphas = [1.5, 2.0, 10.0, 1e4]
    sigma = SIGMA_GAUSSIAN_BELOW / 2
    spec = parse_mechanisms([f"random-allocation:sigma={sigma!r},steps=1000,k=3"])[0]
    got = catalogue.rdp_curve(spec, alphas)
    want = [3 * a / (2 * sigma**2) for a in alphas]
    assert all(g >= w and g <= w * (1 + 1e-14) for g, w in zip(got, want))  # rounded up, by ulps
