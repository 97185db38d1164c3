"""The pld estimate of compose (dpcalc.commands.compose.methods.pld_target_seconds): plain Gaussians merge into one
distribution, every other spec costs its own, a subsampled one more.  Reference: the count written out by hand."""

from __future__ import annotations

import pytest

from dpcalc.commands.compose import methods
from dpcalc.input.spec import parse_mechanisms

S, SUB = methods.PLD_SPEC_SECONDS, methods.PLD_SUBSAMPLED_SECONDS


@pytest.mark.parametrize(
    ("texts", "want"),
    [
        (["gaussian:sigma=1"], S),
        (["gaussian:sigma=1", "gaussian:sigma=2", "gaussian:sigma=1"], S),  # one merged Gaussian
        (["laplace:scale=1", "laplace:scale=1"], 2 * S),
        (["gaussian:sigma=1", "laplace:scale=1", "subsampled-gaussian:sigma=1,q=0.01"], 2 * S + SUB),
        (["subsampled-gaussian:sigma=1,q=0.01", "subsampled-gaussian:sigma=2,q=0.02"], 2 * SUB),
    ],
)
def test_pld_estimate_counts(texts, want):
    assert methods.pld_target_seconds(parse_mechanisms(texts)) == pytest.approx(want, rel=1e-12)


def test_pld_estimate_of_many_specs_is_linear():
    # 10,000 distinct Gaussians: one merged distribution (the estimate once compared every pair of specs:
    # 5e7 comparisons, 9 s, nearly all of the command's time)
    specs = parse_mechanisms(
        [f"gaussian:sigma={10 + i / 1000:.4f}" for i in range(10_000)] + ["laplace:scale=1"]
    )
    assert methods.pld_target_seconds(specs) == pytest.approx(2 * S, rel=1e-12)
