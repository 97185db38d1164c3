"""``random-allocation:sigma=S,steps=T[,k=K]`` (alias ``balls-in-bins``) as a mechanism of ``compose``
(dpcalc.engine.mechanisms.allocation_round; docs/math.md §3.8, §3.10): its Rényi curve and certified PLD are
those of ``sgd-epsilon --sampling balls-in-bins | random-allocation``, and what it does not cover is refused."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import main
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.dpsgd.pld_accounting import sgd_epsilon_pld
from dpcalc.engine.mechanisms.catalogue import rdp_curve
from dpcalc.engine.mechanisms.random_allocation.rdp import rdp_random_allocation
from dpcalc.engine.samplers.allocation import epsilon_random_allocation
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism as parse_spec


def _rows(args):
    r = CliRunner().invoke(main, ["compose", *args, "-f", "csv"])
    assert r.exit_code == 0, r.stderr
    return list(csv.DictReader(io.StringIO(r.stdout)))


def test_parse_alias_and_defaults():
    s = parse_spec("balls-in-bins:sigma=1.1,steps=234,count=60")
    assert s.kind == "random-allocation" and s.params["k"] == 1 and s.count == 60


@pytest.mark.parametrize(
    "text,word",
    [
        ("random-allocation:sigma=1.1,steps=234.5", "steps"),
        ("random-allocation:sigma=1.1,steps=10,k=11", "k=11 exceeds steps=10"),
        ("random-allocation:sigma=1.1,steps=10,k=0", "k"),
        ("random-allocation:sigma=-1,steps=10", "sigma"),
    ],
)
def test_bad_specs(text, word):
    with pytest.raises(InputError, match=word):
        parse_spec(text)


def test_rdp_curve_is_the_engine_bound_times_count():
    alphas = np.array([1.5, 2.0, 8.0, 32.0])
    spec = parse_spec("random-allocation:sigma=0.9,steps=500,k=3,count=7")
    ours = rdp_curve(spec, alphas)
    assert np.allclose(ours, 7 * rdp_random_allocation(0.9, 500, 3, alphas), rtol=1e-12)
    (row,) = _rows(["random-allocation:sigma=1.1,steps=14063,k=60", "--delta", "1e-5", "--method", "rdp"])
    assert float(row["epsilon"]) == pytest.approx(
        float(epsilon_random_allocation(1.1, 14063, 60, 1, 1e-5)), rel=1e-9
    )


def test_pld_equals_the_sgd_epsilon_row():
    """60 balls-in-bins epochs as 60 releases: the same certified bound as sgd-epsilon's pld row."""
    ours = compose_pld([parse_spec("balls-in-bins:sigma=1.1,steps=234,count=60")], delta=1e-5)
    ref = sgd_epsilon_pld(256 / 60000, 1.1, 234 * 60, 1e-5, sampling="balls-in-bins", dataset_size=60000)
    assert float(ours.upper) == float(ref.upper) and np.isnan(ours.lower)
    (row,) = _rows(["balls-in-bins:sigma=1.1,steps=234,count=60", "--delta", "1e-5", "--method", "pld"])
    assert row["epsilon_lower"] == "" and "no lower end" in row["note"]


def test_mixed_with_gaussians_no_lower_end_and_below_rdp():
    args = ["balls-in-bins:sigma=1.1,steps=234,count=20", "gaussian:sigma=20,count=5", "--delta", "1e-5"]
    rows = {r["method"]: r for r in _rows([*args, "--method", "all"])}
    assert rows["pld"]["epsilon_lower"] == ""
    assert float(rows["pld"]["epsilon"]) < float(rows["rdp"]["epsilon"])
    alone = float(compose_pld([parse_spec("balls-in-bins:sigma=1.1,steps=234,count=20")], delta=1e-5).upper)
    assert float(rows["pld"]["epsilon"]) > alone  # the Gaussians cost something


def test_refusals():
    r = CliRunner().invoke(
        main, ["compose", "random-allocation:sigma=1.1,steps=100,k=4", "--delta", "1e-5", "--method", "pld"]
    )
    assert r.exit_code == 2 and "k > 1" in r.stderr and r.stdout == ""
    r = CliRunner().invoke(
        main, ["compose", "balls-in-bins:sigma=1.1,steps=234,count=60", "--delta", "1e-13", "--method", "pld"]
    )
    assert r.exit_code == 2 and "--delta" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_label_and_caption():
    assert parse_spec("balls-in-bins:sigma=1.1,steps=234,count=60").label() == (
        "random-allocation:sigma=1.1,steps=234,k=1,count=60"
    )
    r = CliRunner().invoke(
        main, ["compose", "balls-in-bins:sigma=1.1,steps=234,count=6", "--delta", "1e-5", "-f", "table"]
    )
    text = " ".join(r.stdout.split())
    assert r.exit_code == 0 and "add/remove-one (Poisson sampling or random allocation)" in text
