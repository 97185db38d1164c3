"""DP-SGD accounting: ε of a training run, or the noise / steps for a target ε (docs/math.md §3).

:func:`sgd_epsilon` checks the combination of inputs, builds their cartesian product, asks the
accountants of :mod:`dpcalc.engine.dpsgd` (and the PLD accountant, docs/math.md §7) and packs the
answer into a :class:`~dpcalc.result.Result`.  numpy and scipy load only when it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from dpcalc.commands import schema, sweep
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result, Stream

#: The accountants offered (static so that --help needs no numpy); each is an entry of
#: ``dpcalc.engine.dpsgd.accounting.ACCOUNTANTS``.
ACCOUNTANTS = ("rdp", "pld", "abadi", "bassily")
CONVERSIONS = ("optimal", "balle", "mironov")
METHOD_LABEL = {"rdp": "rdp", "pld": "pld", "abadi": "abadi-asymptotic", "bassily": "bassily-reference"}
#: Relative tolerance of the noise calibration (the σ reported is within this factor of the smallest).
SIGMA_RTOL = 1e-4
#: Combinations per chunk of a sweep (memory is bounded by the chunk, not by the sweep).
CHUNK = 2048


@dataclass(frozen=True)
class SgdEpsilonParams:
    """The inputs of ``dpcalc sgd-epsilon``: each numeric field a sequence of values (a sweep) or None.

    Give ``sigma`` (the noise multiplier), the sample rate (``sample_rate``, or ``batch_size`` with
    ``dataset_size``), the length (``steps``, or ``epochs``) and ``delta``.  With ``target_epsilon``,
    leave out ``sigma`` (to get the smallest one) or the length (to get the largest number of steps).
    ``accountant`` is one of :data:`ACCOUNTANTS` or ``"all"``; ``conversion`` one of
    :data:`CONVERSIONS`; ``sampling`` ``"poisson"`` or ``"fixed-size"``; ``neighbors``
    ``"add-remove"`` or ``"replace-one"`` (None: the usual one for the sampling); ``eps_error`` the
    width of the PLD bracket (a number, or a sequence of one number).
    """

    delta: Sequence[float]
    sigma: Sequence[float] | None = None
    sample_rate: Sequence[float] | None = None
    batch_size: Sequence[int] | None = None
    dataset_size: Sequence[int] | None = None
    steps: Sequence[int] | None = None
    epochs: Sequence[float] | None = None
    target_epsilon: Sequence[float] | None = None
    accountant: str = "rdp"
    conversion: str = "optimal"
    sampling: str = "poisson"
    neighbors: str | None = None
    eps_error: float | Sequence[float] | None = None


def sgd_epsilon(params: SgdEpsilonParams) -> Result:
    """ε of every combination of the inputs under each accountant asked for, or the smallest noise
    multiplier / largest number of steps within ``target_epsilon`` (one row per combination and
    accountant).  Raises :class:`~dpcalc.errors.InputError` for an impossible combination."""
    return sgd_epsilon_stream(params, chunk=None).collect()


def sgd_epsilon_stream(
    params: SgdEpsilonParams, *, chunk: int | None = CHUNK, jobs: int | None = 1
) -> Stream:
    """:func:`sgd_epsilon` as a :class:`~dpcalc.result.Stream` of chunks of at most ``chunk``
    combinations each (0: :data:`CHUNK`; ``None``: one chunk), computed by ``jobs`` processes (``None``: as many as
    the sweep can use, see :func:`dpcalc.commands.sweep.auto_jobs`).  Memory is bounded by the
    chunk, not by the sweep; the checks run before the first chunk."""
    p, names, solve = _checked(params)
    sweep.check_rows({opt: len(v) for opt, v in _swept(p).items()}, len(names))
    g, kw = _prepare(p, names)
    n = g["q"].size
    columns = _column_names(p, names, solve, g)
    caption = _caption(p, names, solve, g)
    headline = {"sigma": "noise_multiplier", "steps": "steps"}.get(solve, "epsilon")  # never an estimate
    pieces = sweep.slices(n, CHUNK if chunk == 0 else chunk)
    tasks = [(name, lo, hi) for name in names for lo, hi in pieces]
    # a sweep of one chunk may evaluate small arrays without scipy (a quick start for single queries);
    # a sweep of several chunks uses scipy throughout, so that no value depends on where a chunk ends
    light = len(pieces) == 1

    def compute(task):
        name, lo, hi = task
        part = {k: v[lo:hi] for k, v in g.items()}
        part_kw = {k: (v[lo:hi] if k == "dataset_size" else v) for k, v in kw.items()}
        cols = _accountant_rows(p, name, solve, part, part_kw, light, strict=len(names) == 1)
        return Result(
            _result_columns(p, solve, part, [(name, cols)], columns),
            headline=headline,
            title="DP-SGD accounting",
            caption=caption,
        )

    def finish(result):
        result.plot = _plot_spec(p, result.columns, headline)
        return result

    return Stream(
        columns,
        sweep.run(compute, tasks, jobs, rows=n * len(names)),
        headline=headline,
        title="DP-SGD accounting",
        caption=caption,
        finish=finish,
    )


def _swept(p: SgdEpsilonParams) -> dict:
    """Option -> its values, for the options given (their product is the grid)."""
    options = {
        "--sample-rate": p.sample_rate,
        "--batch-size": p.batch_size,
        "--dataset-size": p.dataset_size,
        "--noise-multiplier": p.sigma,
        "--steps": p.steps,
        "--epochs": p.epochs,
        "--delta": p.delta,
        "--target-epsilon": p.target_epsilon,
    }
    return {k: v for k, v in options.items() if v is not None}


def _invalid(option: str, message: str) -> InputError:
    """An error about one option's value, worded as the command line words a bad option value."""
    return InputError(f"Invalid value for '{option}': {message}")


