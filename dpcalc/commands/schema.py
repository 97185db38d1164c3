"""The output columns of every command: one documented list, in one order, whatever the inputs.

A script can rely on the header: every CSV/TSV/JSON row of a command has exactly these columns, in
this order; a column that does not apply to a row is empty (CSV, TSV) or ``null`` (JSON).  The man
pages' OUTPUT COLUMNS sections are generated from this module (``python -m dpcalc.devtools regen``); the columns
of ``--fpr`` and ``--advantage`` / ``--prior`` are :mod:`dpcalc.commands.attack_schema`'s.  Pure Python.
"""

from __future__ import annotations

_METHOD = ("method", "the method or accountant that produced the row")
_EPS = ("epsilon", "ε: a certified upper bound (or the target ε where δ was asked)")
_DELTA = ("delta", "δ: a certified upper bound (or the target δ where ε was asked)")
_ALPHA = ("alpha", "the Rényi order α of the row (the best order where the bound is minimised over orders)")
_NOTE = ("note", "why a row has no value, or what produced it")

#: command -> ((column, meaning), ...) in output order.
#: The inputs of a langevin setting, as columns (the bounds' table and the curve's).
_LANGEVIN_INPUTS = (
    ("sigma", "the noise scale σ"),
    ("sensitivity", "the sensitivity S_g of the gradient sum (2L with --lipschitz)"),
    ("lr", "the step size η"),
    ("strong_convexity", "the strong convexity λ"),
    ("smoothness", "the smoothness β"),
    ("dataset_size", "the dataset size n"),
    ("steps", "the number of iterations K"),
)

SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "odometer": (
        ("step", "the event's number"),
        (
            "mechanism",
            "the event (a MECHANISM, or the subsampled Gaussian of a sample_rate,noise_multiplier row)",
        ),
        (
            "run",
            "EVENTS: whether the step ran (with --filter: whether the filter let it run; else always true)",
        ),
        ("recorded", "--add: whether the event was recorded in the ledger (false with --check)"),
        (
            "epsilon",
            "the odometer's ε after this event, valid at any stopping time (with --filter: the filter's ε)",
        ),
        _ALPHA,
        ("level", "the odometer's level f (its budget is 2^(f−1) γ(α))"),
        ("epsilon_rdp", "the plain RDP ε of the same events, valid only for a schedule fixed in advance"),
        ("delta", "δ"),
    ),
    "sgd-epsilon": (
        (
            "method",
            "the accountant, labelled (rdp, pld, abadi-asymptotic, bassily-reference, shuffle-gaussian, "
            "balls-in-bins-mc, rdp-group, dp-group)",
        ),
        (
            "accountant",
            "the accountant, as --method names it (abadi where method labels it abadi-asymptotic; shuffle for "
            "--sampling shuffle)",
        ),
        ("conversion", "the RDP → (ε, δ) conversion of the rdp row (classic for abadi)"),
        (
            "sampling",
            "poisson, fixed-size, truncated-poisson, shuffle, balls-in-bins or random-allocation",
        ),
        ("neighbors", "add-remove or replace-one"),
        (
            "group_size",
            "K: the examples of the person the row protects (--group-size; empty where it was not given: one "
            "example)",
        ),
        (
            "sample_rate",
            "the sampling rate q (--sample-rate, batch_size/dataset_size, or the largest within --target-epsilon)",
        ),
        (
            "batch_size",
            "the batch size B: given, or the largest within --target-epsilon (with --dataset-size)",
        ),
        ("dataset_size", "the dataset size N, when given"),
        ("max_batch_size", "truncated-poisson: the largest batch kept (a larger Poisson batch is cut to it)"),
        ("noise_multiplier", "σ: given, or the smallest one within --target-epsilon"),
        ("steps", "T: given, from --epochs, or the largest number within --target-epsilon"),
        ("epochs", "the epochs given, or the whole epochs within the steps found"),
        ("delta", "the target δ (with --epsilon: δ at epsilon, an upper bound as epsilon is without it)"),
        ("target_epsilon", "the target ε of --target-epsilon"),
        (
            "epsilon",
            "ε: a certified upper bound in every row where valid is not false (mc rows: an upper bound with "
            "probability confidence); with --epsilon, the ε given",
        ),
        (
            "epsilon_lower",
            "a lower bound on the run's ε — pld: the lower end of the certified bracket [epsilon_lower, epsilon], "
            "empty where the bracket is of a model that only dominates the run (truncated Poisson, the allocation "
            "samplers); shuffle: a lower bound (Chua et al. 2024), never a guarantee",
        ),
        (
            "epsilon_estimate",
            "pld: an estimate inside the bracket (empty where epsilon_lower is); mc: the Monte Carlo estimate "
            "(not bounds)",
        ),
        ("delta_lower", "with --epsilon, pld: the lower end of the certified bracket [delta_lower, delta]"),
        (
            "delta_estimate",
            "with --epsilon, pld: an estimate inside the bracket; mc: the Monte Carlo estimate",
        ),
        (
            "confidence",
            "mc: the probability, over the Monte Carlo sampling, with which epsilon is an upper bound (empty: "
            "a deterministic bound)",
        ),
        ("samples", "mc: the Monte Carlo samples drawn per direction (with --seed: reproducible)"),
        _ALPHA,
        ("valid", "false where a closed form is used outside its conditions (then epsilon is not a bound)"),
        _NOTE,
    ),
    "convert": (
        _METHOD,
        _ALPHA,
        ("rdp", "the Rényi-DP level ζ at alpha (given, or of the curve at its best order)"),
        _DELTA,
        _EPS,
        ("rdp_certifying", "with --from dp: the largest ζ at alpha that certifies (ε, δ) (a lower bound)"),
    ),
    "compose": (
        _METHOD,
        _DELTA,
        _EPS,
        (
            "epsilon_lower",
            "pld: the lower end of the certified bracket [epsilon_lower, epsilon], a lower bound on the "
            "composition's ε; empty where a spec's pair only dominates its mechanism (the note names it)",
        ),
        (
            "epsilon_estimate",
            "pld: an estimate inside the bracket (not a bound; empty where epsilon_lower is)",
        ),
        ("delta_lower", "pld: the lower end of the certified bracket [delta_lower, delta]"),
        ("delta_estimate", "pld: an estimate inside the bracket (not a bound)"),
        ("sigma", "calibration (--epsilon with --delta): the noise σ of every spec that left sigma out"),
        (
            "scale",
            "calibration: the noise scale b of every laplace or discrete-laplace spec that left it out",
        ),
        (
            "release_epsilon",
            "calibration: the per-release ε of every randomized-response or exponential spec that left it out",
        ),
        _ALPHA,
        _NOTE,
    ),
    "matrix": (
        (
            "strategy",
            "the strategy C (--strategy): identity, toeplitz:coef=… or path=…, sqrt[:bands=b], blt:theta=…,omega=…, tree or "
            "file:path=…",
        ),
        (
            "participation",
            "single, min-sep:k=K,b=B, cyclic-poisson:b=B[,q=Q], poisson:q=Q or balls-in-bins:b=B (--participation)",
        ),
        ("steps", "n: the steps of the run (columns of C)"),
        ("bands", "the nonzero diagonals of C (empty: not banded, the tree)"),
        (
            "sample_rate",
            "cyclic Poisson: the probability q of each example at each step of its partition (poisson: at each step)",
        ),
        (
            "method",
            "gaussian (no amplification), bandmf-rdp or bandmf-pld (amplified BandMF), mmcc (Poisson sampling), "
            "mc (balls-in-bins by Monte Carlo)",
        ),
        (
            "sensitivity_bound",
            "Δ of C under the participation, the Gaussian mechanism's sensitivity: a certified upper bound",
        ),
        ("sensitivity_exact", "true where a theorem makes Δ exact, false where only the bound is known"),
        ("noise_multiplier", "σ: given, or the smallest within --target-epsilon"),
        ("delta", "the target δ"),
        ("target_epsilon", "the target ε of --target-epsilon"),
        ("epsilon", "ε: a certified upper bound (mc rows: an upper bound with probability confidence)"),
        (
            "epsilon_lower",
            "a lower bound on the run's ε — bandmf-pld: the lower end of the run's certified bracket (per "
            "partition; empty beyond its limits, where only Thm 4's dominating DP-SGD is computed); mmcc: empty "
            "(its bracket is of MMCC's dominating construction) except where C has one entry per row and column",
        ),
        (
            "epsilon_estimate",
            "bandmf-pld, mmcc: an estimate inside the bracket (empty where epsilon_lower is); mc: the Monte Carlo "
            "estimate of the run (not bounds)",
        ),
        ("dpsgd_steps", "bandmf rows: the steps ⌈n/b⌉ of the DP-SGD run that dominates it"),
        (
            "confidence",
            "mc: the probability, over the Monte Carlo sampling, with which epsilon is an upper bound (empty: "
            "a deterministic bound)",
        ),
        ("samples", "mc: the Monte Carlo samples drawn per direction (with --seed: reproducible)"),
        _NOTE,
    ),
    "iterate": (
        _METHOD,
        ("sigma", "the noise multiplier σ (noise std ησ per step)"),
        ("lipschitz", "the Lipschitz constant L of the loss"),
        ("lr", "the step size η"),
        ("steps", "the number of steps T"),
        ("diameter", "the diameter D of the parameter set (asoodeh)"),
        ("initial_distance", "cni: the distance R between the two starting points"),
        _DELTA,
        _EPS,
        _ALPHA,
        ("rdp", "with --alpha: the Rényi-DP bound at alpha"),
        (
            "best_alpha",
            "with --alpha beside --delta or --epsilon: the order that gives epsilon or delta (alpha is the order "
            "asked; alone, --delta and --epsilon put the best order in alpha)",
        ),
        _NOTE,
    ),
    "langevin": (
        _METHOD,
        ("bound", "upper (a guarantee) or lower (the paper's lower bound: never a guarantee)"),
        *_LANGEVIN_INPUTS,
        _ALPHA,
        ("rdp", "an upper bound on the Rényi divergence at alpha"),
        ("rdp_lower", "the lower bound on the Rényi divergence at alpha (bound = lower)"),
        _DELTA,
        _EPS,
        ("epsilon_lower", "the lower bound on ε (bound = lower)"),
        ("best_alpha", "the order that gives epsilon"),
        ("crossing_steps", "the number of steps beyond which the dynamics bound beats composition"),
    ),
    "audit": (
        ("method", "counts (--tp/--fp/--fn/--tn or --input), one-run (--canaries) or scores (--scores)"),
        ("tp", "true positives: members the attack called members"),
        ("fp", "false positives: non-members the attack called members"),
        ("fn", "false negatives: members the attack called non-members"),
        ("tn", "true negatives: non-members the attack called non-members"),
        ("canaries", "one-run: the number m of canaries, each included with probability 1/2"),
        ("guesses", "one-run: the number r of canaries guessed (the others abstained)"),
        ("correct", "one-run: the number v of right guesses"),
        ("threshold", "scores: the threshold t (member if score >= t) chosen on the selection half"),
        ("confidence", "the confidence c with which epsilon_lower (and mu_lower) hold"),
        ("delta", "the δ at which ε is bounded"),
        ("tpr_lower", "a Clopper–Pearson lower bound on the true-positive rate (level 1 − (1 − c)/2)"),
        ("fpr_upper", "a Clopper–Pearson upper bound on the false-positive rate (level 1 − (1 − c)/2)"),
        ("epsilon_lower", "an empirical lower bound on ε at delta, holding with probability >= confidence"),
        (
            "mu_lower",
            "a lower bound on μ for any μ-GDP description of the mechanism (same confidence; one-run: by the "
            "f-DP one-run audit of Mahloujifar, Melis & Chaudhuri 2024)",
        ),
        (
            "epsilon_gdp",
            "the ε at delta of a mu_lower-GDP (Gaussian) curve: a lower bound only if the curve is Gaussian",
        ),
        ("epsilon_claimed", "the claimed upper bound (--claimed-epsilon)"),
        ("ratio", "epsilon_lower / epsilon_claimed: how much of the claim the attack reached"),
        _NOTE,
    ),
}


