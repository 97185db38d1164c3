"""The output columns of the questions in an attacker's terms, as :mod:`dpcalc.commands.schema` lists those of
every command: one documented list per command, in one order, whatever the inputs.  :data:`TRADEOFF_SCHEMAS`: the
trade-off rows of ``--fpr``; :data:`RISK_SCHEMAS`: the rows of ``--advantage`` / ``--prior`` (and the targets
``--target-advantage``, ``--target-tpr``).  The man pages' TRADE-OFF COLUMNS and RISK COLUMNS sections are
generated from this module (``python -m dpcalc.devtools regen``).  Pure Python.
"""

from __future__ import annotations

from dpcalc.commands.schema import _NOTE

#: The columns that say which run a matrix row is (its risk and trade-off rows).
_MATRIX_ROW = (
    ("strategy", "the strategy C (--strategy)"),
    ("participation", "the participation pattern (--participation)"),
    ("steps", "n: the steps of the run (columns of C)"),
    ("sample_rate", "the sampling probability q of the pattern (cyclic Poisson, Poisson)"),
    (
        "method",
        "gaussian (no amplification), bandmf-rdp or bandmf-pld (amplified BandMF), mmcc (Poisson sampling), mc "
        "(balls-in-bins by Monte Carlo)",
    ),
    ("sensitivity_bound", "Δ of C under the participation (a certified upper bound): gaussian's μ = Δ/σ"),
    ("sensitivity_exact", "true where a theorem makes Δ exact"),
    ("dpsgd_steps", "bandmf rows: the steps ⌈n/b⌉ of the DP-SGD run that dominates it"),
)
#: A matrix mc row's columns: its numbers hold with probability confidence (never certified).
_MATRIX_MC = (
    (
        "confidence",
        "mc: the probability, over the Monte Carlo sampling, with which each upper bound of the row holds, at its "
        "own ε (empty: a deterministic bound)",
    ),
    ("samples", "mc: the Monte Carlo samples drawn per direction (with --seed: reproducible)"),
)

#: Where a shared column's meaning names the methods of compose and sgd-epsilon, matrix's own rows instead.
_MATRIX_LOWER = (
    "gaussian (deterministic participation, Δ exact), bandmf-pld, and mmcc where its laws are the run's"
)
_MATRIX_WORDS = {
    "tpr_lower": f"with --target-tpr ({_MATRIX_LOWER}): the lower end of the bracket [tpr_lower, tpr]",
    "tpr_estimate": "bandmf-pld, and mmcc where its laws are the run's: an estimate inside the bracket (not a bound)",
    "mu": "gaussian: μ = Δ/σ of its μ-GDP (rounded up)",
    "advantage_lower": f"{_MATRIX_LOWER}: the lower end of the bracket [advantage_lower, advantage]",
    "advantage_estimate": "bandmf-pld and mmcc (as advantage_lower): an estimate inside the bracket; mc: the Monte "
    "Carlo estimate (not bounds)",
    "advantage": "an upper bound on TPR − FPR of every membership test (δ(0), the total variation of the pair): "
    "certified, but mc's (with probability confidence)",
    "success_lower": f"{_MATRIX_LOWER}: the lower end of the bracket [success_lower, success]",
    "success_estimate": "bandmf-pld and mmcc (as advantage_lower): an estimate inside the bracket; mc: the Monte "
    "Carlo estimate (not bounds)",
    "success": "an upper bound on the probability that an attacker with prior π guesses membership right: certified, "
    "but mc's (with probability confidence)",
    "tpr": "with --target-tpr: a certified upper bound on the TPR of every membership test at fpr",
}
_MATRIX_TRADEOFF_WORDS = dict(
    _MATRIX_WORDS,
    tpr="a certified upper bound on the true-positive rate of every test at fpr, like every epsilon column; the upper "
    "end of the bracket [tpr_lower, tpr]",
    tpr_lower=f"{_MATRIX_LOWER}: the lower end of the bracket [tpr_lower, tpr] (none for the other rows)",
)


def _worded(columns, words):
    """``columns`` with the meanings in ``words`` (name -> meaning) in place of theirs."""
    return tuple((name, words.get(name, meaning)) for name, meaning in columns)


_TRADEOFF_TAIL = (
    ("fpr", "the false-positive rate α of a membership test (--fpr)"),
    ("tpr_lower", "exact and pld: the lower end; pld: no privacy profile within the bracket certifies less"),
    (
        "tpr_estimate",
        "pld: an estimate inside the bracket (not a bound); clt-asymptotic: the central-limit approximation",
    ),
    (
        "tpr",
        "a certified upper bound on the true-positive rate of every test at fpr, like every epsilon column "
        "(empty for clt-asymptotic, which is not a bound); the upper end of the bracket [tpr_lower, tpr]",
    ),
    (
        "tpr_upper",
        "the same value as tpr, kept for the scripts that read it (-q and --max-tpr read it); a table shows "
        "tpr only",
    ),
    ("mu", "μ of μ-GDP: exact (Gaussian compositions) or the central-limit μ (clt-asymptotic)"),
    _NOTE,
)

