"""The sampler catalogue (dpcalc.engine.samplers): one module per sampler, one table that the command, the
library and the accountants read; a new sampler is one declaration."""

import numpy as np
import pytest

from dpcalc.commands.choices import SGD_SAMPLINGS
from dpcalc.commands.sgd.epsilon import sgd_epsilon
from dpcalc.commands.sgd.params import SgdEpsilonParams
from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.dpsgd import accounting
from dpcalc.engine.mechanisms import catalogue as mechanisms
from dpcalc.engine.mechanisms.gaussian_exact import eps_gaussian
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.samplers import catalogue
from dpcalc.engine.samplers.base import Sampler
from dpcalc.errors import InputError
from dpcalc.input.spec import parse_mechanism


def test_the_command_line_offers_the_table_in_order():
    """--sampling's static choices (no numpy at --help time) are the table's names."""
    assert SGD_SAMPLINGS == tuple(catalogue.CATALOGUE) == catalogue.names()
    assert catalogue.names("rdp") == (
        "poisson",
        "fixed-size",
        "truncated-poisson",
        "balls-in-bins",
        "random-allocation",
    )
    assert catalogue.names("pld") == ("poisson", "truncated-poisson", "balls-in-bins", "random-allocation")
    assert catalogue.names("mc") == ("balls-in-bins",)


@pytest.mark.parametrize("name", SGD_SAMPLINGS)
def test_every_sampler_declares_its_facts(name):
    s = catalogue.CATALOGUE[name]
    assert s.name == name and s.relations and set(s.relations) <= {"add-remove", "replace-one"}
    assert s.accountants and all(
        set(r) <= set(s.relations) | {"add-remove", "replace-one"} for r in s.accountants.values()
    )
    for (accountant, relation), note in s.notes.items():
        assert s.covers(accountant, relation) and note
    assert s.pld_upper_only <= s.covers("pld")
    assert s.rdp_seconds > 0
    for relation in {"add-remove", "replace-one"} - set(s.relations):
        with pytest.raises(InputError, match=f"--sampling {name} with --neighbors {relation}"):
            s.check_relation(relation)


class FullBatch(Sampler):
    """A toy sampler: every step uses the whole dataset (q = 1), so one step is the Gaussian mechanism of
    sensitivity 1 and noise σ, whose Rényi DP is α/(2σ²) (docs/math.md §2.6)."""

    name = "toy"
    order = 99
    relations = ("add-remove",)
    refusal = "--sampling toy with --neighbors replace-one: add/remove only"
    accountants = {"rdp": ("add-remove",)}

    def rdp_step(self, q, sigma, alphas, neighbors, dataset_size=None, max_batch_size=None):
        q, sigma = np.broadcast_arrays(np.asarray(q, float), np.asarray(sigma, float))
        return np.asarray(alphas, float) / (2.0 * sigma[..., None] ** 2)


@pytest.fixture
def toy():
    sampler = catalogue.register(FullBatch())
    yield sampler
    catalogue.unregister("toy")
    assert "toy" not in catalogue.CATALOGUE


def test_a_new_sampler_is_one_declaration(toy):
    """Registering one Sampler is all sgd-epsilon's rdp accountant needs: its ε is that of the Gaussian
    mechanism composed T times (the same Rényi curve, converted alike), above the exact ε of T Gaussians."""
    assert catalogue.names()[-1] == "toy" and catalogue.names("rdp")[-1] == "toy"
    sigma, steps, delta = 2.0, 40, 1e-5
    res = sgd_epsilon(
        SgdEpsilonParams(delta=[delta], sigma=[sigma], sample_rate=[1.0], steps=[steps], sampling="toy")
    )
    assert res.columns["sampling"] == ["toy"] and res.columns["neighbors"] == ["add-remove"]
    assert res.columns["method"] == ["rdp"]
    eps = res.columns["epsilon"][0]
    gaussians = mechanisms.rdp_curve(parse_mechanism(f"gaussian:sigma={sigma},count={steps}"), DEFAULT_ORDERS)
    composed = float(eps_of_curve(np.asarray(DEFAULT_ORDERS, float), gaussians, delta, "optimal").value)
    assert eps == pytest.approx(composed, rel=1e-12)
    exact = float(eps_gaussian(delta, np.sqrt(steps) / sigma))  # Balle & Wang 2018, Thm 8
    assert exact <= eps <= 1.1 * exact
    assert "sampling: toy; neighbours: add-remove (sensitivity C)" in res.caption
    # what the table says the toy does not answer is refused, as for any sampler
    with pytest.raises(InputError, match="use --method rdp for --sampling toy"):
        sgd_epsilon(
            SgdEpsilonParams(
                delta=[delta],
                sigma=[sigma],
                sample_rate=[1.0],
                steps=[steps],
                sampling="toy",
                accountant="pld",
            )
        )
    with pytest.raises(InputError, match="add/remove only"):
        accounting.epsilon_rdp(1.0, sigma, steps, delta, sampling="toy", neighbors="replace-one")


def test_an_unknown_sampler_is_refused():
    with pytest.raises(InputError, match="--sampling: must be one of poisson, .*got 'nope'"):
        sgd_epsilon(
            SgdEpsilonParams(delta=[1e-5], sigma=[1.0], sample_rate=[0.1], steps=[10], sampling="nope")
        )
    with pytest.raises(InputError, match="got 'shuffle'"):  # no Rényi curve
        accounting.rdp_total(0.1, 1.0, 10, sampling="shuffle", neighbors="replace-one")
