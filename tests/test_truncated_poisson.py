"""Truncated Poisson batches (docs/math.md §3.7): the revealed mixture, its PLD and RDP, against
dp_accounting's TruncatedSubsampledGaussianDpEvent, brute force over every batch of a tiny dataset, and
plain Poisson sampling as the cap grows."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.mechanisms.gaussian_loss import sgm_loss
from dpcalc.engine.mechanisms.mixture_loss import mixture
from dpcalc.engine.mechanisms.sgm.poisson import rdp_poisson
from dpcalc.engine.mechanisms.sgm.truncated_poisson import loss_directions, rdp_truncated_poisson, truncation
from dpcalc.engine.mechanisms.sgm_replace_loss import sgm_replace_loss
from dpcalc.engine.pld.delta import delta_bracket
from dpcalc.engine.pld.epsilon import epsilon_bracket
from dpcalc.engine.pld.grid import Component
from dpcalc.errors import InputError

# ------------------------------------------------------------------------------------ the probabilities


def test_truncation_probabilities_by_enumeration():
    """p_T and q̄ against the definition: enumerate every Poisson sample of N = 6 examples."""
    n, q, b = 6, 0.37, 2
    p_t = q_bar = 0.0
    for mask in itertools.product((0, 1), repeat=n - 1):  # the others
        m = sum(mask)
        p = q**m * (1 - q) ** (n - 1 - m)
        if m >= b:
            p_t += p
            q_bar += p * q * b / (m + 1)  # the example drawn, then kept among the m + 1
    got_t, got_q = truncation(q, n, b)
    assert got_t == pytest.approx(p_t, rel=1e-13)
    assert got_q == pytest.approx(q_bar / p_t, rel=1e-11)
    assert got_q >= q_bar / p_t  # rounded up


def test_no_cut_when_the_cap_holds_everyone():
    assert truncation(0.3, 10, 10) == (0.0, 0.0)
    assert truncation(0.3, 10, 9)[0] == pytest.approx(0.3**9)


# --------------------------------------------------------------------------- against dp_accounting


def _dp_accounting_style(q, sigma, n, b):
    """dp_accounting's construction: the cut-batch component as the replace-one pair at σ/2 in both directions."""
    p_t, q_bar = (float(x) for x in truncation(q, n, b))
    return [
        mixture("dpa", (1 - p_t, p_t), (sgm_loss(q, sigma, d), sgm_replace_loss(q_bar, sigma / 2)))
        for d in ("remove", "add")
    ]


def test_dp_accounting_test_value_inside_the_bracket():
    """dp_accounting's pld_privacy_accountant_test (test_truncated_subsampled_gaussian_basic): N = 4 composed
    3 times and N = 3 twice, q = 0.5, B = 2, σ = 1: ε = 17.904330 at δ = 1e-6.  The same construction here
    brackets it; our add/remove analysis (sensitivity-2 add/remove pair for a cut batch) is at most that."""
    a, b = _dp_accounting_style(0.5, 1.0, 4, 2), _dp_accounting_style(0.5, 1.0, 3, 2)
    lo, _, up = max(
        (epsilon_bracket([Component(a[k], 3), Component(b[k], 2)], 1e-6, 1e-3) for k in range(2)),
        key=lambda x: x[2],
    )
    assert lo <= 17.904330 <= up + 1e-6
    ours_a, ours_b = (
        loss_directions(0.5, 1.0, 4, 2, "add-remove"),
        loss_directions(0.5, 1.0, 3, 2, "add-remove"),
    )
    ours = max(
        epsilon_bracket([Component(ours_a[k][0], 3), Component(ours_b[k][0], 2)], 1e-6)[2] for k in range(2)
    )
    assert ours < 17.904330


def test_against_dp_accounting_live():
    """A realistic run (N = 1000, q = 0.05, B = 60, σ = 1, 200 steps): replace-one is the same construction as
    dp_accounting's, whose ε is within our bracket's width below its upper end; add/remove is at most
    dp_accounting's (ours is tighter)."""
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    rel = pld_privacy_accountant.NeighborRel
    event = dp_event.TruncatedSubsampledGaussianDpEvent(
        dataset_size=1000, sampling_probability=0.05, truncated_batch_size=60, noise_multiplier=1.0
    )
    for relation, ours in ((rel.REPLACE_ONE, "replace-one"), (rel.ADD_OR_REMOVE_ONE, "add-remove")):
        acc = pld_privacy_accountant.PLDAccountant(neighboring_relation=relation)
        acc.compose(event, 200)
        theirs = acc.get_epsilon(1e-5)
        b = sgd_epsilon_pld(0.05, 1.0, 200, 1e-5, neighbors=ours, dataset_size=1000, max_batch_size=60)
        # the bracket is of the revealed mixture, which dominates the truncated batches: an upper end only
        assert np.isnan(b.lower) and np.isnan(b.estimate)
        # replace-one, the same construction: its ε is within the bracket's width (0.5 %) below our upper end
        if ours == "replace-one":
            assert theirs <= b.upper + 1e-4 <= theirs * 1.005 + 1e-4
        else:
            assert b.upper < theirs


