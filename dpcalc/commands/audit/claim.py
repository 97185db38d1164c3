"""The claim beside an audit's lower bound (docs/math.md §11.6): an ε given as it is (``--claimed-epsilon``),
the ε of a composition of mechanisms (``--claimed-mechanism``, as ``compose`` takes them, by its ``best``
method), or the ε of a DP-SGD run given as for ``sgd-epsilon`` (``--noise-multiplier``, ``--sample-rate`` or
``--batch-size`` with ``--dataset-size``, ``--steps`` or ``--epochs``), computed at each row's δ by the
PLD accountant of docs/math.md §7 (Poisson sampling, add/remove neighbours).  Its ε is the certified upper
end of the bracket, the number ``dpcalc sgd-epsilon --method pld`` prints, so that a lower bound above it
is a contradiction (exit 3), never an artefact of the discretisation.

The claim can also be a run as another command describes it, with that command's options and files, and its ε
is the smallest *certified* upper bound of that command's methods at each row's δ (never an estimate, a bound
holding with a confidence, or a lower end):

* a DpEvent (``--dp-event FILE``, repeatable, ``-`` for standard input; read by
  :mod:`dpcalc.commands.dp_events` as ``compose --dp-event`` reads it), its mechanisms joining any
  ``--claimed-mechanism``: ``compose``'s ``best``;
* a run in phases (``--schedule FILE``, with ``--dataset-size`` for batch sizes, as ``sgd-epsilon --schedule``):
  ε after the last phase, the smaller of the rdp and pld accountants' (pld where it applies);
* a matrix-mechanism run (``--strategy``, ``--participation``, ``--steps``, ``--noise-multiplier``, each meaning
  what it means on ``matrix``): the smallest of its gaussian, bandmf-rdp, bandmf-pld and mmcc rows that apply
  (``mc`` holds with a confidence only: never a claim).

:func:`check` tells which claim the options give (one at a time) and refuses a mix in one line naming both.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from dpcalc.commands.compose.command import compose
from dpcalc.commands.dp_events import event_specs
from dpcalc.commands.iterate.command import IterateParams, iterate
from dpcalc.commands.langevin.command import LangevinParams, langevin
from dpcalc.commands.matrix.command import matrix
from dpcalc.commands.matrix.params import MATRIX_METHODS, MatrixParams
from dpcalc.commands.sgd import schedule as sgd_schedule
from dpcalc.commands.sgd.epsilon import sgd_epsilon
from dpcalc.commands.sgd.params import SgdEpsilonParams
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


#: The options of a matrix-mechanism run on audit, as ``dpcalc matrix`` names them (--strategy and --participation
#: are its own; --steps and --noise-multiplier are shared with the DP-SGD run and mean the matrix run's with them).
MATRIX_NAMES = "--strategy, --participation, --steps, --noise-multiplier"
#: The matrix rows that can be a claim: the certified ones (mc holds with a confidence only).
MATRIX_CLAIM_METHODS = tuple(m for m in MATRIX_METHODS if m != "mc")


@dataclass(frozen=True)
class Claim:
    """The claim the options give (:func:`check`): ``kind`` is ``"epsilon"`` (``--claimed-epsilon``), ``"sgd"``
    (a DP-SGD run: ``sgd``), ``"composition"`` (``mechanisms`` and the DpEvent files ``dp_events``),
    ``"schedule"`` (the file ``schedule``, ``dataset_size`` for its batch sizes), ``"matrix"`` (``matrix``:
    strategy, participation, steps, sigma) or ``"setting"`` (``option`` = --claimed-iterate/--claimed-langevin
    and its ``text``)."""

    kind: str
    epsilon: float | None = None
    sgd: dict | None = None
    mechanisms: tuple[str, ...] = ()
    dp_events: tuple[str, ...] = ()
    schedule: str | None = None
    dataset_size: int | None = None
    matrix: dict | None = None
    option: str | None = None
    text: str | None = None


def check(p) -> Claim | None:
    """The claim of the audit's parameters ``p`` (:class:`~dpcalc.commands.audit.command.AuditParams`), or None.

    The run options are shared: with ``--strategy`` or ``--participation``, ``--steps`` and
    ``--noise-multiplier`` are the matrix run's; with ``--schedule``, ``--dataset-size`` is the schedule's (as on
    ``sgd-epsilon``); the other run options are a DP-SGD run's.  More than one claim, a run left incomplete, or
    standard input wanted twice is one :class:`InputError` naming the options at fault."""
    sgd = {k: v for k, v in (p.claimed_sgd or {}).items() if v is not None}
    strategies, patterns = tuple(p.claimed_strategy or ()), tuple(p.claimed_participation or ())
    mat = None
    if strategies or patterns:
        mat = {"strategy": strategies, "participation": patterns}
        for key in ("sigma", "steps"):
            if key in sgd:
                mat[key] = sgd.pop(key)
    dataset_size = sgd.pop("dataset_size", None) if p.claimed_schedule is not None else None
    events = tuple(p.claimed_dp_events or ())
    mechanisms = tuple(p.claimed_mechanisms or ())
    settings = {"--claimed-iterate": p.claimed_iterate, "--claimed-langevin": p.claimed_langevin}
    composition = [o for o, given in (("--claimed-mechanism", mechanisms), ("--dp-event", events)) if given]
    matrix_given = [
        o for o, k in (("--strategy", "strategy"), ("--participation", "participation")) if mat and mat[k]
    ]
    matrix_given += [SGD_OPTIONS[k] for k in ("sigma", "steps") if mat and k in mat]
    kinds = [
        name
        for name, given in (
            ("--claimed-epsilon", p.claimed_epsilon is not None),
            (f"the DP-SGD run ({', '.join(SGD_OPTIONS[k] for k in sgd)})", bool(sgd)),
            (" and ".join(composition), bool(composition)),
            ("--schedule", p.claimed_schedule is not None),
            (f"the matrix-mechanism run ({', '.join(matrix_given)})", mat is not None),
            *((option, text is not None) for option, text in settings.items()),
        )
        if given
    ]
    if len(kinds) > 1:
        raise InputError(
            f"give one claim: {' or '.join(kinds)}, not {'both' if len(kinds) == 2 else 'several'}"
        )
    _check_stdin(p, events, mechanisms)
    if p.claimed_epsilon is not None:
        if not p.claimed_epsilon >= 0:
            raise InputError(f"--claimed-epsilon: must be >= 0, got {p.claimed_epsilon}")
        return Claim("epsilon", epsilon=float(p.claimed_epsilon))
    if sgd:
        return Claim("sgd", sgd=_check_sgd(sgd))
    if composition:
        return Claim("composition", mechanisms=mechanisms, dp_events=events)
    if p.claimed_schedule is not None:
        return Claim("schedule", schedule=p.claimed_schedule, dataset_size=dataset_size)
    if mat is not None:
        return Claim("matrix", matrix=_check_matrix(mat))
    for option, text in settings.items():
        if text is not None:
            return Claim("setting", option=option, text=text)
    return None


def _check_sgd(sgd: dict) -> dict:
    if "sigma" not in sgd:
        raise InputError(f"missing option --noise-multiplier (the claim's DP-SGD run needs {SGD_NAMES})")
    if "sample_rate" not in sgd and "batch_size" not in sgd:
        raise InputError(
            "give --sample-rate, or --batch-size with --dataset-size (the claim's DP-SGD run; or --strategy for "
            "a matrix-mechanism run)"
        )
    if "steps" not in sgd and "epochs" not in sgd:
        raise InputError("give --steps or --epochs (the claim's DP-SGD run)")
    return sgd


def _check_matrix(mat: dict) -> dict:
    """The matrix run's options, one value each: a strategy, a participation (default single), steps, σ."""
    if not mat["strategy"]:
        raise InputError(
            f"--participation: a matrix-mechanism claim needs --strategy (the run as dpcalc matrix takes it: "
            f"{MATRIX_NAMES})"
        )
    for option, key in (("--strategy", "strategy"), ("--participation", "participation")):
        if len(mat[key]) > 1:
            raise InputError(
                f"{option}: the claim is one run: give one {option} (dpcalc matrix compares several)"
            )
    for option, key in (("--steps", "steps"), ("--noise-multiplier", "sigma")):
        if key not in mat:
            raise InputError(
                f"missing option {option} (the claim's matrix-mechanism run needs --strategy, --steps and "
                "--noise-multiplier, and takes --participation)"
            )
    return {
        "strategy": mat["strategy"][0],
        "participation": mat["participation"][0] if mat["participation"] else "single",
        "steps": int(mat["steps"]),
        "sigma": float(mat["sigma"]),
    }