_CURVE_ALPHA = ("alpha", "the Rényi order α of the row (one row per order of --alphas)")
_CURVE_RDP = (
    "rdp",
    "an upper bound on the Rényi divergence of order alpha of the whole run (inf: no bound at that order)",
)

#: ``--rdp-curve``: command -> ((column, meaning), ...), the columns of the Rényi curve it prints
#: instead of ε (one row per order, per configuration of the swept inputs and per method).  Each holds
#: ``alpha`` and ``rdp``, so its CSV is a curve for ``dpcalc convert --curve`` as it is (one curve: one
#: configuration, one method).  The man pages' RDP CURVE COLUMNS sections are generated from it.
CURVE_SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "sgd-epsilon": (
        ("sampling", "poisson, fixed-size, truncated-poisson, balls-in-bins or random-allocation"),
        ("neighbors", "add-remove or replace-one"),
        ("sample_rate", "the sampling rate q (--sample-rate, or batch_size/dataset_size)"),
        ("batch_size", "the batch size B, when given"),
        ("dataset_size", "the dataset size N, when given"),
        ("max_batch_size", "truncated-poisson: the largest batch kept"),
        ("noise_multiplier", "the noise multiplier σ"),
        ("steps", "the number of steps T (given, or from --epochs)"),
        ("epochs", "the epochs, when given"),
        _CURVE_ALPHA,
        (
            "rdp",
            "the exact Rényi DP of the T steps at alpha (the rdp accountant's curve, before any conversion; "
            "inf: no bound at that order)",
        ),
    ),
    "compose": (
        _CURVE_ALPHA,
        ("rdp", "the summed Rényi DP of every MECHANISM at alpha (the rdp method's curve; inf: unbounded)"),
    ),
    "iterate": (
        ("method", "the bound: feldman, composition or cni (asoodeh has no Rényi form)"),
        ("sigma", "the noise multiplier σ"),
        ("lipschitz", "the Lipschitz constant L of the loss"),
        ("lr", "the step size η"),
        ("steps", "the number of steps T"),
        ("initial_distance", "cni: the distance R between the two starting points"),
        _CURVE_ALPHA,
        ("rdp", "the Rényi bound at alpha (feldman: inf above α*, where the theorem gives none)"),
    ),
    "langevin": (
        _METHOD,
        ("bound", "upper (a guarantee) or lower (the paper's lower bound: never a guarantee)"),
        *_LANGEVIN_INPUTS,
        _CURVE_ALPHA,
        ("rdp", "an upper bound on the Rényi divergence at alpha (bound = upper)"),
        ("rdp_lower", "the lower bound on the Rényi divergence at alpha (bound = lower)"),
    ),
}


