"""``dpcalc compose --epsilon E --delta D`` with specs that leave their noise parameter out: the value of it
making the composition (ε, δ)-DP (the rest of the command is :mod:`dpcalc.commands.compose.command`).

Each kind declares the key it is calibrated on and its direction (``Mechanism.noise``): a noise scale
(``sigma`` of the Gaussian kinds and tree-aggregation, ``scale`` of the Laplace kinds; larger is more
private) gets its *smallest* value, a per-release ``epsilon`` (randomized-response, exponential; smaller
is more private) its *largest*.  The specs that leave it out share one value.

* Plain Gaussians (``sigma`` left out of every spec; methods exact, best, all): the exact profile
  (Balle & Wang 2018; docs/math.md §2.6), plus the classical value under ``all``.
* Everything else, per method: ``pld`` by the certified upper end of the PLD bracket
  (:func:`dpcalc.engine.composition.pld.calibrate_compose_pld`, docs/math.md §7); ``rdp``, ``optimal``,
  ``advanced`` and ``basic`` by the same monotone search (:func:`dpcalc.engine.pld.search.boundary`) on that
  method's ε(δ).  Every value returned is one at which the method's certified ε was computed and found at
  or below the target; the value one search step (a factor 1 + 1e-4 for pld, 1 + 1e-6 otherwise) to the less
  private side was computed and found above it.  ``best`` keeps the most favourable value (docs/math.md §2.13).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from dpcalc.commands import sweep
from dpcalc.commands.compose.methods import METHODS as ALL
from dpcalc.commands.compose.methods import PLD_DOMINATED, pld_dominated, pld_target_seconds
from dpcalc.commands.schema import conform
from dpcalc.engine.composition.pld import calibrate_compose_pld, compose_pld
from dpcalc.engine.grid import product
from dpcalc.engine.mechanisms import gaussian_exact as gaussian
from dpcalc.engine.mechanisms.catalogue import CATALOGUE, lookup, pld_pair
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import DpcalcWarning, InputError
from dpcalc.input.group import person_forms, routes_caption
from dpcalc.input.spec import expand_sources, parse_mechanism
from dpcalc.render.cells import rounded
from dpcalc.result import PlotSpec, Result

#: The calibrated key -> its output column.
COLUMN = {"sigma": "sigma", "scale": "scale", "epsilon": "release_epsilon"}
#: The range searched: noise scales (larger is more private) and per-release ε (smaller is).
RANGES = {1: (1e-6, 1e12), -1: (1e-9, 30.0)}
#: The methods that calibrate a list other than plain Gaussians, in the order of ``--method all``.
METHODS = ("pld", "rdp", "optimal", "advanced", "basic")
#: The relative step of the search for the non-PLD methods.
RTOL = 1e-6
#: Smallest target ε of a calibration by search (as sgd-epsilon's --target-epsilon when it solves for σ): it
#: bounds the work of one search, not the number of pairs (the rdp and pld searches evaluate ε ever closer to
#: 0, where the certified ε is not computed within bounded work), so it stays a refusal.
SEARCHED_EPSILON_MIN = 1e-3
#: The work of a calibration (issue 40: any number of (ε, δ) pairs is computed, not refused).  A pair is a
#: search per method, independent of the other pairs: each pair is a piece of its own, spread over the cores
#: (:func:`dpcalc.commands.sweep.run`), the rows in order.  Measured CPU seconds of one pair's search on one
#: core (2-core shared machine; laplace, randomized-response, gaussian with q= and subsampled-gaussian lists,
#: count 10-1000): rdp 0.3-0.6 s, optimal 0.04 s, advanced and basic under 0.01 s, rounded up; pld about
#: 8 evaluations of one δ (:func:`~dpcalc.commands.compose.methods.pld_target_seconds`; measured 0.03 s for
#: laplace, 0.6 s with a subsampled Gaussian).
SEARCH_SECONDS = {"rdp": 0.6, "optimal": 0.1, "advanced": 0.01, "basic": 0.01}
PLD_SEARCH_EVALUATIONS = 8
#: The exact Gaussian calibration is a closed form (measured 2e-5 s a pair, vectorised): pieces of this many
#: pairs (one piece up to it: the rows are computed as they always were).
EXACT_PIECE = 100_000
EXACT_PAIR_SECONDS = 5e-5


def _parse(texts):
    """The specs, each kind's calibrated key allowed to be left out (then ``None`` in ``params``)."""
    specs = []
    for text in expand_sources(texts):
        mech = lookup(text.strip().partition(":")[0]) if isinstance(text, str) else None
        specs.append(parse_mechanism(text, omit=(mech.noise[0],) if mech and mech.noise else ()))
    return specs