#: ``--fpr``: command -> ((column, meaning), ...), the columns of the trade-off rows printed instead of ε
#: (one row per false-positive rate, per configuration and per method).  The man pages' TRADE-OFF
#: COLUMNS sections are generated from it.
TRADEOFF_SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "compose": (
        ("method", "exact, pld, rdp or clt-asymptotic (an approximation, not a bound)"),
        *_TRADEOFF_TAIL,
    ),
    "convert": (
        ("method", "optimal: the optimal conversion of the Rényi bound to a trade-off curve"),
        ("alpha", "the Rényi order α given (empty for --curve)"),
        ("rdp", "the Rényi-DP level ζ at alpha (empty for --curve)"),
        ("fpr", "the false-positive rate α of a membership test (--fpr)"),
        ("tpr", "a certified upper bound on the true-positive rate of every test at fpr"),
        ("tpr_upper", "the same value as tpr, kept for the scripts that read it; a table shows tpr only"),
        _NOTE,
    ),
    "sgd-epsilon": (
        ("method", "exact (q = 1), pld, rdp or clt-asymptotic (an approximation, not a bound)"),
        ("sample_rate", "the sampling rate q"),
        ("noise_multiplier", "the noise multiplier σ"),
        ("steps", "the number of steps T"),
        *_TRADEOFF_TAIL,
    ),
    "matrix": (
        *_MATRIX_ROW,
        ("noise_multiplier", "σ: the noise standard deviation relative to the clipping norm"),
        *_worded(_TRADEOFF_TAIL, _MATRIX_TRADEOFF_WORDS),
    ),
}


_RISK_TAIL = (
    ("prior", "--prior: the probability π the attacker gives to membership before seeing the output"),
    ("advantage_lower", "exact and pld: the lower end of the bracket [advantage_lower, advantage]"),
    ("advantage_estimate", "pld: an estimate inside the bracket (not a bound)"),
    (
        "advantage",
        "a certified upper bound on TPR − FPR of every membership test (δ(0), the total variation of the "
        "pair; exact for Gaussian compositions)",
    ),
    ("success_lower", "exact and pld: the lower end of the bracket [success_lower, success]"),
    ("success_estimate", "pld: an estimate inside the bracket (not a bound)"),
    (
        "success",
        "a certified upper bound on the probability that an attacker with prior π guesses membership right "
        "(max(π, 1 − π) is guessing without looking)",
    ),
    ("fpr", "with --target-tpr: the false-positive rate F of the target"),
    ("tpr_lower", "with --target-tpr (exact, pld): the lower end of the bracket [tpr_lower, tpr]"),
    ("tpr", "with --target-tpr: a certified upper bound on the TPR of every membership test at fpr"),
    (
        "epsilon",
        "with --target-advantage or --target-tpr: ε at --delta of the noise found (a certified upper bound)",
    ),
    ("delta", "with --target-advantage or --target-tpr: the --delta that epsilon is at"),
    _NOTE,
)

#: The columns of ``--advantage`` / ``--prior`` (compose, sgd-epsilon, convert): one row per method,
#: configuration and prior.
RISK_SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "compose": (
        ("method", "exact, pld or rdp"),
        ("sigma", "with --target-advantage: the least σ found for the specs that leave it out"),
        ("scale", "with --target-advantage: the least scale found for the specs that leave it out"),
        (
            "release_epsilon",
            "with --target-advantage: the largest per-release ε found for the specs that leave it out",
        ),
        *_RISK_TAIL,
    ),
    "convert": (
        (
            "method",
            "the guarantee's own profile: exact (--from gdp), dp (--from dp), optimal (a Rényi bound, --from zcdp)",
        ),
        ("guarantee", "the guarantee of the row: mu=, rho=, epsilon=,delta=, alpha=,rdp= or curve"),
        *_RISK_TAIL,
    ),
    "sgd-epsilon": (
        ("method", "exact (q = 1), pld or rdp"),
        ("sample_rate", "the sampling rate q"),
        ("noise_multiplier", "the noise multiplier σ (with --target-advantage: the least found)"),
        ("steps", "the number of steps T"),
        *_RISK_TAIL,
    ),
    "matrix": (
        *_MATRIX_ROW,
        ("noise_multiplier", "σ (with --target-advantage or --target-tpr: the least found)"),
        *_worded(_RISK_TAIL[:-1], _MATRIX_WORDS),
        *_MATRIX_MC,
        _NOTE,
    ),
}


def risk_names(command: str) -> list[str]:
    """The column names of ``command --advantage``/``--prior``, in order."""
    return [name for name, _ in RISK_SCHEMAS[command]]


def tradeoff_names(command: str) -> list[str]:
    """The column names of ``command --fpr``, in order."""
    return [name for name, _ in TRADEOFF_SCHEMAS[command]]