def _check_stdin(p, events, mechanisms) -> None:
    """Standard input is read once: a claim read from ``-`` cannot go with ``--input -`` or ``--scores -``."""
    outcomes = next((o for o, v in (("--input", p.input), ("--scores", p.scores)) if v == "-"), None)
    if outcomes is None:
        return
    claims = [
        *(("--dp-event -",) if "-" in events else ()),
        *(("--schedule -",) if p.claimed_schedule == "-" else ()),
        *(("--claimed-mechanism @-",) if any(m.strip() in ("-", "@-") for m in mechanisms) else ()),
    ]
    if claims:
        raise InputError(
            f"{claims[0]}: standard input is read once, and {outcomes} - reads it: give one of them as a file"
        )


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
        "upper end of its bracket (as sgd-epsilon --method pld)"
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


def _by(picks: dict[float, str], best: dict[float, float]) -> str:
    """The method that gave the claim at each δ with a finite one: one name, or one per δ where they differ;
    the δ without a finite claim (ε = inf, as at δ = 0 for Gaussian noise) said apart."""
    finite = {d: m for d, m in picks.items() if math.isfinite(best[d])}
    names = list(dict.fromkeys(finite.values()))
    text = names[0] if len(names) == 1 else ", ".join(f"{m} at δ = {d:g}" for d, m in finite.items())
    infinite = [f"{d:g}" for d in best if d not in finite]
    if not infinite:
        return text
    none = f"no finite ε at δ = {', '.join(infinite)}"
    return f"{text} ({none})" if finite else none