def _free_key(spec):
    """``(key, direction)`` when ``spec`` left its calibrated key out, else ``None``."""
    noise = CATALOGUE[spec.kind].noise
    return noise if noise is not None and spec.params.get(noise[0], 0) is None else None


def free_parameter(specs, question: str, otherwise: str) -> tuple[str, int]:
    """``(key, direction)`` of the one parameter the specs leave out (shared by those that do), else an error
    naming ``question`` (and what to give ``otherwise``)."""
    free = [(s, k) for s in specs if (k := _free_key(s)) is not None]
    if not free:
        raise InputError(
            f"{question} solves for a noise parameter: leave it out of a spec to calibrate it "
            "(sigma of gaussian kinds, scale of laplace kinds, epsilon of randomized-response and exponential; "
            f"e.g. subsampled-gaussian:q=0.01,count=1000){otherwise}"
        )
    if len({k for _, k in free}) > 1:
        (s0, k0), (s1, k1) = free[0], next(f for f in free if f[1] != free[0][1])
        raise InputError(
            f"mechanism {s1.text!r}: leaves {k1[0]} out but {s0.text!r} leaves {k0[0]} out: calibration "
            "solves for one parameter, shared by the specs that leave it out"
        )
    return free[0][1]


def calibrate(texts, epsilon, delta, method, eps_error=None, group_size=1) -> Result:
    """The parameter of the specs that left it out making the composition (ε, δ)-DP, one row per
    (ε, δ) and method (module docstring); ``group_size`` K > 1: (ε, δ)-DP for a person with K examples,
    every candidate value judged on the specs' person-level forms (docs/math.md §2.15)."""
    specs = _parse(texts)
    free_parameter(specs, "--epsilon with --delta", ", or give only one of --epsilon/--delta")
    free = [(s, k) for s in specs if (k := _free_key(s)) is not None]
    plain = all(s.kind == "gaussian" and s.params["sigma"] is None and "q" not in s.params for s in specs)
    routes = ""
    if group_size > 1:
        forms = person_forms(specs, group_size)
        routes, exact_forms = routes_caption(forms, group_size), all(f.exact for f in forms)
    if plain and method in ("best", "all", "exact"):
        person = specs if group_size == 1 else [f.spec for f in forms]  # sensitivities K·Δ
        return _with_routes(_calibrate_exact(person, epsilon, delta, method), routes)
    if method == "exact":
        raise InputError(
            "Invalid value for '--method': exact calibrates lists of plain gaussian specs without sigma only "
            "(use pld, rdp, optimal, advanced, basic, best or all)"
        )
    key, direction = free[0][1]
    _check_zero_delta(specs, free, delta, key)
    if group_size == 1:
        return _calibrate_methods(specs, key, direction, epsilon, delta, method, eps_error)
    result = _calibrate_methods(
        specs, key, direction, epsilon, delta, method, eps_error, group=(group_size, exact_forms)
    )
    return _with_routes(result, routes)


def _with_routes(result: Result, routes: str) -> Result:
    """``result`` with the person-level routes added to its caption (nothing for K = 1)."""
    if routes:
        result.caption += routes
    return result


def _check_zero_delta(specs, free, delta, key) -> None:
    """δ = 0 needs every release's loss bounded (docs/math.md §2.7): refused when a spec that leaves
    ``key`` out has an unbounded loss whatever its value."""
    if 0 not in delta:
        return
    for s, _ in free:
        bounds, reason = CATALOGUE[s.kind].max_loss({**s.params, key: 1.0})
        if bounds is None:
            raise InputError(
                f"Invalid value for '--delta': 0: no {key} makes {s.text!r} (ε, 0)-DP ({reason}); "
                f"give δ > 0 to calibrate {key}"
            )


def _filler(specs, key):
    """``fill(x)``: the specs with ``x`` put into those that left ``key`` out (re-parsed, so derived
    parameters such as randomized response's p follow)."""

    def fill(x):
        out = []
        for s in specs:
            if s.params.get(key, 0) is None:
                sep = "," if ":" in s.text else ":"
                t = parse_mechanism(f"{s.text}{sep}{key}={float(x)!r}")
                out.append(dataclasses.replace(t, text=s.text))
            else:
                out.append(s)
        return out

    return fill