def _checked(p: SgdEpsilonParams):
    """The inputs with the neighbouring relation and ``eps_error`` resolved, the accountants to run
    and what to solve for (None, ``"sigma"`` or ``"steps"``); the checks run in the order the
    command line has always reported them."""
    neighbors = p.neighbors
    if neighbors is None:
        neighbors = "replace-one" if p.sampling == "fixed-size" else "add-remove"
    if p.sample_rate is not None and p.batch_size is not None:
        raise InputError("give either --sample-rate or --batch-size with --dataset-size, not both")
    if p.sample_rate is None and (p.batch_size is None or p.dataset_size is None):
        raise InputError("give --sample-rate, or --batch-size with --dataset-size")
    if p.steps is not None and p.epochs is not None:
        raise InputError("give either --steps or --epochs, not both")
    solve = None
    if p.target_epsilon is None:
        if p.sigma is None:
            raise InputError("missing option --noise-multiplier (or give --target-epsilon to solve for it)")
        if p.steps is None and p.epochs is None:
            raise InputError("give --steps or --epochs (or --target-epsilon to solve for the steps)")
    else:
        if p.sigma is None and p.steps is None and p.epochs is None:
            raise InputError("with --target-epsilon, leave out one of --noise-multiplier or --steps/--epochs")
        if p.sigma is not None and (p.steps is not None or p.epochs is not None):
            raise InputError(
                "with --target-epsilon, leave out the option to solve for: --noise-multiplier, or --steps/--epochs"
            )
        solve = "sigma" if p.sigma is None else "steps"
    if p.batch_size is not None:
        bad = [(b, n) for b in p.batch_size for n in p.dataset_size if b > n]
        if bad:
            raise _invalid("--dataset-size", f"{bad[0][1]} is smaller than the batch size {bad[0][0]}")
    if p.accountant == "all":
        names = [a for a in ACCOUNTANTS if _applies(a, p.sampling, neighbors, p.dataset_size, solve)]
    else:
        names = [p.accountant]
    if p.accountant == "pld" and solve == "steps":
        raise InputError(
            "--accountant pld answers ε, or the noise for a target ε; for the largest number of steps within "
            "--target-epsilon use rdp (the default)"
        )
    if p.accountant == "pld" and (p.sampling, neighbors) != ("poisson", "add-remove"):
        raise InputError(
            "--accountant pld: the privacy loss distribution here is for Poisson sampling with add/remove "
            "neighbours; use --accountant rdp for fixed-size batches"
        )
    if p.eps_error is not None and "pld" not in names:
        raise InputError("--eps-error applies to --accountant pld (or all)")
    eps_error = p.eps_error
    if eps_error is not None and not isinstance(eps_error, (int, float)):
        if len(eps_error) != 1:
            raise _invalid("--eps-error", "takes a single value, not a list or range")
        eps_error = eps_error[0]
    return replace(p, neighbors=neighbors, eps_error=eps_error), names, solve


