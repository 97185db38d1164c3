"""What a DP-SGD batch sampler is: one :class:`Sampler` object that says all of its facts (docs/math.md §3,
§3.5–§3.10), read by the commands, the library and the accountants instead of asking the sampler's name.

A sampler declares

* the neighbouring relations a theorem covers for it (the first is its default) and the refusal of the
  others;
* the inputs it needs (``--dataset-size``, ``--max-batch-size``) and those its run reads per row;
* which accountants answer it (rdp, pld, abadi, bassily, mc, or a row of its own), and under which
  relations;
* how ``--epochs`` counts steps (whole epochs of ⌊N/B⌋ steps, or ⌈E/q⌉);
* the Rényi curve of a run (:meth:`Sampler.rdp_run`, the curve the rdp accountant converts) and the
  privacy-loss pair of a run for the pld accountant (:meth:`Sampler.pld_directions`), with whether that
  pair's models only dominate it (an upper end only);
* its captions and the note of each (accountant, relation) row;
* its cost per configuration for the bounded-work check.

Each sampler is one module of this package with a ``SAMPLER``; :mod:`dpcalc.engine.samplers.catalogue`
is the one table of them.  This package imports the mechanisms (:mod:`dpcalc.engine.mechanisms`) and the
PLD machinery (:mod:`dpcalc.engine.pld`), never the accountants of :mod:`dpcalc.engine.dpsgd`.
"""

from __future__ import annotations

import numpy as np

from dpcalc.errors import InputError

#: The neighbouring relations (docs/math.md §0).
RELATIONS = ("add-remove", "replace-one")

#: The command line's option of each input a sampler may need or read.
OPTIONS = {"dataset_size": "--dataset-size", "max_batch_size": "--max-batch-size"}


def steps_per_epoch(q, dataset_size=None, batch_size=None) -> np.ndarray:
    """``m = ⌊N/B⌋`` (exact from the integers when given, else ⌊1/q⌋ checked so that m·q <= 1)."""
    if dataset_size is not None and batch_size is not None:
        n = np.asarray(dataset_size, dtype=float)
        b = np.asarray(batch_size, dtype=float)
        return np.maximum(np.floor(n / b), 1.0)
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore"):
        m = np.floor(1.0 / q)
    m = np.where(m * q > 1.0, m - 1.0, m)
    return np.maximum(m, 1.0)