def _person(fill, k: int):
    """``fill`` followed by each spec's person-level form for a person with ``k`` examples."""

    def person(x):
        return [f.spec for f in person_forms(fill(x), k)]

    return person


def _method_search(name, fill, e, d, direction, start, eps_error):
    """``(value, note_or_None)``: the calibrated value by method ``name`` (not pld) at target (ε, δ), or
    ``(None, reason)`` where the method does not apply or nothing in the range meets the target."""
    fn = ALL[name]
    opts = {"eps_error": eps_error, "strict": False, "tuning": None}
    try:
        values, reason, _ = fn(fill(start), True, np.array([d]), opts)
    except InputError as exc:
        values, reason = None, str(exc)
    if values is None:
        return None, f"does not apply: {reason}"

    def test(x):
        try:
            v = fn(fill(x), True, np.array([d]), opts)[0]
        except InputError:
            return math.inf, None
        v = None if v is None else v[0]
        return (math.inf if v is None or not v == v else float(v)), None

    lo, hi = RANGES[direction]
    if not test(hi if direction > 0 else lo)[0] <= e:  # even the most private end of the range misses it
        return None, "nothing in the range searched meets the target"
    try:
        found = boundary(test, e, start, ok_above=direction > 0, lo=lo, hi=hi, rtol=RTOL)
    except OverflowError:  # a secant step past double range: no value is claimed
        return None, "the search did not converge (no value claimed)"
    return (None, "nothing in the range searched meets the target") if found.x is None else (found.x, None)


def _calibrate_methods(specs, key, direction, epsilon, delta, method, eps_error, group=None) -> Result:
    """One row per (ε, δ) and method (``all``), or the most favourable method's row (``best``); ``group``
    ``(K, exact)``: every candidate judged on the person-level forms (``exact``: all of them exact, so a
    pld bracket's lower end stays one)."""
    fill = _filler(specs, key)
    if group is not None:
        fill = _person(fill, group[0])
    column = COLUMN[key]
    lo, hi = RANGES[direction]
    names = METHODS if method in ("best", "all") else (method,)
    free_count = sum(s.count for s in specs if s.params.get(key, 0) is None)
    g = product(epsilon=np.asarray(epsilon, float), delta=np.asarray(delta, float))
    sweep.check_rows(
        {"--epsilon": len(epsilon), "--delta": len(delta)}, 1 if method == "best" else len(names)
    )
    if float(np.min(g["epsilon"])) < SEARCHED_EPSILON_MIN:
        raise InputError(
            f"--epsilon: {float(np.min(g['epsilon'])):g} is below {SEARCHED_EPSILON_MIN:g} for a calibration by "
            "search (the rdp and pld searches evaluate ε ever closer to 0, where the certified ε is not "
            "computed within bounded work); plain Gaussian specs are calibrated exactly at any ε"
        )
    cols: dict[str, list] = {k: [] for k in ("method", "epsilon", "delta", column, "epsilon_lower")}
    cols.update(epsilon_estimate=[], note=[])
    solved = " and ".join(repr(s.text) for s in specs if s.params.get(key, 0) is None)
    pld_each = PLD_SEARCH_EVALUATIONS * pld_target_seconds(specs)
    each = sum(pld_each if name == "pld" else SEARCH_SECONDS[name] for name in names)

    def compute(pair):
        e, d = pair
        return _pair_rows(names, method, fill, e, d, direction, free_count, eps_error, group)

    pairs = [(float(e), float(d)) for e, d in zip(g["epsilon"], g["delta"])]
    what = f"calibration by search (--method {method})"
    for (e, d), rows in zip(
        pairs, sweep.run(compute, pairs, seconds=each * len(pairs), unit="pairs", what=what)
    ):
        for name, (x, low, est, why) in rows:
            note = why
            if x is not None:
                note = f"{key} of {solved}" + (f": {why}" if why else f": {name} epsilon <= target")
                if direction < 0 and x >= hi:
                    note += f" (the end of the range searched, {hi:g}: a larger {key} may meet it too)"
            cols["method"].append(name)
            cols["epsilon"].append(e)
            cols["delta"].append(d)
            cols[column].append(None if x is None else float(x))
            cols["epsilon_lower"].append(low)
            cols["epsilon_estimate"].append(est)
            cols["note"].append(note)
    side = "smallest" if direction > 0 else "largest"
    return Result(
        conform(cols, "compose"),
        plot=_methods_plot(specs, key, column, side, epsilon, delta) if len(cols["method"]) > 1 else None,
        headline=column,
        title="calibration",
        caption=f"{column}: the {side} {key} of the spec(s) that left it out (within the search step) at which "
        "the row's method certifies the composition (epsilon, delta)-DP; pld rows: [epsilon_lower, certified "
        "upper end] bracket the ε reached there",
    )


