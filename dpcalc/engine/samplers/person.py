"""DP-SGD for a person who contributed K examples (``sgd-epsilon --group-size K``; docs/math.md §3.11).

Every sampler of the table protects one example.  :func:`person_sampler` gives the sampler of a person's K
examples, a :class:`~dpcalc.engine.samplers.base.Sampler` that the accountants read like any other (they
take a sampler object wherever they take a sampler's name):

* :class:`PoissonPerson` — Poisson sampling, add/remove of the person: tight.  The person's K examples are
  each in a step's batch independently with probability q, so the clipped sum moves by at most i·C when i of
  them are in, i ~ Binomial(K, q), independently of the rest of the batch: one step is dominated by the
  mixture ``Σ_i C(K, i) q^i (1−q)^(K−i) N(i, σ²)`` against ``N(0, σ²)`` (Ganesh 2024, "Tight group-level
  DP guarantees for DP-SGD with sampling via mixture of Gaussians mechanisms", arXiv:2401.10294, Thm 3.1).
  Its certified Rényi curve and its privacy-loss pair in both directions are the mixture-gaussian kind's
  (:mod:`dpcalc.engine.mechanisms.mixture_gaussian`, docs/math.md §2.14).  K = 1 is the plain Poisson
  sampler itself.
* :class:`GroupedRun` — any sampler with a Rényi curve: the RDP group property (Mironov 2017, "Rényi
  differential privacy", arXiv:1702.07476, Prop. 2) of the sampler's example-level curve of the whole run, an
  upper bound; the comparison people use today (the rdp-group rows).

What no theorem here covers is refused by :func:`tight_refusal`, naming what is missing.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.base import up
from dpcalc.engine.mechanisms.group import doublings
from dpcalc.engine.mechanisms.mixture_gaussian import MAX_COMPONENTS, binomial_weights
from dpcalc.engine.mechanisms.mixture_gaussian_loss import mixture_loss
from dpcalc.engine.mechanisms.mixture_gaussian_rdp import rdp_mixture
from dpcalc.engine.mechanisms.mixture_gaussian_terms import MixtureTerms
from dpcalc.engine.pld.grid import Component
from dpcalc.engine.samplers.base import Sampler
from dpcalc.errors import InputError

#: The largest K the tight (mixture) rows answer: the mixture has K + 1 components.
MAX_TIGHT_GROUP = MAX_COMPONENTS - 1


def mixture_terms(k: int, q: float, sigma: float) -> MixtureTerms:
    """One step for a person with ``k`` Poisson-sampled examples: the components ``i = 0..k`` with
    Binomial(k, q) weights, noise σ (Ganesh 2024, Thm 3.1)."""
    return MixtureTerms(sigma, np.arange(k + 1, dtype=float), binomial_weights(k, q))


class PoissonPerson(Sampler):
    """Poisson sampling for a person with ``k`` examples (module docstring): the mixture's rows."""

    name = "poisson"
    relations = ("add-remove",)
    refusal = (
        "--group-size with --neighbors replace-one: the mixture of Ganesh 2024 is for adding or removing "
        "the person's examples; use --neighbors add-remove, or the rdp-group / dp-group rows"
    )
    accountants = {"rdp": ("add-remove",), "pld": ("add-remove",)}
    profile_relations = ()
    rdp_seconds = 0.8  # one certified mixture curve per configuration (0.2-0.6 s measured, K <= 999)
    curve_words = "steps × the per-step curve of the person's mixture of Gaussians"

    def __init__(self, k: int):
        self.k = int(k)
        self.notes = {
            ("rdp", "add-remove"): (
                f"a person with K = {self.k} examples, add/remove; certified Rényi curve of the mixture "
                "Σ Bin(K,q)_i N(i,σ²) vs N(0,σ²) (Ganesh 2024, Thm 3.1)"
            ),
            ("pld", "add-remove"): (
                f"a person with K = {self.k} examples, add/remove; PLD of the mixture Σ Bin(K,q)_i N(i,σ²) vs "
                "N(0,σ²) (Ganesh 2024, Thm 3.1): certified bracket"
            ),
        }

    def rdp_step(self, q, sigma, alphas, neighbors, dataset_size=None, max_batch_size=None):
        """The mixture's certified Rényi curve, one per distinct (q, σ)."""
        self.check_relation(neighbors)
        alphas = np.asarray(alphas, dtype=float)
        q, sigma = np.broadcast_arrays(np.asarray(q, float), np.asarray(sigma, float))
        out = np.empty(q.shape + alphas.shape)
        flat = out.reshape(-1, alphas.size)
        done: dict = {}
        for i, key in enumerate(zip(q.ravel().tolist(), sigma.ravel().tolist())):
            if key not in done:
                done[key] = self._curve(*key, alphas)
            flat[i] = done[key]
        return out

    def _curve(self, q: float, sigma: float, alphas) -> np.ndarray:
        if q == 0.0:
            return np.zeros(alphas.shape)
        if not np.isfinite(sigma) or sigma <= 0:
            return np.full(alphas.shape, np.inf if sigma <= 0 else 0.0)
        return rdp_mixture(mixture_terms(self.k, q, sigma), alphas).reshape(alphas.shape)

    def pld_directions(self, q, sigma, steps, neighbors, config, delta=None):
        terms = mixture_terms(self.k, q, sigma)
        return [
            [Component(mixture_loss(terms, "remove"), steps)],
            [Component(mixture_loss(terms, "add"), steps)],
        ]

    def pld_setting(self, neighbors, dataset_size=None, max_batch_size=None) -> dict:
        return {"sampling": self}