def _applies(name, sampling, neighbors, dataset_size, solve=None) -> bool:
    if name == "pld":
        return (sampling, neighbors) == ("poisson", "add-remove") and solve in (None, "sigma")
    if name == "abadi":
        return (sampling, neighbors) == ("poisson", "add-remove")
    if name == "bassily":
        return (sampling, neighbors) == ("fixed-size", "replace-one") and dataset_size is not None
    return True


def _grid(p: SgdEpsilonParams):
    """The cartesian product of the inputs, as flat arrays (q from ``sample_rate`` or B/N)."""
    import numpy as np

    from dpcalc.engine.grid import product

    axes = {}
    if p.sample_rate is not None:
        axes["q"] = np.asarray(p.sample_rate, float)
        if p.dataset_size is not None:
            axes["n"] = np.asarray(p.dataset_size, float)
    else:
        axes["b"] = np.asarray(p.batch_size, float)
        axes["n"] = np.asarray(p.dataset_size, float)
    if p.sigma is not None:
        axes["sigma"] = np.asarray(p.sigma, float)
    if p.steps is not None:
        axes["steps"] = np.asarray(p.steps, float)
    if p.epochs is not None:
        axes["epochs"] = np.asarray(p.epochs, float)
    axes["delta"] = np.asarray(p.delta, float)
    if p.target_epsilon is not None:
        axes["target"] = np.asarray(p.target_epsilon, float)
    g = product(**axes)
    if "q" not in g:
        g["q"] = g["b"] / g["n"]
    if "epochs" in g:
        # steps = ceil(E/q) = ceil(E·N/B) (exact for whole numbers below 2^53)
        ratio = g["epochs"] * g["n"] / g["b"] if "b" in g else g["epochs"] / g["q"]
        g["steps"] = np.maximum(np.ceil(ratio), 1.0)
    return g


def _prepare(p: SgdEpsilonParams, names):
    """The grid of combinations and the accountants' keyword arguments (warning where δ >= 1/N)."""
    import warnings

    import numpy as np

    from dpcalc.engine.dpsgd import accounting as sgd
    from dpcalc.errors import DpcalcWarning

    sgd.check_setting(p.sampling, p.neighbors)
    g = _grid(p)
    if "n" in g and np.any(g["delta"] >= 1.0 / g["n"]):
        warnings.warn(
            "--delta: δ >= 1/dataset size: a mechanism that publishes one random example is then (0, δ)-DP; "
            "choose δ well below 1/N",
            DpcalcWarning,
            stacklevel=2,
        )
    kw = dict(sampling=p.sampling, neighbors=p.neighbors, conversion=p.conversion)
    if "n" in g:
        kw["dataset_size"] = g["n"]
    elif "bassily" in names:
        raise InputError("--dataset-size: needed by the bassily reference (its formula involves n)")
    return g, kw


def _pld_rows(p: SgdEpsilonParams, g, solve, strict: bool) -> dict:
    """The pld accountant, one distinct configuration at a time: its certified bracket of ε, or (``solve``
    = ``"sigma"``) the smallest noise multiplier whose certified upper end meets the target, with the
    bracket there (:mod:`dpcalc.engine.pld.calibration`).  A configuration it cannot discretise (or that
    needs more memory than the cap) is an error when pld alone was asked for (``strict``), else a row
    with no value and the reason in ``note``."""
    import numpy as np

    from dpcalc.engine.dpsgd import accounting as sgd
    from dpcalc.engine.pld.accountant import sgd_epsilon_pld
    from dpcalc.engine.pld.calibration import calibrate_noise_pld
    from dpcalc.engine.pld.epsilon import RDP_HINT

    def one(i):
        if solve == "sigma":
            s, bracket = calibrate_noise_pld(
                g["q"][i],
                g["steps"][i],
                g["delta"][i],
                g["target"][i],
                rtol=SIGMA_RTOL,
                eps_error=p.eps_error,
            )
            return (float(s), *(float(x) for x in bracket)), ""
        b = sgd_epsilon_pld(g["q"][i], g["sigma"][i], g["steps"][i], g["delta"][i], eps_error=p.eps_error)
        return (float(g["sigma"][i]), *(float(x) for x in b)), ""

    n = g["q"].size
    answers: dict = {}
    out = np.full((4, n), np.nan)  # noise multiplier, lower, estimate, upper
    notes = [""] * n
    for i in range(n):
        key = tuple(
            float(g[k][i]) for k in ("q", "steps", "delta", "target" if solve == "sigma" else "sigma")
        )
        if key not in answers:
            try:
                answers[key] = one(i)
            except InputError as exc:
                message = str(exc).replace(RDP_HINT, "--accountant rdp")
                if strict:
                    raise InputError(message) from None
                answers[key] = ((np.nan,) * 4, f"does not apply: {message}")
        out[:, i], notes[i] = answers[key]
    sigma, lower, est, upper = out
    if solve is None:
        sigma = g["sigma"]  # as given, also on rows the accountant refused
    # the epsilon column holds the certified upper end; the estimate has a column of its own
    e = sgd.Epsilon(upper, np.full(n, np.nan), np.zeros(n, bool), np.ones(n, bool))
    return dict(noise_multiplier=sigma, steps=g["steps"], eps=e, lower=lower, estimate=est, note=notes)