def _pair_rows(names, method, fill, e, d, direction, free_count, eps_error, group):
    """``[(method, (value, lower, estimate, why)), ...]``: the rows of one target pair (ε, δ), every method of
    ``names`` (``best``: the most favourable one) — a piece of its own (:func:`_calibrate_methods`)."""
    lo, hi = RANGES[direction]
    start = 1.0 if direction > 0 else min(hi, max(lo, e / free_count))
    rows = {}
    for name in sorted(names, key=lambda n: n == "pld"):  # pld last: it starts from the rdp answer
        if name != "pld":
            x, why = _method_search(name, fill, e, d, direction, start, eps_error)
            rows[name] = (x, None, None, why)
            continue
        reason = _pld_refusal(fill(start))
        if reason is not None:
            rows[name] = (None, None, None, f"does not apply: {reason}")
            continue
        if not _pld_reaches(fill(hi if direction > 0 else lo), d, e, eps_error):
            rows[name] = (None, None, None, "nothing in the range searched meets the target")
            continue
        near = rows.get("rdp", (None,))[0]
        try:
            x, low, est, up = calibrate_compose_pld(
                fill,
                d,
                e,
                eps_error=eps_error,
                start=near if near else start,
                ok_above=direction > 0,
                lo=lo,
                hi=hi,
            )
        except OverflowError:  # a secant step past double range: no value is claimed
            rows[name] = (None, None, None, "the search did not converge (no value claimed)")
            continue
        found = bool(np.isfinite(x) and x > 0)
        rows[name] = (
            (float(x), float(low), float(est), f"certified PLD epsilon {rounded(up, 'up')} <= target")
            if found
            else (None, None, None, "nothing in the range searched meets the target")
        )
        if found and group is not None and not group[1]:  # an upper-bound form: no lower end
            rows[name] = (float(x), None, None, rows[name][3])
        elif found and (dominated := pld_dominated(fill(float(x)))):  # models above the mechanism
            why = f"{rows[name][3]} ({PLD_DOMINATED}: {'; '.join(dominated)})"
            rows[name] = (float(x), None, None, why)
    picks = list(names)
    if method == "best":
        have = [n for n in names if rows[n][0] is not None]
        pick = min(have, key=lambda n: direction * rows[n][0]) if have else names[0]
        picks = [pick]
    return [(name, rows[name]) for name in picks]


#: --plot: the axis label of each calibrated column
_CALIBRATED = {
    "sigma": "noise σ (standard deviation of each release)",
    "scale": "noise scale b",
    "release_epsilon": "ε of each release (nats)",
}


def _methods_plot(specs, key, column, side, epsilon, delta) -> PlotSpec:
    """--plot of a calibration by methods: the calibrated value by the target ε (or δ), one line per method
    (a dot per method when one target is asked)."""
    by_eps = len(epsilon) > 1 or len(delta) == 1
    return PlotSpec(
        x="epsilon" if by_eps else "delta",
        y=column,
        series="method",
        group=("delta",) if len(epsilon) > 1 and len(delta) > 1 else (),
        logx=not by_eps,
        autolog=True,
        xlabel="target ε (nats)" if by_eps else "target δ (probability)",
        ylabel=_CALIBRATED[column],
        title=f"calibration: the {side} {key}",
        subtitle=" + ".join(s.text for s in specs)
        + "".join(f"; {n} = {v[0]:g}" for n, v in (("ε", epsilon), ("δ", delta)) if len(v) == 1),
    )