# ------------------------------------------------------------------------------------------- brute force


def _batch_sums(grads, q, b):
    """(sum, probability) of the truncated Poisson batch's gradient sum, every sample enumerated."""
    out: dict = {}
    n = len(grads)
    for mask in itertools.product((0, 1), repeat=n):
        idx = [i for i in range(n) if mask[i]]
        p = q ** len(idx) * (1 - q) ** (n - len(idx))
        subsets = [idx] if len(idx) <= b else list(itertools.combinations(idx, b))
        for s in subsets:
            v = round(sum(grads[i] for i in s), 12)
            out[v] = out.get(v, 0.0) + p / len(subsets)
    return np.array(list(out)), np.array(list(out.values()))


_X = np.linspace(-25.0, 25.0, 100_001)


def _density(atoms, sigma):
    m, w = atoms
    z = (_X[None, :] - m[:, None]) / sigma
    return (w[:, None] * np.exp(-0.5 * z * z)).sum(axis=0) / (sigma * math.sqrt(2 * math.pi))


def _exact_worst(n, q, b, sigma, eps, relation):
    """The largest δ(ε) of one step over 1-D clipped gradients in {−1, 0, 1} (every batch enumerated)."""
    worst = np.zeros(len(eps))
    for others in itertools.product((-1.0, 0.0, 1.0), repeat=n - 1):
        others = list(others)
        for gz in (-1.0, 1.0):
            with_z = _density(_batch_sums(others + [gz], q, b), sigma)
            if relation == "add-remove":
                without = _density(_batch_sums(others, q, b), sigma)
                pairs = [(with_z, without), (without, with_z)]
            else:
                pairs = [(with_z, _density(_batch_sums(others + [-gz], q, b), sigma))]
            for p, r in pairs:
                d = [np.trapezoid(np.maximum(p - math.exp(e) * r, 0.0), _X) for e in eps]
                worst = np.maximum(worst, d)
    return worst


@pytest.mark.parametrize(
    "n,q,b,sigma,relation",
    [(4, 0.5, 2, 1.0, "add-remove"), (5, 0.6, 3, 1.5, "add-remove"), (4, 0.5, 2, 1.0, "replace-one")],
)
def test_one_step_bound_above_brute_force(n, q, b, sigma, relation):
    eps = [0.0, 0.5, 1.0, 2.0]
    exact = _exact_worst(n, q, b, sigma, eps, relation)
    dirs = loss_directions(q, sigma, n, b, relation)
    ours = [max(delta_bracket([Component(d[0], 1)], e)[2] for d in dirs) for e in eps]
    assert np.all(np.asarray(ours) >= exact - 1e-9)
    assert exact[0] > 0.1  # the check has teeth: the mechanism leaks


# ------------------------------------------------------------------------------- Poisson as B grows


def test_large_cap_is_poisson():
    q, sigma, steps, delta = 0.01, 1.0, 1000, 1e-5
    plain = sgd_epsilon_pld(q, sigma, steps, delta)
    same = sgd_epsilon_pld(q, sigma, steps, delta, dataset_size=1000, max_batch_size=1000)
    assert tuple(map(float, same)) == tuple(map(float, plain))
    caps = [20, 25, 30, 40]  # expected batch 10 of N = 1000
    ups = [
        float(sgd_epsilon_pld(q, sigma, steps, delta, dataset_size=1000, max_batch_size=c).upper)
        for c in caps
    ]
    assert all(a >= b for a, b in zip(ups, ups[1:]))
    assert ups[-1] == pytest.approx(float(plain.upper), rel=1e-3)
    assert ups[0] > float(plain.upper) * 1.01


# --------------------------------------------------------------------------------------------- Rényi DP


