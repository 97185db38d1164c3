"""The parameters of ``dpcalc matrix`` and their checks before any work (docs/math.md §12): :class:`MatrixParams`,
a ``--participation`` value parsed (:class:`dpcalc.engine.matrix.sensitivity.Participation`), the step counts of
``--steps`` against the strategies' size limits (:mod:`dpcalc.engine.matrix.strategies`), and the setting of a run
(its patterns, its methods, whether a method that does not apply is an error)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc.commands import choices
from dpcalc.engine.matrix.sensitivity import Participation
from dpcalc.engine.matrix.strategies import MAX_STEPS, strategy
from dpcalc.errors import InputError

#: The accountants, in the order rows are shown (dpcalc.commands.choices, read by --help without numpy).
MATRIX_METHODS = choices.MATRIX_METHODS
#: The most strategies (and participation patterns) in one run.  Kept: they are repeated options written out one by
#: one (never a range), each parsed, read (a file) and checked against its size limits (MAX_STEPS, MAX_DENSE_STEPS:
#: one strategy's n × n matrices held in memory) before anything is computed; the sweeps of the numeric options
#: (--steps, --noise-multiplier, --delta, ...) are estimated instead (:func:`dpcalc.commands.matrix.plan.work`), never refused.
MAX_STRATEGIES = 20


@dataclass(frozen=True)
class MatrixParams:
    """The inputs of ``dpcalc matrix``: the strategies (``--strategy`` values), the steps n (one, or a sweep: rows
    for each), the participation
    (``single``, ``min-sep:k=K,b=B`` or ``cyclic-poisson:b=B[,q=Q]``; one or a sequence: rows for each),
    ``delta`` and ``sigma`` (sequences: a sweep) or ``target_epsilon``; ``method`` one of :data:`MATRIX_METHODS`
    or ``"all"``."""

    strategies: Sequence[str]
    steps: int | Sequence[int] | None
    delta: Sequence[float] | None
    sigma: Sequence[float] | None = None
    target_epsilon: Sequence[float] | None = None
    participation: str | Sequence[str] = "single"
    method: str = "all"
    eps_error: float | None = None
    mc_samples: int | None = None  # mc: Monte Carlo samples per direction [MC_SAMPLES]
    confidence: float | None = None  # mc: the probability with which its ε holds [MC_CONFIDENCE]
    seed: int | None = None  # mc: the seed of the sampling [0]
    mmcc_memory_cap: int | None = None  # mmcc: the PLD's memory cap (set by the searches; None: its default)
    #: --noise-std S --clip-norm C: ((S, ...), C) when ``sigma`` is S/C (dpcalc.commands.noise_std); named in the
    #: caption only
    noise_std: tuple[tuple[float, ...], float] | None = None


def participation(text: str) -> Participation:
    """A ``--participation`` value (its keys checked, each fault named)."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    params = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq:
            raise InputError(f"--participation {text!r}: {part!r} is not KEY=VALUE")
        params[key.strip()] = value.strip()
    allowed = {
        "single": (),
        "min-sep": ("k", "b"),
        "cyclic-poisson": ("b", "q"),
        "poisson": ("q",),
        "balls-in-bins": ("b",),
    }
    if kind not in allowed:
        raise InputError(
            f"--participation {text!r}: must be single, min-sep:k=K,b=B, cyclic-poisson:b=B[,q=Q], poisson:q=Q "
            "or balls-in-bins:b=B"
        )
    for key in params:
        if key not in allowed[kind]:
            raise InputError(f"--participation {text!r}: unknown key {key!r}")
    for key in allowed[kind]:
        if key not in params and (key != "q" or kind == "poisson"):
            raise InputError(f"--participation {text!r}: give {key}=")

    def whole(key):
        if not re.fullmatch(r"[0-9]+", params[key]) or int(params[key]) < 1:
            raise InputError(
                f"--participation {text!r}: {key} must be a whole number >= 1, got {params[key]!r}"
            )
        return int(params[key])

    if kind == "single":
        return Participation("single")
    if kind == "min-sep":
        return Participation("min-sep", k=whole("k"), b=whole("b"))
    if kind == "balls-in-bins":
        return Participation("balls-in-bins", b=whole("b"))
    q = None
    if "q" in params:
        try:
            q = float(params["q"])
        except ValueError:
            q = float("nan")
        if not 0 < q <= 1:
            raise InputError(f"--participation {text!r}: q must be in (0, 1], got {params['q']!r}")
    if kind == "poisson":
        return Participation("poisson", b=1, q=q)
    return Participation("cyclic", b=whole("b"), q=q)


def step_counts(p: MatrixParams) -> list[int] | None:
    """The step counts of ``--steps`` (one, or a sweep), checked; None where they are left out (solved for).
    A file's C fixes n: it takes one step count (its size), never a sweep."""
    if p.steps is None:
        return None
    counts = [int(p.steps)] if isinstance(p.steps, (int, np.integer)) else [int(n) for n in p.steps]
    if not counts:
        raise InputError("--steps: give a number of steps")
    for n in counts:
        if not 1 <= n <= MAX_STEPS:
            raise InputError(f"--steps: must be a whole number in [1, {MAX_STEPS}], got {n}")
    if len(counts) > 1:
        for text in p.strategies:
            if text.partition(":")[0].strip() == "file":
                raise InputError(
                    f"--steps: a sweep of steps cannot go with --strategy {text!r} (a file's C fixes the steps: "
                    "give one --steps, its size)"
                )
    # the strategies' size limits grow with n: a run past them is refused before any row is computed (or estimated)
    for text in p.strategies:
        strategy(text, max(counts))
    return counts


def setting(p: MatrixParams, counts, question: str | None = None):
    """``(patterns, methods, strict)`` of a run: the ``--participation`` patterns parsed (each checked against
    every step count), the methods asked for and whether a method that does not apply is an error (one method
    and one pattern asked for) rather than rows left out; the Monte Carlo options checked."""
    if not p.strategies or len(p.strategies) > MAX_STRATEGIES:
        raise InputError(f"--strategy: give 1 to {MAX_STRATEGIES} strategies")
    texts = [p.participation] if isinstance(p.participation, str) else list(p.participation)
    if not texts or len(texts) > MAX_STRATEGIES:
        raise InputError(f"--participation: give 1 to {MAX_STRATEGIES} patterns")
    parts = [participation(t) for t in texts]
    for part in parts:
        for n in counts or ():
            if part.kind in ("cyclic", "balls-in-bins") and part.b > n:
                raise InputError(f"--participation: b = {part.b} partitions is more than the {n} steps")
    methods = list(MATRIX_METHODS) if p.method == "all" else [p.method]
    mc_opts = {"--mc-samples": p.mc_samples, "--confidence": p.confidence, "--seed": p.seed}
    if (given := [k for k, v in mc_opts.items() if v is not None]) and (
        "mc" not in methods or all(part.kind != "balls-in-bins" for part in parts)
    ):
        raise InputError(
            f"{given[0]}: applies to the mc row (--participation balls-in-bins:b=B, --method mc or all)"
        )
    # one pattern asked for: a method that does not apply to it is an error; several: its rows are left out
    strict = p.method != "all" and len(parts) == 1
    return parts, methods, strict