class GroupedRun(Sampler):
    """Any sampler's example-level Rényi curve of a run, through the RDP group property for a person with
    ``k`` examples (module docstring): order β >= 2 reads the example-level curve at 2^c·β, times 3^c
    (2^c >= K); an order below 2 takes the value at 2 (the curve is non-decreasing in the order)."""

    accountants = {}
    vectorised_inverse = False
    profile_relations = ()

    def __init__(self, base: Sampler, k: int):
        self.base, self.k = base, int(k)
        self.name = base.name
        self.relations = base.relations
        self.refusal = base.refusal
        self.accountants = {"rdp": base.accountants.get("rdp", ())}
        self.needs, self.run_inputs = base.needs, base.run_inputs
        self.takes_max_batch_size = base.takes_max_batch_size
        self.whole_epochs = base.whole_epochs
        self.rdp_seconds = base.rdp_seconds
        c = doublings(self.k)
        self.curve_words = f"the RDP group property (Mironov 2017, Prop. 2) of {base.curve_words}"
        self.note_text = (
            f"a person with K = {self.k} examples; upper bound: RDP group property (Mironov 2017, Prop. 2) of "
            f"the example-level curve, order α/{2**c} at {3**c}·ε(α)"
        )

    def note(self, accountant, neighbors, default=""):
        return self.note_text

    def relation_caption(self, neighbors):
        return self.base.relation_caption(neighbors)

    def steps_of_epochs(self, epochs, q, dataset_size=None, batch_size=None):
        return self.base.steps_of_epochs(epochs, q, dataset_size, batch_size)

    def whole_epochs_within(self, steps, q, dataset_size=None, batch_size=None):
        return self.base.whole_epochs_within(steps, q, dataset_size, batch_size)

    def rdp_run(self, q, sigma, steps, alphas, neighbors, dataset_size=None, max_batch_size=None):
        a = np.asarray(alphas, dtype=float)
        c = doublings(self.k)
        if c == 0:
            return self.base.rdp_run(q, sigma, steps, a, neighbors, dataset_size, max_batch_size)
        wide = np.maximum(a, 2.0) * float(2**c)
        with np.errstate(over="ignore", invalid="ignore"):
            z = self.base.rdp_run(q, sigma, steps, wide, neighbors, dataset_size, max_batch_size) * float(
                3**c
            )
        return up(z, z)


def tight_refusal(sampler: Sampler, neighbors: str, k: int) -> str | None:
    """Why the tight person-level rows (rdp and pld) do not apply to ``sampler`` under ``neighbors`` for a
    person with ``k`` examples, or None where :class:`PoissonPerson` answers."""
    if sampler.name != "poisson":
        return (
            f"no tight person-level accountant for --sampling {sampler.name} here (the mixture of Ganesh 2024 "
            "is implemented for Poisson sampling); the rdp-group and dp-group rows give upper bounds"
        )
    if neighbors != "add-remove":
        return PoissonPerson.refusal
    if k > MAX_TIGHT_GROUP:
        return (
            f"--group-size {k}: the mixture has K + 1 components, at most {MAX_COMPONENTS}; the rdp-group and "
            "dp-group rows give upper bounds"
        )
    return None


def person_sampler(sampler: Sampler, neighbors: str, k: int) -> Sampler:
    """The sampler of the tight rows for a person with ``k`` examples (``k == 1``: ``sampler`` itself), or an
    :class:`InputError` saying what is missing."""
    if k == 1:
        return sampler
    why = tight_refusal(sampler, neighbors, k)
    if why is not None:
        raise InputError(why)
    return PoissonPerson(k)


def grouped_sampler(sampler: Sampler, k: int) -> Sampler:
    """The sampler of the rdp-group rows (the RDP group property of the example-level curve), or an
    :class:`InputError` where the sampler has no Rényi curve."""
    if not sampler.covers("rdp"):
        raise InputError(
            f"--group-size with --sampling {sampler.name}: its bound has no Rényi curve for the RDP group "
            "property, and no person-level bound is implemented for it"
        )
    return GroupedRun(sampler, k)