def _pld_reaches(specs, delta, target, eps_error) -> bool:
    """Whether the certified PLD ε of ``specs`` (the most private end of the range) meets ``target``: a
    spec given with its noise can leave a floor that no value of the free parameter removes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpcalcWarning)
        try:
            upper = float(compose_pld(specs, delta=delta, eps_error=eps_error).upper)
        except InputError:
            return True  # the search decides (an uncertifiable point counts as missing there)
    return math.isfinite(upper) and upper <= target


def _pld_refusal(specs):
    """Why the PLD accountant does not take these specs, or ``None``."""
    for s in specs:
        try:
            pair = pld_pair(s.kind, s.params)
        except InputError as exc:
            return str(exc)
        if pair is None:
            return f"{s.kind} has no privacy loss distribution here"
    return None


def _calibrate_exact(specs, epsilon, delta, method) -> Result:
    """The smallest common σ of plain Gaussians by their exact profile (docs/math.md §2.6)."""
    if 0 in delta:
        raise InputError(
            "Invalid value for '--delta': 0: no σ makes a Gaussian (ε, 0)-DP (its privacy loss is unbounded); "
            "give δ > 0 to calibrate σ"
        )
    top = max(s.params["sensitivity"] for s in specs)  # scaled, so that the squares stay in range
    sens = top * math.sqrt(math.fsum(s.count * (s.params["sensitivity"] / top) ** 2 for s in specs))
    if not math.isfinite(sens):
        raise InputError(
            f"MECHANISM: the combined sensitivity sqrt(sum count*sensitivity^2) is beyond double range ({top:g} "
            "and more); scale the sensitivities down"
        )
    g = product(epsilon=np.asarray(epsilon, float), delta=np.asarray(delta, float))
    sweep.check_rows({"--epsilon": len(epsilon), "--delta": len(delta)}, 2 if method == "all" else 1)
    cut = sweep.slices(g["epsilon"].size, EXACT_PIECE)  # one piece up to EXACT_PIECE pairs

    def compute(piece):
        lo, hi = piece
        e, d = g["epsilon"][lo:hi], g["delta"][lo:hi]
        return np.atleast_1d(gaussian.sigma_gaussian(e, d, sensitivity=sens))

    parts = sweep.run(
        compute,
        cut,
        seconds=EXACT_PAIR_SECONDS * g["epsilon"].size,
        unit="pairs",
        what="Gaussian calibration",
        weights=[hi - lo for lo, hi in cut],
    )
    sigma = np.concatenate(list(parts))
    n = sigma.size
    cols = {
        "method": ["exact"] * n,
        "epsilon": list(g["epsilon"]),
        "delta": list(g["delta"]),
        "sigma": [float(s) for s in sigma],
        "note": ["Balle-Wang exact Gaussian"] * n,
    }
    if method == "all":
        for e, d in zip(g["epsilon"], g["delta"]):
            ok = 0 < e < 1
            cols["method"].append("classical")
            cols["epsilon"].append(float(e))
            cols["delta"].append(float(d))
            with np.errstate(over="ignore"):  # σ past double range: inf (no finite noise)
                s = float(np.nextafter(math.sqrt(2 * math.log(1.25 / d)) * sens / e, np.inf)) if ok else None
            cols["sigma"].append(s)
            cols["note"].append("Dwork-Roth Thm A.1" if ok else "does not apply: needs 0 < epsilon < 1")
    plot = None
    if len(cols["method"]) > 1:
        plot = PlotSpec(
            x="epsilon" if len(epsilon) > 1 or len(delta) == 1 else "delta",
            y="sigma",
            series="method",
            group=("delta",) if len(epsilon) > 1 and len(delta) > 1 else (),
            logx=len(epsilon) == 1 and len(delta) > 1,
            autolog=True,
            xlabel="target ε (nats)" if len(epsilon) > 1 or len(delta) == 1 else "target δ (probability)",
            ylabel="noise σ (standard deviation of each release)",
            title="Gaussian calibration: the smallest σ",
            subtitle=" + ".join(s.text for s in specs)
            + "".join(f"; {n} = {v[0]:g}" for n, v in (("ε", epsilon), ("δ", delta)) if len(v) == 1),
        )
    return Result(
        conform(cols, "compose"),
        plot=plot,
        headline="sigma",
        title="Gaussian calibration",
        caption="sigma: the noise of every gaussian spec, so that their composition is (epsilon, delta)-DP; "
        f"combined sensitivity sqrt(sum count*sensitivity^2) = {sens:.6g}",
    )