def test_rdp_reduces_to_poisson_and_dominates_pld():
    alphas = np.array([1.5, 2.0, 4.0, 8.0, 32.0])
    np.testing.assert_array_equal(
        rdp_truncated_poisson(0.1, 1.0, alphas, 50, 50), rdp_poisson(0.1, 1.0, alphas)
    )
    e = sgd.epsilon_rdp(
        0.05, 1.0, 200, 1e-5, sampling="truncated-poisson", dataset_size=1000, max_batch_size=60
    )
    b = sgd_epsilon_pld(0.05, 1.0, 200, 1e-5, dataset_size=1000, max_batch_size=60)
    assert float(e.epsilon) >= float(b.upper)


def test_rdp_above_the_exact_divergence():
    """One step, N = 4, B = 2: the Rényi divergence of the true pair (every batch enumerated, worst 1-D
    gradients) is at most the mixture bound, at α = 2, 3, 5."""
    q, sigma, n, b = 0.5, 1.0, 4, 2
    alphas = np.array([2.0, 3.0, 5.0])
    bound = rdp_truncated_poisson(q, sigma, alphas, n, b)
    worst = np.zeros(alphas.size)
    for others in itertools.product((-1.0, 1.0), repeat=n - 1):
        for gz in (-1.0, 1.0):
            p = _density(_batch_sums(list(others) + [gz], q, b), sigma)
            r = _density(_batch_sums(list(others), q, b), sigma)
            for a_, b_ in ((p, r), (r, p)):
                ok = (a_ > 0) & (b_ > 0)  # the far tails underflow; their mass is far below 1e-100
                la, lb = np.log(np.where(ok, a_, 1.0)), np.log(np.where(ok, b_, 1.0))
                for i, a in enumerate(alphas):
                    with np.errstate(under="ignore"):
                        f = np.where(ok, np.exp(a * la - (a - 1) * lb), 0.0)
                    m = np.trapezoid(f, _X)
                    worst[i] = max(worst[i], math.log(m) / (a - 1))
    assert np.all(bound >= worst - 1e-9)
    assert np.all(worst > 0.1)


@settings(max_examples=15, deadline=None)
@given(
    sigma=st.floats(0.5, 20.0),
    b=st.integers(1, 200),
    n=st.integers(2, 5000),
    q=st.floats(1e-4, 1.0),
)
def test_rdp_monotone_in_noise_never_nan(sigma, b, n, q):
    alphas = np.array([1.5, 2.0, 8.0, 64.0])
    lo = rdp_truncated_poisson(q, sigma * 1.5, alphas, n, b)
    hi = rdp_truncated_poisson(q, sigma, alphas, n, b)
    assert not np.any(np.isnan(hi)) and np.all(hi >= 0)
    assert np.all(lo <= hi * (1 + 1e-12) + 1e-15)


def test_bad_inputs():
    with pytest.raises(InputError, match="max-batch-size"):
        truncation(0.1, 100, 0)
    with pytest.raises(InputError, match="dataset-size"):
        truncation(0.1, 10.5, 3)


# ------------------------------------------------------------------------------------------ command line

TRUNC = [
    "sgd-epsilon",
    "--sigma",
    "1.1",
    "--batch-size",
    "256",
    "--dataset-size",
    "60000",
    "--epochs",
    "2",
    "--delta",
    "1e-5",
    "--sampling",
    "truncated-poisson",
]


def _cli(args):
    from click.testing import CliRunner

    from dpcalc.cli import main

    return CliRunner().invoke(main, [*args, "-f", "csv"])


def test_cli_rows_equal_the_engine():
    import csv
    import io

    r = _cli([*TRUNC, "--max-batch-size", "270,300", "--method", "all"])
    assert r.exit_code == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert {(x["accountant"], x["max_batch_size"]) for x in rows} == {
        ("rdp", "270"),
        ("rdp", "300"),
        ("pld", "270"),
        ("pld", "300"),
    }
    q, steps = 256 / 60000, math.ceil(2 * 60000 / 256)
    for x in rows:
        cap = int(x["max_batch_size"])
        assert x["sampling"] == "truncated-poisson" and "2508.15089" in x["note"]
        if x["accountant"] == "pld":
            b = sgd_epsilon_pld(q, 1.1, steps, 1e-5, dataset_size=60000, max_batch_size=cap)
            assert float(x["epsilon"]) == float(b.upper) and x["epsilon_lower"] == x["epsilon_estimate"] == ""
        else:
            e = sgd.epsilon_rdp(
                q, 1.1, steps, 1e-5, sampling="truncated-poisson", dataset_size=60000, max_batch_size=cap
            )
            assert float(x["epsilon"]) == pytest.approx(float(e.epsilon), rel=1e-12)
    by = {(x["accountant"], x["max_batch_size"]): float(x["epsilon"]) for x in rows}
    assert by[("pld", "270")] > by[("pld", "300")]  # a tighter cap cuts more batches


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--max-batch-size", "300", "--sampling", "poisson"], "--max-batch-size applies to"),
        ([], "needs --max-batch-size"),
        (["--max-batch-size", "300", "--tuning-runs", "poisson:mean=2"], "--tuning-runs"),
        (["--max-batch-size", "300", "--method", "abadi"], "--method abadi"),
        (["--max-batch-size", "0"], "--max-batch-size"),
        (["--max-batch-size", "300", "--fpr", "0.01"], "--fpr"),
    ],
)
def test_cli_refusals(extra, message):
    args = list(TRUNC)
    if "--sampling" in extra:  # replace the sampling
        i = args.index("--sampling")
        del args[i : i + 2]
    r = _cli([*args, *extra])
    assert r.exit_code == 2, r.stdout
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


