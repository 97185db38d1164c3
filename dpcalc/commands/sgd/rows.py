"""The rows of one DP-SGD accountant for ``dpcalc sgd-epsilon`` (:mod:`dpcalc.commands.sgd.epsilon`):
ε of each configuration, or the answer to the inverse question asked — the smallest noise multiplier,
the largest number of steps, the largest sample rate or batch size within ``--target-epsilon`` — by the
RDP-family accountants (:mod:`dpcalc.engine.dpsgd`, vectorised) or the PLD accountant, one distinct
configuration at a time (:mod:`dpcalc.engine.dpsgd.pld_calibration`); a sampler's own row (shuffle) and the
Monte Carlo accountant of balls-in-bins (:mod:`dpcalc.engine.dpsgd.balls_in_bins_mc`).  What each sampler
reads and answers is its entry in :mod:`dpcalc.engine.samplers`.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from dpcalc.commands.sgd.question import LAST_ITERATE
from dpcalc.commands.sgd.searched import searched_rows
from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.dpsgd import noise_calibration, rate_budget, step_budget
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError
from dpcalc.lazy import lazy_module

#: the rows of one method each, loaded when that method is asked for
mc = lazy_module("dpcalc.commands.sgd.mc")
last_iterate = lazy_module("dpcalc.engine.dpsgd.last_iterate")
pld_accounting = lazy_module("dpcalc.engine.dpsgd.pld_accounting")
pld_grid = lazy_module("dpcalc.engine.pld.grid")
pld_calibration = lazy_module("dpcalc.engine.dpsgd.pld_calibration")
tuning = lazy_module("dpcalc.engine.composition.tuning")

#: Relative tolerance of the noise calibration and the rate budget (the σ reported is within this
#: factor of the smallest, the rate within it of the largest).
SIGMA_RTOL = 1e-4


#: The note of a pld row whose ε = 0 was certified before any PLD (:func:`_certified_zero`).
ZERO_NOTE = "exact: the Rényi bound certifies δ at ε = 0 (total variation at most δ), so ε = 0 exactly"


def _pld_rows(p, sampler, g, solve, strict: bool) -> dict:
    """The pld accountant, one distinct configuration at a time: its certified bracket of ε, or (``solve``)
    the smallest noise multiplier, the largest number of steps or the largest sample rate (batch size)
    whose certified upper end meets the target, with the bracket there
    (:mod:`dpcalc.engine.dpsgd.pld_calibration`).  A configuration it cannot discretise (or that needs more
    memory than the cap) is an error when pld alone was asked for (``strict``), else a row with no value
    and the reason in ``note``."""
    n = g["q"].size
    nan = np.full(n, np.nan)
    length = "epochs" if "epochs" in g and solve == "q" else "steps"
    given = {
        None: ("q", "sigma", "steps", "delta"),
        "sigma": ("q", "steps", "delta", "target"),
        "steps": ("q", "sigma", "delta", "target"),
        "q": ("sigma", length, "n", "delta", "target"),
    }[solve]
    # what the sampler's run reads besides (truncated Poisson: N and the cap; balls-in-bins: N, the epoch)
    given = tuple(dict.fromkeys((*given, *(_AXIS[k] for k in sampler.run_inputs))))

    zero = _certified_zero(p, sampler, g) if solve is None else np.zeros(n, bool)

    def one(i):
        v = {
            k: float(g[k][i]) if k in g else None
            for k in ("q", "sigma", "steps", "epochs", "n", "bmax", "delta", "target")
        }
        if zero[i]:  # ε = 0 is certified: the exact ε is 0, the bracket [0, 0]
            return (v["sigma"], v["steps"], v["q"], 0.0, 0.0, 0.0)
        setting = sampler.pld_setting(p.neighbors, v["n"], v["bmax"])
        if solve == "sigma":
            s, b = pld_calibration.calibrate_noise_pld(
                v["q"],
                v["steps"],
                v["delta"],
                v["target"],
                rtol=SIGMA_RTOL,
                eps_error=p.eps_error,
                setting=setting,
            )
            return (float(s), v["steps"], v["q"], *map(float, b))
        if solve == "steps":
            t, b = pld_calibration.max_steps_pld(
                v["q"], v["sigma"], v["delta"], v["target"], eps_error=p.eps_error, setting=setting
            )
            return (v["sigma"], float(t), v["q"], *map(float, b))
        if solve == "q":
            q, b = pld_calibration.max_sample_rate_pld(
                v["sigma"],
                None if length == "epochs" else v["steps"],
                v["delta"],
                v["target"],
                dataset_size=v["n"],
                epochs=v["epochs"] if length == "epochs" else None,
                eps_error=p.eps_error,
                rtol=SIGMA_RTOL,
                setting=setting,
            )
            q = float(q)
            return (v["sigma"], _steps_at(q, v, length), q, *map(float, b))
        b = pld_accounting.sgd_epsilon_pld(
            v["q"], v["sigma"], v["steps"], v["delta"], eps_error=p.eps_error, **setting
        )
        return (v["sigma"], v["steps"], v["q"], *(float(x) for x in b))

    answers: dict = {}
    out = np.full((6, n), np.nan)  # noise multiplier, steps, sample rate, lower, estimate, upper
    notes = [""] * n
    for i in range(n):
        key = tuple(float(g[k][i]) if k in g else None for k in given)
        if key not in answers:
            try:
                answers[key] = (one(i), ZERO_NOTE if zero[i] else "")
            except InputError as exc:
                message = pld_refusal(exc)
                if strict:
                    raise InputError(message) from None
                answers[key] = ((np.nan,) * 6, f"does not apply: {message}")
        out[:, i], notes[i] = answers[key]
    sigma, steps, q, lower, est, upper = out
    if (
        sampler.pld_upper_only
    ):  # its models only dominate the run (its notes say so): no lower end, no estimate
        lower, est = nan, nan
    if solve != "sigma":
        sigma = g["sigma"]  # as given, also on rows the accountant refused
    if solve != "steps" and not (solve == "q" and length == "epochs"):
        steps = g["steps"]
    # the epsilon column holds the certified upper end; the estimate has a column of its own
    e = sgd.Epsilon(upper, nan, np.zeros(n, bool), np.ones(n, bool))
    cols = dict(noise_multiplier=sigma, steps=steps, eps=e, lower=lower, estimate=est, note=notes)
    if solve == "q":
        cols["q"] = q
    return cols


#: The grid's axis of each input a sampler's run reads.
_AXIS = {"dataset_size": "n", "max_batch_size": "bmax"}


def _certified_zero(p, sampler, g):
    """Where ε at δ is 0, certified without a PLD: the rdp accountant's bound (the exact Rényi DP of the
    Poisson-subsampled Gaussian, Mironov, Talwar & Zhang 2019, converted by Asoodeh et al.'s optimal
    conversion; docs/math.md §3.2, §1.4) is 0, i.e. the hockey-stick divergence at ε = 0 (the total
    variation between the run's two output laws) is at most δ.  The exact ε is then 0, so the PLD
    bracket is [0, 0]: answered in milliseconds where discretising the PLD of an ε = 0 run (δ near
    1, or a run that barely touches each example) took seconds and hundreds of MB.  Where the sampler says
    so (``pld_zero_by_rdp``: Poisson sampling, either relation); elsewhere nothing is skipped."""
    n = g["q"].size
    if not sampler.pld_zero_by_rdp:
        return np.zeros(n, bool)
    # only where δ reaches the run's total variation (:func:`dpcalc.engine.dpsgd.accounting.tv_lower`) can ε
    # be 0: elsewhere the Rényi bound, an upper bound on δ(0), is above δ too, and is not computed
    q, sigma, steps, delta = (np.broadcast_to(g[k], (n,)) for k in ("q", "sigma", "steps", "delta"))
    maybe = np.flatnonzero(delta >= sgd.tv_lower(q, sigma))
    zero = np.zeros(n, bool)
    if maybe.size:
        with np.errstate(all="ignore"):  # a σ at the ends of the double range: its bound is inf, not 0
            e = sgd.epsilon_rdp(
                q[maybe],
                sigma[maybe],
                steps[maybe],
                delta[maybe],
                sampling=p.sampling,
                neighbors=p.neighbors,
                warn=False,
            )
        zero[maybe] = np.asarray(e.epsilon, float).reshape(-1) == 0.0
    return zero


def _steps_at(q: float, v: dict, length: str) -> float:
    """The steps of the run at the rate found: as given, or ceil(E/q) = ceil(E·N/B) for ``--epochs``."""
    if length != "epochs":
        return v["steps"]
    if q <= 0:
        return math.nan
    ratio = v["epochs"] * v["n"] / round(q * v["n"]) if v["n"] is not None else v["epochs"] / q
    return float(max(math.ceil(ratio), 1))


def light_block(light):
    """The block a chunk's rows are computed in: ``light`` False (scipy throughout), True (small arrays without
    scipy) or ``"full"`` (every array without scipy); :class:`dpcalc.engine.mechanisms.sgm.light_start`."""
    return sgm.light_start(full=light == "full") if light else contextlib.nullcontext()


def accountant_rows(question, way, g, kw, light=True) -> dict:
    """One accountant's answers to ``question`` on the combinations ``g`` (flat arrays), by the route ``way``
    (:func:`dpcalc.commands.sgd.group.route`: the sampler and accountant of an example's rows, or a person's);
    ``light``: small arrays may skip scipy, every array with ``"full"`` (see
    :class:`dpcalc.engine.mechanisms.sgm.light_start`)."""
    p, solve, name, sampler = question.params, question.solve, way.name, way.sampler
    with light_block(light):
        if p.tuning is not None:
            return _tuned_rows(p, name, g, kw, solve)
        if name == "dp-group":
            return _dp_group(way.k, g, {**kw, "group_size": way.k}, solve)
        if name == LAST_ITERATE:
            return heuristic_cols(
                g, last_iterate.last_iterate_epsilon(g["delta"], g["sigma"], g["q"], g["steps"])
            )
        if name == "pld":
            return _pld_rows(p, sampler, g, solve, question.strict)
        if name == "mc":  # Monte Carlo of balls-in-bins
            return mc.epsilon_rows(p, sampler, g)
        if not sampler.covers("rdp"):  # a row of its own (shuffle)
            return _own_rows(sampler, g)
        if solve is not None and not sampler.vectorised_inverse:
            # truncated Poisson, random allocation: one search per configuration
            return searched_rows(name, g, kw, solve, SIGMA_RTOL)
        if solve is None:
            e = sgd.epsilon(name, g["q"], g["sigma"], g["steps"], g["delta"], **kw)
            return dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e)
        if solve == "sigma":
            sig, e = noise_calibration.calibrate_noise(
                g["q"], g["steps"], g["delta"], g["target"], accountant=name, rtol=SIGMA_RTOL, **kw
            )
            return dict(noise_multiplier=sig, steps=g["steps"], eps=e)
        if solve == "q":
            return _rate_rows(name, g, kw)
        t, _ = step_budget.max_steps(g["q"], g["sigma"], g["delta"], g["target"], accountant=name, **kw)
        # report ε (with its order and flags) at the answer; 0 steps: nothing fits
        e = sgd.epsilon(name, g["q"], g["sigma"], np.maximum(t, 1.0), g["delta"], **kw)
        e = e._replace(epsilon=np.where(t >= 1, e.epsilon, np.nan), alpha=np.where(t >= 1, e.alpha, np.nan))
        return dict(noise_multiplier=g["sigma"], steps=t, eps=e)


def _dp_group(k, g, kw, solve) -> dict:
    """dp-group: the (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the example-level rdp bound for a
    person with ``k`` examples (:func:`dpcalc.engine.dpsgd.accounting.epsilon_dp_group`), or its inverse
    questions by a search per configuration; every row's note names the route."""
    if solve is None:
        e = sgd.epsilon("dp-group", g["q"], g["sigma"], g["steps"], g["delta"], warn=False, **kw)
        cols = dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e)
    else:
        cols = searched_rows("dp-group", g, kw, solve, SIGMA_RTOL)
    note = (
        f"a person with K = {k} examples; comparison: (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the "
        "example-level rdp bound, ε = K·ε' at the best δ' found; an upper bound"
    )
    cols["note"] = [note] * g["q"].size
    return cols


