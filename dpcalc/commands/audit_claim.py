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
from dpcalc.commands.iterate import IterateParams, iterate
from dpcalc.commands.langevin import LangevinParams, langevin
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


def check(claimed_epsilon, sgd: dict | None, mechanisms=None, settings=None) -> dict | None:
    """The DP-SGD options given (None if none); refuses more than one kind of claim, or a run left
    incomplete.  ``settings``: option -> the text of ``--claimed-iterate`` / ``--claimed-langevin`` (or None)."""
    sgd = {k: v for k, v in (sgd or {}).items() if v is not None} or None
    kinds = [
        name
        for name, given in (
            ("--claimed-epsilon", claimed_epsilon is not None),
            (f"the DP-SGD run ({', '.join(SGD_OPTIONS[k] for k in sgd or {})})", sgd is not None),
            ("--claimed-mechanism", bool(mechanisms)),
            *((option, text is not None) for option, text in (settings or {}).items()),
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


#: ``--claimed-iterate`` / ``--claimed-langevin``: each command's options as keys (name -> (field, whole number)),
#: the required ones, and the command's function with its parameters.
SETTINGS = {
    "--claimed-iterate": (
        {
            "sigma": ("sigma", False),
            "lipschitz": ("lipschitz", False),
            "lr": ("lr", False),
            "steps": ("steps", True),
            "diameter": ("diameter", False),
            "smoothness": ("smoothness", False),
        },
        ("sigma", "lipschitz", "lr", "steps"),
        "iterate",
    ),
    "--claimed-langevin": (
        {
            "sigma": ("sigma", False),
            "lr": ("lr", False),
            "strong_convexity": ("strong_convexity", False),
            "smoothness": ("smoothness", False),
            "dataset_size": ("dataset_size", True),
            "steps": ("steps", True),
            "sensitivity": ("sensitivity", False),
            "lipschitz": ("lipschitz", False),
        },
        ("sigma", "lr", "strong_convexity", "smoothness", "dataset_size", "steps"),
        "langevin",
    ),
}


def _settings(option: str, text: str) -> dict:
    """``key=value,...`` of ``option`` as the command's fields (one value each), every fault named."""
    keys, required, _ = SETTINGS[option]
    out: dict = {}
    for part in (p.strip() for p in text.split(",")):
        key, eq, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in keys:
            raise InputError(f"{option}: {part!r} is not KEY=VALUE with KEY one of {', '.join(keys)}")
        field, whole = keys[key]
        if field in out:
            raise InputError(f"{option}: {key} given twice")
        try:
            v = float(value)
        except ValueError:
            raise InputError(f"{option}: {key}={value!r} is not a number") from None
        if not (math.isfinite(v) and v > 0) or (whole and v != math.floor(v)):
            kind = "a whole number >= 1" if whole else "a finite number > 0"
            raise InputError(f"{option}: {key} must be {kind}, got {value!r}")
        out[field] = int(v) if whole else v
    missing = [k for k in required if keys[k][0] not in out]
    if missing:
        raise InputError(f"{option}: missing {', '.join(missing)}")
    return out


def settings_claim(option: str, text: str, deltas) -> tuple[dict, str]:
    """``({δ: ε}, note)``: the ε of an ``iterate`` or ``langevin`` setting (``--claimed-iterate`` /
    ``--claimed-langevin``, the command's options as key=value) at each δ: the smallest certified upper bound
    of its methods (docs/math.md §4, §5), as the command prints them with ``--method all``."""
    wanted = sorted({float(d) for d in deltas})
    fields = {k: [v] for k, v in _settings(option, text).items()}
    command = SETTINGS[option][2]
    try:
        if command == "iterate":
            res = iterate(IterateParams(delta=wanted, **fields))
            upper = [True] * len(res)
        else:
            res = langevin(LangevinParams(delta=wanted, **fields))
            upper = [b == "upper" for b in res.column("bound")]
    except InputError as exc:
        raise InputError(f"{option}: {exc}") from None
    best: dict[float, float] = {d: math.inf for d in wanted}
    for d, e, up in zip(res.column("delta"), res.column("epsilon"), upper):
        if up and e is not None and not (isinstance(e, float) and math.isnan(e)):
            best[float(d)] = min(best[float(d)], float(e))
    note = (
        f"epsilon_claimed: dpcalc {command} with {text} at each row's δ, the smallest certified upper bound of "
        f"its methods (as dpcalc {command} --method all prints them)"
    )
    return best, note


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