class Sampler:
    """A batch sampler of DP-SGD.  Subclasses set the class attributes and override the methods that
    differ; one instance, ``SAMPLER``, per module."""

    #: Its ``--sampling`` name, and its place in listings.
    name: str = ""
    order: int = 0
    #: The neighbouring relations a theorem covers here, the default first; the refusal of the others.
    relations: tuple[str, ...] = RELATIONS
    refusal: str = ""
    #: Accountant -> the relations under which it answers this sampler (``--method all`` runs those
    #: that apply; a name absent here is refused).
    accountants: dict[str, tuple[str, ...]] = {"rdp": RELATIONS}
    #: (input, what the message says after "needs"): inputs the sampler cannot do without.
    needs: tuple[tuple[str, str], ...] = ()
    #: The inputs its run reads per configuration (the keywords of :meth:`rdp_run` and the pld setting).
    run_inputs: tuple[str, ...] = ()
    #: Those of :data:`run_inputs` that a ``--fpr`` caption shows.
    captioned_inputs: tuple[str, ...] = ()
    #: Whether ``--max-batch-size`` belongs to it; whether ``--tuning-runs`` is answered.
    takes_max_batch_size: bool = False
    tuning_runs: bool = True
    #: Whether an epoch is ⌊N/B⌋ steps (a run of E epochs ⌈E·⌊N/B⌋⌉ steps) rather than ⌈E/q⌉ steps.
    whole_epochs: bool = False
    #: Whether the rdp accountant's inverse questions are vectorised over the rows (else one monotone
    #: search per configuration, :mod:`dpcalc.commands.sgd.searched`).
    vectorised_inverse: bool = False
    #: Whether the pld accountant's models only dominate the run (a pair no instance of it attains): an upper
    #: end, no lower end and no estimate (those would be of the models, not of the run); and what the models
    #: are, for the rows' notes.
    pld_upper_only: bool = False
    pld_upper_why: str = ""
    #: Whether the rdp accountant's ε = 0 is taken to certify the pld answer 0 before any PLD.
    pld_zero_by_rdp: bool = False
    #: The relations under which its bound is a privacy profile (``--fpr``); () where it is not.
    profile_relations: tuple[str, ...] = ("add-remove",)
    #: CPU seconds per configuration of the rdp accountant (measured, benchmarks/, with a margin), and
    #: whether the forward rows share one Rényi curve across the steps, the epochs and δ.
    rdp_seconds: float = 0.5
    curve_reused: bool = False
    #: What an sgd-epsilon caption adds for it; what its Rényi curve is, in a ``--rdp-curve`` caption.
    caption: str = ""
    curve_words: str = "steps × the per-step curve of the subsampled Gaussian"
    #: (accountant, relation) -> the theorem and neighbouring relation behind its rows.
    notes: dict[tuple[str, str], str] = {}

    # ---------------------------------------------------------------------------------------- facts

    @property
    def default_relation(self) -> str:
        return self.relations[0]

    def covers(self, accountant: str, neighbors: str | None = None) -> bool:
        """Whether ``accountant`` answers this sampler (under ``neighbors``, when given)."""
        within = self.accountants.get(accountant, ())
        return bool(within) and (neighbors is None or neighbors in within)

    def check_relation(self, neighbors: str) -> None:
        """Refuse a neighbouring relation no theorem here covers."""
        if neighbors not in RELATIONS:
            raise InputError(f"--neighbors: must be one of {', '.join(RELATIONS)}, got {neighbors!r}")
        if neighbors not in self.relations:
            raise InputError(self.refusal)

    def relation_caption(self, neighbors: str) -> str:
        """The words after "neighbours: …" in a caption."""
        return "sensitivity C" if neighbors == "add-remove" else "sensitivity 2C: the theorem sees σ/2"

    def check_inputs(self, dataset_size=None, max_batch_size=None, tuning=None) -> None:
        """Refuse a missing input the sampler needs, and ``--tuning-runs`` where it is not answered."""
        given = {"dataset_size": dataset_size, "max_batch_size": max_batch_size}
        for field, words in self.needs:
            if given[field] is None:
                raise InputError(f"--sampling {self.name} needs {words}")
        if tuning is not None and not self.tuning_runs:
            raise InputError(f"--tuning-runs is not supported with --sampling {self.name}")

    def own_accountants(self, accountant: str, neighbors: str, solve, tuning) -> list[str] | None:
        """The accountants of a sampler that answers with a row of its own (refusing what that row does
        not answer), or None: the accountants asked for."""
        return None

    def note(self, accountant: str, neighbors: str, default: str = "") -> str:
        """The theorem and neighbouring relation behind an accountant's rows."""
        return self.notes.get((accountant, neighbors), default)

    # ------------------------------------------------------------------------------------- the run

    def steps_of_epochs(self, epochs, q, dataset_size=None, batch_size=None):
        """The steps of a run of ``epochs`` epochs: ⌈E/q⌉ = ⌈E·N/B⌉ (exact for whole numbers below 2^53), or
        with :data:`whole_epochs` ⌈E·⌊N/B⌋⌉ (⌊1/q⌋ steps an epoch without N and B)."""
        if self.whole_epochs:
            m = steps_per_epoch(q, dataset_size, batch_size)
            return np.maximum(np.ceil(epochs * m), 1.0)
        ratio = epochs * dataset_size / batch_size if batch_size is not None else epochs / q
        return np.maximum(np.ceil(ratio), 1.0)

    def whole_epochs_within(self, steps, q, dataset_size=None, batch_size=None):
        """The whole epochs E with ⌈E/q⌉ <= steps (checked with the arithmetic of :meth:`steps_of_epochs`)."""
        e = np.floor(steps * q)
        ratio = e * dataset_size / batch_size if batch_size is not None else e / q
        return np.where(np.ceil(ratio) > steps, e - 1, e)

    def rdp_step(self, q, sigma, alphas, neighbors, dataset_size=None, max_batch_size=None):
        """The Rényi curve of one step, shape ``broadcast(q, sigma).shape + (len(alphas),)``."""
        raise InputError(f"--sampling {self.name}: no per-step Rényi curve here")

    def rdp_run(self, q, sigma, steps, alphas, neighbors, dataset_size=None, max_batch_size=None):
        """The Rényi curve of a run (q, σ, steps broadcast arrays; RDP composition, Mironov 2017 Prop. 1):
        steps × :meth:`rdp_step`."""
        return run_curve(steps, self.rdp_step(q, sigma, alphas, neighbors, dataset_size, max_batch_size))

    def pld_config(self, dataset_size=None, max_batch_size=None) -> tuple:
        """The arrays (broadcast with the rows) that a run's PLD reads beyond (q, σ, steps): none here."""
        return ()

    def pld_directions(self, q: float, sigma: float, steps: int, neighbors: str, config: tuple, delta=None):
        """The directions of one run's privacy-loss pair, each a list of
        :class:`~dpcalc.engine.pld.grid.Component` (``config``: one row of :meth:`pld_config`; ``delta``,
        when the question is ε(δ), may set the precision)."""
        raise InputError(f"--method pld: no privacy loss distribution for --sampling {self.name}")

    def pld_setting(self, neighbors: str, dataset_size=None, max_batch_size=None) -> dict:
        """The keywords of :func:`dpcalc.engine.dpsgd.pld_accounting.sgd_epsilon_pld` for this sampler
        beyond plain Poisson sampling under add/remove neighbours (empty there)."""
        out = {} if neighbors == "add-remove" else {"neighbors": neighbors}
        out["sampling"] = self.name
        given = {"dataset_size": dataset_size, "max_batch_size": max_batch_size}
        out.update({k: given[k] for k in self.run_inputs})
        return out


def run_curve(steps, per_step):
    """``steps`` compositions of a per-step Rényi curve (Mironov 2017 Prop. 1): steps × the curve, 0 where the
    step costs nothing (also at ∞ steps)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(per_step == 0, 0.0, steps[..., None] * per_step)