def _accountant_rows(p: SgdEpsilonParams, name, solve, g, kw, light=True, strict=True) -> dict:
    """One accountant's answers on the combinations ``g`` (flat arrays); ``light``: small arrays may
    skip scipy (see :class:`dpcalc.engine.dpsgd.sgm.light_start`)."""
    import contextlib

    import numpy as np

    from dpcalc.engine.dpsgd import accounting as sgd
    from dpcalc.engine.dpsgd import noise_calibration, sgm, step_budget

    with sgm.light_start() if light else contextlib.nullcontext():
        if name == "pld":
            return _pld_rows(p, g, solve, strict)
        if solve is None:
            e = sgd.epsilon(name, g["q"], g["sigma"], g["steps"], g["delta"], **kw)
            return dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e)
        if solve == "sigma":
            sig, e = noise_calibration.calibrate_noise(
                g["q"], g["steps"], g["delta"], g["target"], accountant=name, rtol=SIGMA_RTOL, **kw
            )
            return dict(noise_multiplier=sig, steps=g["steps"], eps=e)
        t, _ = step_budget.max_steps(g["q"], g["sigma"], g["delta"], g["target"], accountant=name, **kw)
        # report ε (with its order and flags) at the answer; 0 steps: nothing fits
        e = sgd.epsilon(name, g["q"], g["sigma"], np.maximum(t, 1.0), g["delta"], **kw)
        e = e._replace(epsilon=np.where(t >= 1, e.epsilon, np.nan), alpha=np.where(t >= 1, e.alpha, np.nan))
        return dict(noise_multiplier=g["sigma"], steps=t, eps=e)


#: The note of every row of an accountant (pld rows carry their own: a refusal's reason).
_NOTE = {
    "abadi": "asymptotic closed form: not a guarantee where valid is false",
    "bassily": "reference formula: not a guarantee where valid is false",
}

#: Every column sgd-epsilon prints, in order (the documented schema of dpcalc.commands.schema).
ALL_COLUMNS = tuple(schema.names("sgd-epsilon"))


def _column_names(p: SgdEpsilonParams, names, solve, g) -> list[str]:
    """The columns: always :data:`ALL_COLUMNS`, whatever the inputs and accountants (a column that does
    not apply to a row is empty), so that scripts can rely on one schema."""
    return list(ALL_COLUMNS)


def _caption(p: SgdEpsilonParams, names, solve, g) -> str:
    relation = "sensitivity C" if p.neighbors == "add-remove" else "sensitivity 2C: the theorem sees σ/2"
    caption = f"sampling: {p.sampling}; neighbours: {p.neighbors} ({relation})"
    if "rdp" in names:
        caption += f"; conversion: {p.conversion}"
    if "pld" in names:
        caption += "; pld: [epsilon_lower, epsilon] is the certified bracket, epsilon_estimate lies inside it"
    if "epochs" in g:
        caption += "; steps = ceil(epochs / sample_rate)"
    if solve == "sigma":
        caption += f"; noise_multiplier: the smallest (within a factor {1 + SIGMA_RTOL:g}) with ε <= target"
    elif solve == "steps":
        caption += "; steps: the largest with ε <= target (epochs: the whole epochs within them)"
    return caption


