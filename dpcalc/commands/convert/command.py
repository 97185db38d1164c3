"""Conversions between Rényi DP and (ε, δ)-DP, both ways (docs/math.md §1), and what a Rényi bound means
for an attacker (``--fpr``, :func:`convert_tradeoff`, docs/math.md §10).

:func:`convert` checks the combination of inputs, asks :mod:`dpcalc.engine.conversion.methods` for
every combination of the values given (or optimises over the orders of a curve, docs/math.md §1.6)
and packs the answer into a :class:`~dpcalc.result.Result`.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.attack_schema import tradeoff_names
from dpcalc.commands.choices import CONVERSIONS
from dpcalc.commands.curve import grid_part
from dpcalc.commands.schema import conform, names
from dpcalc.commands.tradeoff import RDP_NOTE, tradeoff_plot
from dpcalc.engine.conversion import methods as conversions
from dpcalc.errors import InputError
from dpcalc.input.curves import load_curve
from dpcalc.result import PlotSpec, Result, Stream

METHODS = CONVERSIONS  # the conversions, tightest first

_SYM = {"alpha": "α", "rdp": "ζ", "delta": "δ", "epsilon": "ε"}  # --plot subtitles
_WORD = {"alpha": "Rényi order α", "rdp": "RDP level ζ", "delta": "δ", "epsilon": "ε"}
_AXIS = {
    "alpha": "Rényi order α",
    "rdp": "Rényi DP level ζ (nats)",
    "delta": "δ (probability)",
    "epsilon": "ε (nats)",
}


@dataclass(frozen=True)
class ConvertParams:
    """The inputs of ``dpcalc convert``: each numeric field a sequence of values (a sweep) or None.

    ``source="rdp"``: give ``alpha`` and ``rdp`` (or ``curve``, the path of a CSV file with columns
    alpha,rdp; ``"-"`` reads standard input) and exactly one of ``delta`` (to get ε) or ``epsilon``
    (to get δ).  ``source="dp"``: give ``alpha``, ``epsilon`` and ``delta`` to get the largest RDP
    level that certifies them.  ``method`` is one of :data:`METHODS` or ``"all"``.
    """

    alpha: Sequence[float] | None = None
    rdp: Sequence[float] | None = None
    curve: str | None = None
    delta: Sequence[float] | None = None
    epsilon: Sequence[float] | None = None
    method: str = "optimal"
    source: str = "rdp"
    mu: Sequence[float] | None = None  # --from gdp
    rho: Sequence[float] | None = None  # --from zcdp


def convert(params: ConvertParams) -> Result:
    """One row per combination of the values given and method (per target and method for a curve).

    Raises :class:`~dpcalc.errors.InputError` for an impossible combination, a malformed curve, or a
    curve file that cannot be read (naming ``--curve PATH``).
    """
    out = _convert(params, CHUNK)
    return out.collect() if isinstance(out, Stream) else out


def _convert(params: ConvertParams, chunk: int | None):
    """:func:`convert`: a sweep of points or ``--from dp`` as a Stream of chunks of at most ``chunk`` points
    (None: one chunk), a curve as a Result."""
    p = params
    methods = METHODS if p.method == "all" else (p.method,)
    if p.source == "dp":
        _require(alpha=p.alpha, epsilon=p.epsilon, delta=p.delta)
        _forbid("with --from dp", rdp=p.rdp, curve=p.curve)
        return _zero_note(_from_dp(p.alpha, p.epsilon, p.delta, methods, chunk), p.delta, ZERO_DELTA_DP_NOTE)
    if p.curve is not None:
        _forbid("with --curve", alpha=p.alpha, rdp=p.rdp)
    else:
        _require(alpha=p.alpha, rdp=p.rdp)
    if (p.delta is None) == (p.epsilon is None):
        raise InputError("give exactly one of --delta (to get ε) or --epsilon (to get δ)")
    if p.curve is not None:
        alphas, zetas = read_curve(p.curve)
        return _zero_note(_from_curve(alphas, zetas, p.delta, p.epsilon, methods), p.delta)
    return _zero_note(_points(p.alpha, p.rdp, p.delta, p.epsilon, methods, chunk), p.delta)


#: The note where δ = 0 is asked (docs/math.md §2.7): a Rényi bound at finite orders bounds no privacy loss.
ZERO_DELTA_NOTE = (
    "δ = 0: Rényi DP at finite orders bounds no privacy loss (a Gaussian with a small enough shift meets "
    "any ζ > 0), so ε = inf; only ζ = 0 (equal distributions) gives ε = 0"
)
ZERO_DELTA_DP_NOTE = (
    "δ = 0: no Rényi level above 0 at a finite order certifies (ε, 0)-DP, so rdp_certifying = 0"
)


def _zero_note(result, delta, note=ZERO_DELTA_NOTE):
    """``result`` (a Result or Stream) with the δ = 0 note where δ = 0 was asked."""
    if delta is not None and 0 in delta:
        result.notes.append(note)
    return result


def _require(**opts) -> None:
    for name, value in opts.items():
        if value is None:
            raise InputError(f"missing option --{name}")


def _forbid(context: str, **opts) -> None:
    for name, value in opts.items():
        if value is not None:
            raise InputError(f"--{name} cannot be used {context}")


def read_curve(path: str):
    """The curve of ``--curve PATH`` (``-``: standard input), read by :mod:`dpcalc.input.text`: a
    file that cannot be read (missing, a directory, unreadable, not UTF-8, unbounded like
    ``/dev/zero``) is an :class:`InputError` naming ``--curve PATH`` (exit 2), like a malformed curve."""
    return load_curve(path, f"--curve {path}", stdin=sys.stdin if path == "-" else None)


#: Points (α, ζ, target) per chunk of a sweep: memory is bounded by the chunk, not by the sweep.
CHUNK = 8192


def convert_stream(params: ConvertParams, *, chunk: int | None = 0):
    """:func:`convert`, with a sweep of (α, ζ, δ or ε) points, or of (α, ε, δ) with ``--from dp``, delivered as
    a :class:`~dpcalc.result.Stream` of chunks of at most ``chunk`` points (0: :data:`CHUNK`, fewer where
    points are expensive; None: one chunk), written as they are computed; a curve gives a
    :class:`~dpcalc.result.Result` as :func:`convert` does."""
    return _convert(params, CHUNK if chunk == 0 else chunk)


#: CPU seconds per point (α, ζ, target) of each conversion, measured with a margin (time.process_time of
#: :func:`convert` on 3,000 orders, and of the engine's conversions on 3,000 random points, α in [1.01, 1000],
#: ζ in [0, 20], δ in [1e-12, 0.1], ε in [0, 10], the packing of the rows included): the optimal conversion
#: solves for its best shape per point (40-60 µs); the others are closed forms (about 1 µs).
POINT_SECONDS_EACH = {"optimal": 1.5e-4, "asoodeh": 5e-6, "balle": 5e-6, "mironov": 5e-6}
#: --from dp: CPU seconds per row (α, ε, δ), measured the same way: the optimal ζ is solved for (about 8 µs),
#: the others are closed forms (0.2-0.4 µs).
FROM_DP_SECONDS_EACH = {"optimal": 3e-5, "asoodeh": 2e-6, "balle": 2e-6, "mironov": 2e-6}


def _points(alpha, rdp, delta, epsilon, methods, chunk=None):
    """One row per (method, α, ζ, δ or ε) combination: a Stream of chunks of at most ``chunk`` points (fewer
    where points are expensive; None: one chunk), each chunk's points formed from the axes when computed."""
    want_eps = delta is not None
    target = delta if want_eps else epsilon
    sizes = {"--alpha": len(alpha), "--rdp": len(rdp), "--delta" if want_eps else "--epsilon": len(target)}
    sweep.check_rows(sizes, len(methods))
    n = math.prod(sizes.values())
    seconds = sum(POINT_SECONDS_EACH[m] for m in methods) * n
    axes = {
        "alpha": np.asarray(alpha, float),
        "rdp": np.asarray(rdp, float),
        "target": np.asarray(target, float),
    }
    headline = "epsilon" if want_eps else "delta"

    def compute(task):
        m, lo, hi = task
        g = grid_part(axes, lo, hi)
        a, z, t = g["alpha"], g["rdp"], g["target"]
        fn = getattr(conversions, f"eps_{m}" if want_eps else f"delta_{m}")
        value = np.asarray(fn(a, z, t), dtype=float).tolist()
        cols = {
            "method": [m] * len(value),
            "alpha": a.tolist(),
            "rdp": z.tolist(),
            "delta": t.tolist() if want_eps else value,
            "epsilon": value if want_eps else t.tolist(),
        }
        return Result(conform(cols, "convert"), headline=headline, title="RDP → (ε, δ)")

    def finish(result):
        result.plot = _points_plot(alpha, rdp, target, want_eps, methods, len(result))
        return result

    return Stream(
        names("convert"),
        sweep.by_method(compute, methods, n, chunk, seconds=seconds, what="RDP conversions"),
        headline=headline,
        title="RDP → (ε, δ)",
        finish=finish,
    )


