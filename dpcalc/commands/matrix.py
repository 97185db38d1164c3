"""``dpcalc matrix``: the privacy of training with correlated noise — the matrix mechanism C·G + Z of DP-FTRL and
banded matrix factorization (docs/math.md §12).

For each strategy (:mod:`dpcalc.engine.matrix.strategies`) and participation pattern it reports the sensitivity of
C (exact where a theorem makes it so, else a certified upper bound: :mod:`dpcalc.engine.matrix.sensitivity`),
then one row per accountant that applies (:mod:`dpcalc.engine.matrix.accounting`): ``gaussian`` (no
amplification, exact), ``bandmf-rdp`` and ``bandmf-pld`` (amplified BandMF, cyclic Poisson sampling).  With
``target_epsilon`` and no noise multiplier: the smallest noise multiplier of each row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc.commands import choices, schema
from dpcalc.engine.grid import product
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.matrix.sensitivity import Participation, sensitivity
from dpcalc.engine.matrix.strategies import strategy
from dpcalc.engine.mechanisms import sgm
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result

#: The accountants, in the order rows are shown (dpcalc.commands.choices, read by --help without numpy).
MATRIX_METHODS = choices.MATRIX_METHODS
#: The most strategies, and rows, in one run.
MAX_STRATEGIES = 20
MAX_ROWS = 10_000
#: The relative tolerance of the noise calibration of the amplified rows.
SIGMA_RTOL = 1e-4
COLUMNS = tuple(schema.names("matrix"))

_NOTES = {
    "gaussian": "no amplification: the Gaussian mechanism with this sensitivity (Balle & Wang 2018, Thm 8), exact",
    "bandmf-rdp": "amplified BandMF (Choquette-Choo et al. 2023, Thm 4): DP-SGD at rate q, ⌈n/b⌉ steps, "
    "σ/max column norm; rdp accountant",
    "bandmf-pld": "amplified BandMF (Choquette-Choo et al. 2023, Thm 4): DP-SGD at rate q, ⌈n/b⌉ steps, "
    "σ/max column norm; certified PLD bracket",
}


@dataclass(frozen=True)
class MatrixParams:
    """The inputs of ``dpcalc matrix``: the strategies (``--strategy`` values), the steps n, the participation
    (``single``, ``min-sep:k=K,b=B`` or ``cyclic-poisson:b=B[,q=Q]``), ``delta`` and ``sigma`` (sequences: a
    sweep) or ``target_epsilon``; ``method`` one of :data:`MATRIX_METHODS` or ``"all"``."""

    strategies: Sequence[str]
    steps: int
    delta: Sequence[float]
    sigma: Sequence[float] | None = None
    target_epsilon: Sequence[float] | None = None
    participation: str = "single"
    method: str = "all"
    eps_error: float | None = None


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
    allowed = {"single": (), "min-sep": ("k", "b"), "cyclic-poisson": ("b", "q")}
    if kind not in allowed:
        raise InputError(
            f"--participation {text!r}: must be single, min-sep:k=K,b=B or cyclic-poisson:b=B[,q=Q]"
        )
    for key in params:
        if key not in allowed[kind]:
            raise InputError(f"--participation {text!r}: unknown key {key!r}")
    for key in allowed[kind]:
        if key not in params and key != "q":
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
    q = None
    if "q" in params:
        try:
            q = float(params["q"])
        except ValueError:
            q = float("nan")
        if not 0 < q <= 1:
            raise InputError(f"--participation {text!r}: q must be in (0, 1], got {params['q']!r}")
    return Participation("cyclic", b=whole("b"), q=q)


def matrix(params: MatrixParams) -> Result:
    """One row per (strategy, accountant, σ or target ε, δ) (module docstring)."""
    p = params
    if not p.strategies or len(p.strategies) > MAX_STRATEGIES:
        raise InputError(f"--strategy: give 1 to {MAX_STRATEGIES} strategies")
    if (p.sigma is None) == (p.target_epsilon is None):
        raise InputError("give --noise-multiplier, or --target-epsilon to solve for it")
    part = participation(p.participation)
    if part.kind != "single" and part.b > p.steps and part.kind == "cyclic":
        raise InputError(f"--participation: b = {part.b} partitions is more than the {p.steps} steps")
    methods = list(MATRIX_METHODS) if p.method == "all" else [p.method]
    solve = p.target_epsilon is not None
    axes = {
        "x": np.asarray(p.target_epsilon if solve else p.sigma, float),
        "delta": np.asarray(p.delta, float),
    }
    g = product(**axes)
    if g["x"].size * len(p.strategies) * len(methods) > MAX_ROWS:
        raise InputError(f"the sweep would make more than {MAX_ROWS} rows: narrow a range")
    out: dict[str, list] = {c: [] for c in COLUMNS}
    for text in p.strategies:
        s = strategy(text, p.steps)
        sens = sensitivity(s, part)
        for m in methods:
            # as sgd-epsilon evaluates one chunk: the same numbers as its rows (C = I is DP-SGD exactly)
            with sgm.light_start():
                _rows(out, s, part, sens, m, g, solve, p, strict=p.method != "all")
    headline = "noise_multiplier" if solve else "epsilon"
    caption = (
        f"participation: {part.label()}; noise: C·G + Z with Z ~ N(0, σ²) per entry, σ relative to the clipping "
        "norm; sensitivity: of C under the participation (sensitivity_exact: false = a certified upper bound)"
    )
    if solve:
        caption += "; noise_multiplier: the smallest (within a factor 1.0001 for bandmf rows, exact for gaussian) with ε <= target"
    res = Result(out, headline=headline, title="Matrix mechanism (correlated noise)", caption=caption)
    res.plot = _plot(out, p, solve)
    return res


def _rows(out, s, part, sens, method, g, solve, p, strict):
    n = g["x"].size
    why = acc.bandmf_refusal(s, part) if method.startswith("bandmf") else None
    if why is not None:
        if strict:
            raise InputError(f"--method {method}: {why}")
        return
    lower = est = np.full(n, np.nan)
    if method == "gaussian":
        if solve:
            sigma = acc.unamplified_sigma(sens.value, g["x"], g["delta"])
            eps = acc.unamplified_epsilon(sens.value, sigma, g["delta"])
        else:
            sigma, eps = g["x"], acc.unamplified_epsilon(sens.value, g["x"], g["delta"])
    else:
        name = method.removeprefix("bandmf-")
        if solve:
            sigma, eps = acc.bandmf_sigma(s, part, g["x"], g["delta"], name, SIGMA_RTOL, p.eps_error)
            if name == "pld":
                eps, lower, est = acc.bandmf_epsilon(s, part, sigma, g["delta"], "pld", p.eps_error)
        else:
            sigma = g["x"]
            eps, lower, est = acc.bandmf_epsilon(s, part, sigma, g["delta"], name, p.eps_error)
    steps, _ = acc.bandmf_run(s, part) if method.startswith("bandmf") else (None, None)
    values = {
        "strategy": [s.label] * n,
        "participation": [part.label()] * n,
        "steps": [s.n] * n,
        "bands": [s.bands] * n,
        "sample_rate": [part.q] * n,
        "method": [method] * n,
        "sensitivity": [sens.value] * n,
        "sensitivity_exact": [sens.exact] * n,
        "noise_multiplier": [float(v) for v in np.asarray(sigma, float).reshape(-1)],
        "delta": g["delta"].tolist(),
        "target_epsilon": g["x"].tolist() if solve else [None] * n,
        "epsilon": [float(v) for v in np.asarray(eps, float).reshape(-1)],
        "epsilon_lower": [None if np.isnan(v) else float(v) for v in np.asarray(lower, float).reshape(-1)],
        "epsilon_estimate": [None if np.isnan(v) else float(v) for v in np.asarray(est, float).reshape(-1)],
        "dpsgd_steps": [steps] * n,
        "note": [f"{_NOTES[method]}; sensitivity: {sens.how}"] * n,
    }
    for k in COLUMNS:
        out[k] += values[k]


def _plot(out, p, solve):
    if len(out["method"]) < 2:
        return None
    x = (
        "delta"
        if (p.sigma or p.target_epsilon) and len(p.delta) > 1
        else ("target_epsilon" if solve else "noise_multiplier")
    )
    return PlotSpec(
        x=x,
        y="noise_multiplier" if solve else "epsilon",
        series="method",
        group=("strategy",),
        band=("epsilon_lower", "epsilon") if not solve else None,
        logx=x == "delta",
        autolog=True,
        title="Matrix mechanism: " + ("smallest noise multiplier" if solve else "ε"),
        ylabel="noise multiplier σ" if solve else "ε (nats)",
    )