def composition_claim(texts, sources, deltas) -> tuple[dict, str]:
    """``({δ: ε}, note)``: the ε of the composition of the MECHANISM specs ``texts`` and the DpEvent files
    ``sources`` (read as ``compose --dp-event`` reads them, ``-``: standard input) at each δ, by compose's
    ``best`` method, the method named in the note."""
    specs = (*texts, *event_specs(sources))
    if not specs:
        raise InputError(
            f"--dp-event {sources[0]!r}: the event has no mechanism (a NoOpDpEvent, or sampling at rate 0): there is no run to claim"
        )
    wanted = sorted({float(d) for d in deltas})
    res = compose(list(specs), wanted, None, "best")
    eps = dict(zip(res.column("delta"), res.column("epsilon")))
    picks = dict(zip(res.column("delta"), res.column("method")))
    given = [*(("--claimed-mechanism",) if texts else ()), *(f"--dp-event {src!r}" for src in sources)]
    note = (
        f"epsilon_claimed: the composition {' + '.join(specs)} (from {' and '.join(given)}) at each row's δ, the "
        f"smallest certified upper bound of compose's methods (as dpcalc compose --dp-event prints it): {_by(picks, eps)}"
    )
    return {d: eps[d] for d in wanted}, note


#: The neighbouring relations as the notes say them.
RELATIONS = {"add-remove": "add/remove", "replace-one": "replace-one"}


def schedule_claim(path: str, dataset_size, deltas) -> tuple[dict, str]:
    """``({δ: ε}, note)``: ε after the last phase of the run in phases of ``--schedule path`` (read as
    ``sgd-epsilon --schedule`` reads it, ``--dataset-size`` for its batch sizes; neighbours as it takes them:
    replace-one if a phase is fixed-size, else add/remove) at each δ, the smaller of its rdp and pld
    accountants' certified upper bounds (pld where it applies), the accountant named in the note."""
    text = sgd_schedule.schedule_text(path)  # the one reader of whole text inputs (- : standard input)
    phases, settings = sgd_schedule.read_schedule(path, text, dataset_size, "poisson")
    free = next((i for i, (s, _, _) in enumerate(phases) if s is None), None)
    if free is not None:
        raise InputError(
            f"--schedule {path!r}: phase {free + 1} leaves its noise multiplier out ({sgd_schedule.FREE}): a claim "
            "is a run whose every phase's noise is given"
        )
    relation = (
        "replace-one" if any(st[0] == "fixed-size" for st in settings) else "add-remove"
    )  # sgd-epsilon's
    wanted = sorted({float(d) for d in deltas})
    results, why = [], None
    for name in ("rdp", "pld"):
        try:
            results.append(
                sgd_schedule.sgd_schedule(
                    phases, wanted, name, relation, "optimal", None, path, None, settings
                )
            )
        except InputError as exc:
            if name == "rdp":
                raise
            why = re.sub(
                r"; use --(accountant|method) rdp$", "", str(exc)
            )  # sgd-epsilon's advice, not audit's
    best: dict[float, float] = {d: math.inf for d in wanted}
    picks: dict[float, str] = {}
    last = len(phases)
    for res in results:
        for phase, name, d, e in zip(*(res.column(c) for c in ("phase", "accountant", "delta", "epsilon"))):
            if phase == last and (float(d) not in picks or float(e) < best[float(d)]):
                best[float(d)], picks[float(d)] = float(e), name
    samplers = ", ".join(dict.fromkeys(st[0] for st in settings))
    note = (
        f"epsilon_claimed: the run in {last} phase{'s' if last > 1 else ''} of --schedule {path!r} "
        f"({sum(t for _, _, t in phases)} steps; sampling {samplers}; {RELATIONS[relation]} neighbours), ε after "
        "its last phase at each row's δ, the smallest certified upper bound of sgd-epsilon --schedule's rdp and pld "
        f"accountants: {_by(picks, best)}" + (f"; pld does not apply: {why}" if why else "")
    )
    return best, note