# ------------------------------------------------------------------------------------ inverse questions

INVERSE = ["sgd-epsilon", "--dataset-size", "60000", "--delta", "1e-5", "--method", "all"]


def _rows(args):
    import csv
    import io

    r = _cli(args)
    assert r.exit_code == 0, r.stderr
    return {x["accountant"]: x for x in csv.DictReader(io.StringIO(r.stdout))}


def test_noise_for_a_target_round_trip():
    """The σ found meets the target (ε computed there, certified upper end for pld) and σ nudged down misses
    it: rdp within 1e-4 (its search tolerance), pld within 1e-3."""
    cap = ["--sampling", "truncated-poisson", "--max-batch-size", "300"]
    rows = _rows([*INVERSE, *cap, "--batch-size", "256", "--epochs", "5", "--target-epsilon", "2"])
    q, steps = 256 / 60000, math.ceil(5 * 60000 / 256)
    kw = dict(dataset_size=60000, max_batch_size=300)
    s = float(rows["rdp"]["noise_multiplier"])
    rdp = [
        float(sgd.epsilon_rdp(q, x, steps, 1e-5, sampling="truncated-poisson", warn=False, **kw).epsilon)
        for x in (s, s / (1 + 1e-4))
    ]
    assert rdp[0] <= 2 < rdp[1]
    s = float(rows["pld"]["noise_multiplier"])
    assert float(sgd_epsilon_pld(q, s, steps, 1e-5, **kw).upper) <= 2
    assert float(sgd_epsilon_pld(q, s * (1 - 1e-3), steps, 1e-5, **kw).upper) > 2
    plain = _rows([*INVERSE, "--batch-size", "256", "--epochs", "5", "--target-epsilon", "2"])
    assert s > float(plain["pld"]["noise_multiplier"])  # the cap costs noise


def test_steps_and_batch_size_for_a_target():
    cap = ["--sampling", "truncated-poisson", "--max-batch-size", "300", "--sigma", "1.1"]
    kw = dict(dataset_size=60000, max_batch_size=300)
    rows = _rows([*INVERSE, *cap, "--batch-size", "256", "--target-epsilon", "1"])
    q = 256 / 60000
    for name in ("rdp", "pld"):
        t = int(rows[name]["steps"])
        if name == "pld":
            assert (
                float(sgd_epsilon_pld(q, 1.1, t, 1e-5, **kw).upper)
                <= 1
                < float(sgd_epsilon_pld(q, 1.1, t + 1, 1e-5, **kw).upper)
            )
        else:
            e = [
                float(
                    sgd.epsilon_rdp(q, 1.1, x, 1e-5, sampling="truncated-poisson", warn=False, **kw).epsilon
                )
                for x in (t, t + 1)
            ]
            assert e[0] <= 1 < e[1]
    rows = _rows([*INVERSE, *cap, "--epochs", "60", "--target-epsilon", "3"])
    b = int(rows["pld"]["batch_size"])
    up = [
        float(sgd_epsilon_pld(x / 60000, 1.1, math.ceil(60 * 60000 / x), 1e-5, **kw).upper)
        for x in (b, b + 1)
    ]
    assert up[0] <= 3 < up[1]


def test_replace_one_pld_answers_the_inverse_questions():
    rows = _rows(
        [
            *INVERSE,
            "--batch-size",
            "256",
            "--epochs",
            "5",
            "--target-epsilon",
            "2",
            "--neighbors",
            "replace-one",
        ]
    )
    q, steps = 256 / 60000, math.ceil(5 * 60000 / 256)
    s = float(rows["pld"]["noise_multiplier"])
    assert float(sgd_epsilon_pld(q, s, steps, 1e-5, neighbors="replace-one").upper) <= 2
    assert float(sgd_epsilon_pld(q, s * (1 - 1e-3), steps, 1e-5, neighbors="replace-one").upper) > 2
    assert s < float(rows["rdp"]["noise_multiplier"])  # tighter than the weak-triangle RDP bound