def _points_plot(alpha, rdp, target, want_eps, methods, rows):
    """--plot: against the first swept of α, ζ, δ (or ε); the other swept ones split the lines; one
    point per method (nothing swept, --method all) is a dot chart."""
    headline = "epsilon" if want_eps else "delta"
    given = "delta" if want_eps else "epsilon"
    axes = {"alpha": alpha, "rdp": rdp, given: target}
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else "alpha"
    fixed = ", ".join(f"{_SYM[k]} = {v[0]:g}" for k, v in axes.items() if len(v) == 1)
    if rows < 2:
        return None
    return PlotSpec(
        x=x,
        y=headline,
        series="method" if len(methods) > 1 else None,
        group=tuple(swept[1:]),
        logx=x == "delta",
        logy=not want_eps,
        autolog=True,
        title=f"RDP → (ε, δ): {'ε' if want_eps else 'δ'} "
        + (f"by {_WORD[x]}" if swept else "by conversion method"),
        subtitle=f"(α, ζ)-RDP at {fixed}" if fixed else "",
        xlabel=_AXIS[x],
        ylabel=_AXIS[headline],
    )


def _from_curve(alphas, zetas, delta, epsilon, methods) -> Result:
    """Optimise over the orders of a curve, for every δ (or ε) and method (docs/math.md §1.6)."""
    a = np.asarray(alphas, float)
    z = np.asarray(zetas, float)
    want_eps = delta is not None
    target = np.asarray(delta if want_eps else epsilon, float)
    fn = conversions.eps_from_curve if want_eps else conversions.delta_from_curve
    cols: dict[str, list] = {"method": [], "delta": [], "epsilon": [], "alpha": [], "rdp": []}
    edge = []
    for m in methods:
        bound = fn(a, z, target, method=m)
        value = np.asarray(bound.value, float).reshape(-1)
        idx = np.asarray(bound.index).reshape(-1)
        cols["method"] += [m] * value.size
        cols["delta"] += list(target if want_eps else value)
        cols["epsilon"] += list(value if want_eps else target)
        best = [float(a[i]) if i >= 0 else None for i in idx]
        cols["alpha"] += best
        cols["rdp"] += [float(z[i]) if i >= 0 else None for i in idx]
        edge += [(m, b) for b, e in zip(best, np.asarray(bound.at_edge).reshape(-1)) if e and len(a) > 1]
    result = Result(
        conform(cols, "convert"),
        headline="epsilon" if want_eps else "delta",
        title="RDP curve → (ε, δ)",
        caption=f"{len(a)} orders from {a.min():g} to {a.max():g}; alpha = best order",
        derived=("alpha", "rdp"),  # each method's best order: not an input (dpcalc.render.configs)
    )
    if edge:
        orders = sorted({b for _, b in edge})
        result.notes.append(
            "the best order is at the edge of the curve's orders (alpha="
            + ", ".join(f"{b:g}" for b in orders)
            + "): orders beyond it may give a smaller bound"
        )
    if len(cols["method"]) > 1:  # a curve over δ (or ε), or the methods side by side at one target
        result.plot = PlotSpec(
            x="delta" if want_eps else "epsilon",
            y="epsilon" if want_eps else "delta",
            series="method" if len(methods) > 1 else None,
            logx=want_eps,
            logy=not want_eps,
            autolog=True,
            title="RDP curve as (ε, δ)" + ("" if target.size > 1 else ": by conversion method"),
            subtitle=f"best of {len(a)} orders from {a.min():g} to {a.max():g}"
            + (f"; {'δ' if want_eps else 'ε'} = {float(target.flat[0]):g}" if target.size == 1 else ""),
            xlabel=_AXIS["delta" if want_eps else "epsilon"],
            ylabel=_AXIS["epsilon" if want_eps else "delta"],
        )
    return result


