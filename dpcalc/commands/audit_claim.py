"""The claim beside an audit's lower bound (docs/math.md §11.6): an ε given as it is (``--claimed-epsilon``),
the ε of a composition of mechanisms (``--claimed-mechanism``, as ``compose`` takes them, by its ``best``
method), or the ε of a DP-SGD run given as for ``sgd-epsilon`` (``--noise-multiplier``, ``--sample-rate`` or
``--batch-size`` with ``--dataset-size``, ``--steps`` or ``--epochs``), computed at each row's δ by the
PLD accountant of docs/math.md §7 (Poisson sampling, add/remove neighbours).  Its ε is the certified upper
end of the bracket, the number ``dpcalc sgd-epsilon --accountant pld`` prints, so that a lower bound above it
is a contradiction (exit 3), never an artefact of the discretisation.
"""

from __future__ import annotations

import math

from dpcalc.commands.compose import compose
from dpcalc.commands.sgd_epsilon import SgdEpsilonParams, sgd_epsilon
from dpcalc.errors import InputError
from dpcalc.render.cells import rounded
from dpcalc.result import Result

#: SgdEpsilonParams field -> the audit option that gives it (one value each).
SGD_OPTIONS = {
    "sigma": "--noise-multiplier",
    "sample_rate": "--sample-rate",
    "batch_size": "--batch-size",
    "dataset_size": "--dataset-size",
    "steps": "--steps",
    "epochs": "--epochs",
}
SGD_NAMES = "--noise-multiplier, --sample-rate/--batch-size/--dataset-size, --steps/--epochs"


def check(claimed_epsilon, sgd: dict | None, mechanisms=None) -> dict | None:
    """The DP-SGD options given (None if none); refuses more than one kind of claim, or a run left
    incomplete."""
    sgd = {k: v for k, v in (sgd or {}).items() if v is not None} or None
    kinds = [
        name
        for name, given in (
            ("--claimed-epsilon", claimed_epsilon is not None),
            (f"the DP-SGD run ({', '.join(SGD_OPTIONS[k] for k in sgd or {})})", sgd is not None),
            ("--claimed-mechanism", bool(mechanisms)),
        )
        if given
    ]
    if len(kinds) > 1:
        raise InputError(f"give one claim: {' or '.join(kinds)}, not both")
    if claimed_epsilon is not None and not claimed_epsilon >= 0:
        raise InputError(f"--claimed-epsilon: must be >= 0, got {claimed_epsilon}")
    if sgd is None:
        return None
    if "sigma" not in sgd:
        raise InputError(f"missing option --noise-multiplier (the claim's DP-SGD run needs {SGD_NAMES})")
    if "sample_rate" not in sgd and "batch_size" not in sgd:
        raise InputError("give --sample-rate, or --batch-size with --dataset-size (the claim's DP-SGD run)")
    if "steps" not in sgd and "epochs" not in sgd:
        raise InputError("give --steps or --epochs (the claim's DP-SGD run)")
    return sgd


def sgd_claim(sgd: dict, deltas) -> tuple[dict, str, dict]:
    """``({δ: ε}, note, run)``: the certified PLD ε of the DP-SGD run ``sgd`` at each δ, the note saying so,
    and the run's sample rate ``q``, noise multiplier ``sigma`` and ``steps``."""
    wanted = sorted({float(d) for d in deltas})
    res = sgd_epsilon(SgdEpsilonParams(delta=wanted, accountant="pld", **{k: [v] for k, v in sgd.items()}))
    eps = dict(zip(res.column("delta"), res.column("epsilon")))
    row = res.rows()[0]
    run = {"q": row["sample_rate"], "sigma": row["noise_multiplier"], "steps": row["steps"]}
    note = (
        f"epsilon_claimed: DP-SGD with Poisson sampling q = {run['q']:g}, noise multiplier {run['sigma']:g}, "
        f"{run['steps']} steps (add/remove neighbours), at each row's δ by the PLD accountant: the certified "
        "upper end of its bracket (as sgd-epsilon --accountant pld)"
    )
    return {d: eps[d] for d in wanted}, note, run


def mechanism_claim(texts, deltas) -> tuple[dict, str]:
    """``({δ: ε}, note)``: the ε of the composition of MECHANISM specs ``texts`` (as ``dpcalc compose``
    takes them) at each δ, by compose's ``best`` method: the smallest certified upper bound of its methods
    (docs/math.md §2, §7)."""
    wanted = sorted({float(d) for d in deltas})
    res = compose(list(texts), wanted, None, "best")
    eps = dict(zip(res.column("delta"), res.column("epsilon")))
    methods = sorted(set(res.column("method")))
    note = (
        f"epsilon_claimed: the composition {' + '.join(texts)} at each row's δ, the smallest certified upper "
        f"bound of compose's methods ({', '.join(methods)}; as dpcalc compose prints it)"
    )
    return {d: eps[d] for d in wanted}, note


def add_claim(result: Result, claimed: list[float]) -> Result:
    """The columns epsilon_claimed (one value per row) and ratio = epsilon_lower / epsilon_claimed."""
    lows = result.column("epsilon_lower")
    result.columns["epsilon_claimed"] = list(claimed)
    result.columns["ratio"] = [
        (e / c if math.isfinite(c) else 0.0) if c > 0 else (math.inf if e > 0 else 0.0)
        for e, c in zip(lows, claimed)
    ]
    return result


def exceeded(result: Result, claimed: float | None = None) -> str | None:
    """The verdict line when a lower bound exceeds the claimed ε of its row (the first such row), else
    None.  ``claimed`` (a single ε) stands in where the result has no ``epsilon_claimed`` column."""
    if "epsilon_claimed" in result.columns:
        claims = result.column("epsilon_claimed")
    elif claimed is not None:
        claims = [claimed] * len(result)
    else:
        return None
    for i, (e, c) in enumerate(zip(result.column("epsilon_lower"), claims), start=1):
        if c is not None and e > c:
            return (
                f"AUDIT FAILED: the attack proves epsilon >= {rounded(e, 'down')} (row {i}), above the claimed "
                f"epsilon {rounded(c, 'up')}: the accounting or the implementation is wrong, or the audit's "
                "assumptions fail"
            )
    return None