def pld_refusal(exc: InputError) -> str:
    """A PLD refusal's message as sgd-epsilon says it: the engine's hint at the RDP accountant named by its
    option, --method rdp."""
    return str(exc).replace(pld_grid.RDP_HINT, "--method rdp")


def heuristic_cols(g, value) -> dict:
    """The columns of a heuristic's rows (``--release last-iterate``): its value an estimate (``estimate``), the
    bound columns empty (no -q, --max-epsilon or ledger reads it)."""
    n = g["q"].size
    nan = np.full(n, np.nan)
    e = sgd.Epsilon(nan, nan, np.zeros(n, bool), np.ones(n, bool))
    return dict(
        noise_multiplier=g["sigma"], steps=g["steps"], eps=e, estimate=np.asarray(value, float).reshape(n)
    )


#: The note of an accountant other than rdp under --tuning-runs.
TUNING_REFUSAL = "does not apply with --tuning-runs (an RDP bound)"


def _tuned_rows(p, name, g, kw, solve=None) -> dict:
    """``--tuning-runs``: the whole run is the base algorithm Q, run K times with the best output released;
    its RDP curve (T times the per-step curve) becomes the tuned algorithm's (Papernot & Steinke 2022, Thm 2
    or Thm 6; :func:`dpcalc.engine.composition.tuning.tuned_rdp`, docs/math.md §2.10), converted by
    --conversion.  Only the rdp accountant applies; the others' rows say so.  With ``--target-epsilon``
    and the noise multiplier left out (``solve == "sigma"``): the smallest σ (within a factor 1 + 1e-4)
    whose *tuned* ε is at or below the target (:func:`_tuned_sigma`)."""
    n = g["q"].size
    if name != "rdp":
        nan = np.full(n, np.nan)
        e = sgd.Epsilon(nan, nan, np.zeros(n, bool), np.zeros(n, bool))
        sigma = g["sigma"] if "sigma" in g else nan
        return dict(noise_multiplier=sigma, steps=g["steps"], eps=e, note=[TUNING_REFUSAL] * n)
    sigma = g["sigma"] if solve != "sigma" else _tuned_sigma(p, g, kw)
    b = _tuned_eps(p, kw, g["q"], np.where(np.isfinite(sigma), sigma, 1.0), g["steps"], g["delta"])
    value = np.where(np.isfinite(sigma), b.value, np.nan)
    alpha = np.where(np.isfinite(sigma), b.alpha, np.nan)
    e = sgd.Epsilon(
        value, alpha, b.at_edge & (b.value > 0) & np.isfinite(sigma), np.ones(b.value.shape, bool)
    )
    note = p.tuning.note()
    miss = f"{note}; no noise multiplier up to {TUNED_SIGMA_RANGE[1]:g} meets the target (the tuning terms remain)"
    return dict(
        noise_multiplier=sigma,
        steps=g["steps"],
        eps=e,
        note=[note if f else miss for f in np.isfinite(sigma).flat],
    )