def _from_dp(alpha, epsilon, delta, methods, chunk=None) -> Stream:
    """DP → RDP: the largest ζ at α such that every (α, ζ)-RDP mechanism is (ε, δ)-DP
    (docs/math.md §1.3, §1.4), in chunks of at most ``chunk`` rows (None: one), each chunk's (α, ε, δ)
    formed from the axes when computed."""
    sizes = {"--alpha": len(alpha), "--epsilon": len(epsilon), "--delta": len(delta)}
    sweep.check_rows(sizes, len(methods), per="methods")
    n = math.prod(sizes.values())
    seconds = sum(FROM_DP_SECONDS_EACH[m] for m in methods) * n
    axes = {
        "alpha": np.asarray(alpha, float),
        "epsilon": np.asarray(epsilon, float),
        "delta": np.asarray(delta, float),
    }

    def compute(task):
        m, lo, hi = task
        g = grid_part(axes, lo, hi)
        value = np.maximum(np.asarray(_ZETA[m](g["alpha"], g["epsilon"], g["delta"]), float), 0.0)
        cols = {
            "method": [m] * value.size,
            "alpha": list(g["alpha"]),
            "epsilon": list(g["epsilon"]),
            "delta": list(g["delta"]),
            # a *lower* bound on what certifies (ε, δ): never rounded up in tables
            "rdp_certifying": list(value),
        }
        return Result(conform(cols, "convert"), headline="rdp_certifying", title="(ε, δ)-DP → RDP")

    def finish(result):
        result.plot = _from_dp_plot(alpha, epsilon, delta, methods, len(result))
        return result

    return Stream(
        names("convert"),
        sweep.by_method(compute, methods, n, chunk, seconds=seconds, what="DP → RDP conversions"),
        headline="rdp_certifying",
        title="(ε, δ)-DP → RDP",
        caption="rdp_certifying: every (alpha, rdp_certifying)-RDP mechanism is (epsilon, delta)-DP",
        finish=finish,
    )