#: ``odometer --method gdp`` and ``--method dp`` (the GDP and (ε, δ) filters and odometers, docs/math.md §6.4): one row
#: per step (a MECHANISM with count=K is K steps), these columns instead of SCHEMAS' (whose rows, those of the
#: Rényi accountant, stay as they were).  The man page's GDP AND DP COLUMNS section is generated from it.
ADAPTIVE_SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "odometer": (
        ("step", "the step's number (a MECHANISM with count=K is K steps, one row each)"),
        ("mechanism", "the event the step belongs to (a MECHANISM)"),
        ("method", "the accountant: gdp or dp (--method)"),
        (
            "run",
            "whether the step ran (with --filter or --filter-mu: whether the filter let it run; else true)",
        ),
        ("recorded", "--add: whether the event was recorded in the ledger (false with --check)"),
        (
            "epsilon",
            "an upper bound on ε at delta: the odometer's, valid at any stopping time; with --filter or "
            "--filter-mu, the filter's guarantee (empty with --filter-mu and no --delta)",
        ),
        ("delta", "δ (--delta)"),
        ("mu_step", "gdp: the step's μ = Δ/σ (an upper bound, rounded up)"),
        (
            "mu",
            "gdp: √Σμ² of the steps that ran, an upper bound on their μ-GDP parameter only for a schedule "
            "fixed in advance",
        ),
        (
            "mu_budget",
            "gdp: the μ that certifies epsilon: the filter's budget (--filter-mu, or --filter EPS at delta "
            "as μ), or the odometer's rung μ_j at level (an upper bound)",
        ),
        ("level", "gdp odometer: the level j of the ladder of filters, rung μ_j = μ_1·2^((j−1)/2)"),
        ("epsilon_step", "dp: the step's ε (an upper bound)"),
        ("delta_step", "dp: the step's δ (an upper bound)"),
        (
            "epsilon_fixed",
            "an upper bound on ε at delta of the steps that ran, valid only for a schedule fixed in advance "
            "(gdp: of mu-GDP; dp: the filter's rate), shown for comparison",
        ),
    ),
}

#: The columns of a schedule (``sgd-epsilon --schedule FILE``): one row per phase and accountant.
SCHEDULE_SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "sgd-epsilon": (
        ("phase", "the phase's number (1 = the first line of the schedule)"),
        ("accountant", "rdp or pld"),
        ("noise_multiplier", "σ of the phase"),
        ("sample_rate", "q of the phase (batch_size / dataset_size where the schedule gives batch sizes)"),
        ("steps", "the phase's steps (from its epochs where the schedule gives epochs)"),
        ("total_steps", "the steps of the run up to the end of this phase"),
        ("delta", "the target δ"),
        ("epsilon", "ε of the run up to the end of this phase: a certified upper bound (non-decreasing)"),
        ("epsilon_lower", "pld: the lower end of the certified bracket [epsilon_lower, epsilon]"),
        ("epsilon_estimate", "pld: an estimate inside the bracket (not a bound)"),
        ("note", "why a row has no value, or what produced it"),
    ),
}


def names(command: str) -> list[str]:
    """The column names of ``command``, in order."""
    return [name for name, _ in SCHEMAS[command]]


def conform(columns: dict, command: str) -> dict:
    """``columns`` (name -> values) with every column of ``command``'s schema, in its order (absent
    ones empty).  A column outside the schema is a programming error."""
    order = names(command)
    extra = set(columns) - set(order)
    if extra:  # pragma: no cover - caught by the schema tests
        raise KeyError(f"{command}: columns {sorted(extra)} are not in its schema")
    n = max((len(v) for v in columns.values() if hasattr(v, "__len__") and not isinstance(v, str)), default=1)
    return {name: columns[name] if name in columns else [None] * n for name in order}


def adaptive_names(command: str) -> list[str]:
    """The column names of ``command --method gdp|dp``, in order."""
    return [name for name, _ in ADAPTIVE_SCHEMAS[command]]


def curve_names(command: str) -> list[str]:
    """The column names of ``command --rdp-curve``, in order."""
    return [name for name, _ in CURVE_SCHEMAS[command]]