def matrix_claim(run: dict, deltas) -> tuple[dict, str]:
    """``({δ: ε}, note)``: the ε of the matrix-mechanism run ``run`` (strategy, participation, steps, sigma; as
    ``dpcalc matrix`` takes them) at each δ: the smallest of its certified rows (gaussian, bandmf-rdp,
    bandmf-pld, mmcc, those that apply; never mc, a bound with a confidence), the method named in the note; a row
    past a limit of its own (mmcc's steps) is left out, and the note says so.
    At δ = 0 the Gaussian noise's loss is unbounded: ε = inf (matrix takes δ in (0, 1))."""
    wanted = sorted({float(d) for d in deltas})
    positive = [d for d in wanted if d > 0]
    best: dict[float, float] = {d: math.inf for d in wanted}
    picks: dict[float, str] = {d: "gaussian" for d in wanted}
    applied, skipped, label = [], [], None
    for method in MATRIX_CLAIM_METHODS:
        params = MatrixParams(
            strategies=[run["strategy"]],
            steps=run["steps"],
            delta=positive or [0.5],  # δ = 0 alone: the run is still checked (its ε there is inf)
            sigma=[run["sigma"]],
            participation=run["participation"],
            method=method,
        )
        try:
            res = matrix(params)
        except InputError as exc:
            if method == "gaussian":  # the run itself is refused (its strategy, pattern or size)
                raise
            if not str(exc).startswith(f"--method {method}: "):  # past a limit of its own: left out, said
                skipped.append(f"{method} not computed ({exc})")
            continue  # does not apply to this strategy and participation
        applied.append(method)
        label = label or (res.column("strategy")[0], res.column("participation")[0])
        if not positive:
            continue
        for d, e in zip(res.column("delta"), res.column("epsilon")):
            if e is not None and float(e) < best[float(d)]:
                best[float(d)], picks[float(d)] = float(e), method
    note = (
        f"epsilon_claimed: the matrix mechanism --strategy {label[0]} --participation {label[1]} over "
        f"{run['steps']} steps at noise multiplier {run['sigma']:g}, at each row's δ the smallest certified "
        f"upper bound of dpcalc matrix's rows (those that apply: {', '.join(applied)}; mc, a bound with a confidence, is "
        f"never a claim): {_by(picks, best)}" + "".join(f"; {why}" for why in skipped)
    )
    return best, note


def add(result: Result, claim: Claim | None) -> dict | None:
    """The claim's columns epsilon_claimed and ratio and its note added to ``result`` (nothing without a
    claim); returns the DP-SGD run (``{q, sigma, steps}``, for the plot's profile curve) or None."""
    if claim is None:
        return None
    deltas = result.column("delta")
    run, note = None, None
    if claim.kind == "epsilon":
        add_claim(result, [claim.epsilon] * len(result))
        return None
    if claim.kind == "sgd":
        by_delta, note, run = sgd_claim(claim.sgd, deltas)
    elif claim.kind == "composition" and not claim.dp_events:
        by_delta, note = mechanism_claim(claim.mechanisms, deltas)  # as before --dp-event: its note unchanged
    elif claim.kind == "composition":
        by_delta, note = composition_claim(claim.mechanisms, claim.dp_events, deltas)
    elif claim.kind == "schedule":
        by_delta, note = schedule_claim(claim.schedule, claim.dataset_size, deltas)
    elif claim.kind == "matrix":
        by_delta, note = matrix_claim(claim.matrix, deltas)
    else:
        by_delta, note = settings_claim(claim.option, claim.text, deltas)
    add_claim(result, [by_delta[float(d)] for d in deltas])
    result.notes.append(note)
    return run


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