def _tuned_eps(p, kw, q, sigma, steps, delta):
    """The tuned run's ε bound (a :class:`~dpcalc.engine.conversion.methods` bound) at arrays of inputs."""
    orders = np.asarray(DEFAULT_ORDERS, float)
    q, sigma, steps, delta = np.broadcast_arrays(*(np.asarray(x, float) for x in (q, sigma, steps, delta)))
    total = sgd.rdp_total(q, sigma, steps, orders, sampling=kw["sampling"], neighbors=kw["neighbors"])
    tuned = tuning.tuned_rdp(orders, total, p.tuning, kw["conversion"])
    return sgd.eps_of_curve(orders, tuned, delta, kw["conversion"])


#: The noise multipliers searched under --tuning-runs --target-epsilon.
TUNED_SIGMA_RANGE = (1e-3, 1e6)


def _tuned_sigma(p, g, kw):
    """Per row, the smallest σ in :data:`TUNED_SIGMA_RANGE` (within a factor 1 + SIGMA_RTOL) at which the
    tuned ε was computed and found at or below the target (:func:`dpcalc.engine.pld.search.boundary`: a
    monotone search, the neighbour σ/(1 + rtol) computed and found above it); inf where none is."""
    out = np.full(g["q"].shape, np.inf)
    for i in range(out.size):  # one search per row (each evaluation is array work over the orders)
        q, steps, delta, target = (float(g[k].flat[i]) for k in ("q", "steps", "delta", "target"))

        def test(s, q=q, steps=steps, delta=delta):
            v = float(np.asarray(_tuned_eps(p, kw, q, s, steps, delta).value).reshape(-1)[0])
            return (v if math.isfinite(v) else math.inf), None

        lo, hi = TUNED_SIGMA_RANGE
        if not test(hi)[0] <= target:  # the tuning terms leave a floor that no noise removes
            continue
        found = boundary(test, target, 1.0, ok_above=True, lo=lo, hi=hi, rtol=SIGMA_RTOL)
        if found.x is not None:
            out.flat[i] = found.x
    return out