def _result_columns(p: SgdEpsilonParams, solve, g, rows, columns) -> dict:
    """The output columns of ``rows`` ((accountant, answers) pairs) on the combinations ``g``."""
    import numpy as np

    n = g["q"].size
    out: dict[str, list] = {k: [] for k in columns}
    for name, cols in rows:
        e = cols["eps"]
        steps = np.asarray(cols["steps"], float).reshape(-1)
        values = {
            "method": [METHOD_LABEL[name]] * n,
            "accountant": [name] * n,
            "conversion": [p.conversion if name == "rdp" else ("classic" if name == "abadi" else "")] * n,
            "sampling": [p.sampling] * n,
            "neighbors": [p.neighbors] * n,
            "sample_rate": g["q"].tolist(),
            "batch_size": g["b"].astype(int).tolist() if "b" in g else None,
            "dataset_size": g["n"].astype(int).tolist() if "n" in g else None,
            "noise_multiplier": np.asarray(cols["noise_multiplier"], float).reshape(-1).tolist(),
            "steps": [int(t) for t in steps],
            "epochs": g["epochs"].tolist()
            if "epochs" in g
            else (_whole_epochs(steps, g).tolist() if solve == "steps" else None),
            "delta": g["delta"].tolist(),
            "target_epsilon": g["target"].tolist() if solve is not None else None,
            "epsilon": np.asarray(e.epsilon, float).reshape(-1).tolist(),
            "epsilon_lower": cols["lower"].tolist() if "lower" in cols else [None] * n,
            "epsilon_estimate": cols["estimate"].tolist() if "estimate" in cols else [None] * n,
            "alpha": [None if np.isnan(a) else float(a) for a in np.asarray(e.alpha, float).reshape(-1)],
            "valid": [bool(v) for v in np.asarray(e.valid).reshape(-1)],
            "note": list(cols["note"]) if "note" in cols else [_NOTE.get(name, "")] * n,
        }
        # a row the accountant could not compute is no statement at all: neither valid nor invalid
        values["valid"] = [
            None if note.startswith("does not apply") else v
            for v, note in zip(values["valid"], values["note"])
        ]
        for k in columns:
            out[k] += values[k] if values[k] is not None else [None] * n
    return out


_PLOT_SYMBOL = {
    "epochs": "epochs",
    "steps": "T",
    "target_epsilon": "target ε",
    "noise_multiplier": "σ",
    "sample_rate": "q",
    "batch_size": "B",
    "dataset_size": "N",
    "delta": "δ",
}


def _plot_spec(p: SgdEpsilonParams, out, headline):
    """--plot: the headline by the first swept input, one line per accountant (a dot per accountant
    when nothing is swept); rows whose ``valid`` is false are drawn as "not a bound"."""
    inputs = {
        "epochs": p.epochs,
        "steps": p.steps,
        "target_epsilon": p.target_epsilon,
        "noise_multiplier": p.sigma,
        "sample_rate": p.sample_rate,
        "batch_size": p.batch_size,
        "dataset_size": p.dataset_size,
        "delta": p.delta,
    }
    inputs = {k: v for k, v in inputs.items() if v is not None and k != headline}
    swept = [k for k, v in inputs.items() if len(v) > 1 and k in out]
    if len(out["method"]) < 2:
        return None
    x = swept[0] if swept else "delta"
    fixed = ", ".join(f"{_PLOT_SYMBOL[k]} = {v[0]:g}" for k, v in inputs.items() if len(v) == 1)
    what = {
        "epsilon": "ε",
        "noise_multiplier": "smallest noise multiplier",
        "steps": "largest number of steps",
    }
    return PlotSpec(
        x=x,
        y=headline,
        series="method",
        group=tuple(swept[1:]),
        valid="valid",
        band=("epsilon_lower", "epsilon") if "epsilon_lower" in out else None,
        logx=x == "delta",
        autolog=True,
        xlabel={"steps": "steps T", "epochs": "epochs", "target_epsilon": "target ε (nats)"}.get(x, ""),
        ylabel={
            "epsilon": "ε (nats)",
            "noise_multiplier": "noise multiplier σ (noise std / clipping norm)",
            "steps": "largest number of steps T",
        }[headline],
        title=f"DP-SGD: {what[headline]} " + (f"by {_PLOT_SYMBOL[x]}" if swept else "by accountant"),
        subtitle=(f"{fixed}; " if fixed else "")
        + f"sampling: {p.sampling}, neighbours: {p.neighbors}"
        + (f", conversion: {p.conversion}" if "rdp" in out["accountant"] else ""),
    )


def _whole_epochs(steps, g):
    """The whole epochs E with ceil(E/q) <= steps (checked with the same arithmetic as ``epochs``)."""
    import numpy as np

    e = np.floor(steps * g["q"])
    ratio = e * g["n"] / g["b"] if "b" in g else e / g["q"]
    return np.where(np.ceil(ratio) > steps, e - 1, e)