# ----------------------------------------------------------------------------------------- the spec key

SPEC = "subsampled-gaussian:q=0.01,sigma=1,sampling=truncated-poisson,dataset_size=1000,max_batch_size=20"


def test_spec_key_equals_sgd_epsilon():
    """compose with sampling=truncated-poisson gives sgd-epsilon --sampling truncated-poisson's numbers."""
    from dpcalc import api

    pld = api.compose([SPEC + ",count=300"], delta=1e-5)
    ref = sgd_epsilon_pld(0.01, 1.0, 300, 1e-5, dataset_size=1000, max_batch_size=20)
    assert float(pld.value) == float(ref.upper) and math.isnan(pld.lower) and math.isnan(ref.lower)
    rdp = api.compose([SPEC + ",count=300"], delta=1e-5, method="rdp")
    e = sgd.epsilon_rdp(
        0.01, 1.0, 300, 1e-5, sampling="truncated-poisson", dataset_size=1000, max_batch_size=20
    )
    assert float(rdp.value) == pytest.approx(float(e.epsilon), rel=1e-12)
    plain = api.compose(["subsampled-gaussian:q=0.01,sigma=1,count=300"], delta=1e-5)
    assert float(pld.value) > float(plain.value)


def test_spec_key_label_and_refusals():
    from dpcalc.input.spec import parse_mechanism

    s = parse_mechanism(SPEC.replace("dataset_size", "n") + ",count=3")
    assert s.label() == (
        "subsampled-gaussian:q=0.01,sigma=1.0,sampling=truncated-poisson,dataset_size=1000.0,"
        "max_batch_size=20.0,count=3"
    )
    plain = parse_mechanism("subsampled-gaussian:q=0.01,sigma=1")
    assert "dataset_size" not in plain.label() and "max_batch_size" not in plain.label()
    for bad, word in (
        ("subsampled-gaussian:q=0.01,sigma=1,max_batch_size=20", "applies to sampling=truncated-poisson"),
        ("subsampled-gaussian:q=0.01,sigma=1,sampling=truncated-poisson,n=100", "needs dataset_size"),
        ("subsampled-gaussian:q=0.01,sigma=1,sampling=truncated-poisson,n=100.5,max_batch_size=3", "whole"),
    ):
        with pytest.raises(InputError, match=word):
            parse_mechanism(bad)


def test_spec_key_calibrates_sigma():
    from click.testing import CliRunner

    from dpcalc.cli import main

    spec = SPEC.replace("sigma=1,", "") + ",count=300"
    r = CliRunner().invoke(
        main, ["compose", spec, "--epsilon", "2", "--delta", "1e-5", "--method", "pld", "-f", "csv"]
    )
    assert r.exit_code == 0, r.stderr
    import csv
    import io

    (row,) = list(csv.DictReader(io.StringIO(r.stdout)))
    s = float(row["sigma"])
    assert float(sgd_epsilon_pld(0.01, s, 300, 1e-5, dataset_size=1000, max_batch_size=20).upper) <= 2
    assert (
        float(sgd_epsilon_pld(0.01, s * (1 - 1e-3), 300, 1e-5, dataset_size=1000, max_batch_size=20).upper)
        > 2
    )


def test_rdp_curve_converts_to_the_rdp_row(tmp_path):
    """--rdp-curve prints the curve the rdp row converts: convert --curve of it gives the same ε (balle)."""
    from click.testing import CliRunner

    from dpcalc.cli import main

    args = [*TRUNC, "--max-batch-size", "300"]
    args = [a for a in args if a not in ("--delta", "1e-5")]
    r = CliRunner().invoke(main, [*args, "--rdp-curve", "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    path = tmp_path / "curve.csv"
    path.write_text(r.stdout)
    conv = _cli(["convert", "--curve", str(path), "--delta", "1e-5", "--method", "balle"])
    row = _cli([*TRUNC, "--max-batch-size", "300", "--conversion", "balle", "--columns", "epsilon"])
    assert conv.exit_code == 0 and row.exit_code == 0, conv.stderr + row.stderr
    eps_curve = float(conv.stdout.strip().splitlines()[-1].split(",")[4])
    assert eps_curve == float(row.stdout.strip().splitlines()[-1])