def _rate_rows(name, g, kw) -> dict:
    """The largest sample rate (batch size, with ``--dataset-size``) within the target, and ε there."""
    by_epochs = "epochs" in g
    n = g.get("n")
    kw = {k: v for k, v in kw.items() if k != "dataset_size"}
    q, _ = rate_budget.max_sample_rate(
        g["sigma"],
        None if by_epochs else g["steps"],
        g["delta"],
        g["target"],
        epochs=g["epochs"] if by_epochs else None,
        dataset_size=n,
        accountant=name,
        rtol=SIGMA_RTOL,
        **kw,
    )
    fits = q > 0
    if by_epochs:
        ratio = g["epochs"] * n / np.round(np.where(fits, q, 1.0) * n) if n is not None else g["epochs"] / q
        steps = np.where(fits, np.maximum(np.ceil(ratio), 1.0), np.nan)
    else:
        steps = g["steps"]
    # report ε (with its order and flags) at the answer; rate 0: nothing fits
    extra = {"dataset_size": n} if n is not None else {}
    e = sgd.epsilon(
        name, np.where(fits, q, 1.0), g["sigma"], np.where(fits, steps, 1.0), g["delta"], **kw, **extra
    )
    e = e._replace(epsilon=np.where(fits, e.epsilon, np.nan), alpha=np.where(fits, e.alpha, np.nan))
    return dict(noise_multiplier=g["sigma"], steps=steps, eps=e, q=q)


def _own_rows(sampler, g) -> dict:
    """The row of a sampler that answers with its own bounds (shuffle: the upper and the lower bound on ε,
    :mod:`dpcalc.engine.samplers.shuffle`) on each combination of ``g`` (flat arrays)."""
    upper, lower = sampler.own_rows(g["sigma"], g["steps"], g["delta"], g["q"], g.get("n"), g.get("b"))
    n = g["q"].size
    e = sgd.Epsilon(upper, np.full(n, np.nan), np.zeros(n, bool), np.ones(n, bool))
    return dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e, lower=lower)