def _zeta_asoodeh(a, e, d):
    return np.maximum(conversions.zeta_f(a, e, d), conversions.zeta_g(a, e, d))


#: --from dp: each method's largest certifying ζ (module-level functions: a chunk's work is picklable).
_ZETA = {
    "optimal": conversions.zeta_opt,
    "asoodeh": _zeta_asoodeh,
    "balle": conversions.zeta_g,
    "mironov": conversions.zeta_mironov,
}


def _from_dp_plot(alpha, epsilon, delta, methods, rows):
    """--plot of --from dp: ζ against the first swept of α, ε, δ (the other swept ones split the lines)."""
    if rows < 2:
        return None
    axes = {"alpha": alpha, "epsilon": epsilon, "delta": delta}
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else "alpha"
    return PlotSpec(
        x=x,
        y="rdp_certifying",
        series="method" if len(methods) > 1 else None,
        group=tuple(swept[1:]),
        logx=x == "delta",
        autolog=True,
        xlabel=_AXIS[x],
        ylabel="largest certifying Rényi DP ζ (nats)",
        title="(ε, δ)-DP → RDP: " + (f"by {_WORD[x]}" if swept else "by conversion method"),
        subtitle="every (α, ζ)-RDP mechanism is (ε, δ)-DP; "
        + ", ".join(f"{_SYM[k]} = {v[0]:g}" for k, v in axes.items() if len(v) == 1),
    )


# -- --fpr ------------------------------------------------------------------------------------------------
_TRADEOFF_NOTE = RDP_NOTE


def convert_tradeoff(params: ConvertParams, fpr) -> Result:
    """``dpcalc convert --fpr``: the largest true-positive rate of any membership test at each false-positive
    rate, from one Rényi-DP level (α, ζ) or a whole curve: one row per (α, ζ) combination (or one curve) and
    false-positive rate.

    The bound is the optimal conversion of the Rényi bound to a trade-off curve: the smallest type-II error
    that every order's constraint on a binary test allows (:func:`dpcalc.engine.tradeoff.rdp_tpr`).  An
    RDP bound holds in one direction; the row assumes, as the (ε, δ) rows of ``convert`` do, that the curve
    given bounds both directions of the neighbouring relation."""
    # lazy: scipy (dpcalc.engine.tradeoff); only --fpr needs it: a plain sgd-epsilon or convert imports none
    from dpcalc.engine import tradeoff

    p = params
    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    if p.source != "rdp":
        raise InputError("--fpr: applies to --from rdp (an RDP level or curve)")
    if p.method not in ("optimal",):
        raise InputError(
            f"--fpr: uses the optimal and Balle et al. conversions together; not --method {p.method}"
        )
    _forbid("with --fpr (it replaces them as the question)", delta=p.delta, epsilon=p.epsilon)
    if p.curve is not None:
        _forbid("with --curve", alpha=p.alpha, rdp=p.rdp)
        alphas, zetas = (np.asarray(x, float) for x in read_curve(p.curve))
        curves = [(None, None, alphas, zetas)]
    else:
        _require(alpha=p.alpha, rdp=p.rdp)
        curves = [
            (float(a), float(z), np.array([float(a)]), np.array([float(z)]))
            for a, z in itertools.product(p.alpha, p.rdp)
        ]
    cols: dict[str, list] = {name: [] for name in tradeoff_names("convert")}
    for a, z, orders, values in curves:
        hi = tradeoff.rdp_tpr(orders, values, fpr)
        for f, h in zip(fpr, hi):
            row = {"method": "optimal", "alpha": a, "rdp": z, "fpr": float(f), "tpr": float(h)}
            row.update(tpr_upper=float(h), note=_TRADEOFF_NOTE)
            for name in cols:
                cols[name].append(row.get(name))
    result = Result(cols, headline="tpr_upper", title="trade-off", caption="from a Rényi-DP bound")
    result.plot = tradeoff_plot(
        tuple(g for g in ("alpha", "rdp") if len(set(cols[g])) > 1), "one Rényi-DP bound per line"
    )
    return result
