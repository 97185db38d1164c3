"""``dpcalc sgd-epsilon --epsilon E``: δ at ε of a DP-SGD run, by each accountant that can say it
(:mod:`dpcalc.commands.sgd.epsilon` asks; its ``--delta`` question is :mod:`dpcalc.commands.sgd.rows`).

* ``rdp`` (and ``rdp-group``, and the person's rdp of ``--group-size``): the run's Rényi curve converted at ε by
  ``--conversion`` (:func:`dpcalc.engine.conversion.methods.delta_from_curve`; optimal: the exact conversion of
  Asoodeh et al., certified and rounded up), minimised over the orders; ``alpha`` the best order.
* ``pld``: the certified bracket of δ(ε) of the composed privacy loss distributions, the worse of the pair's
  directions (:func:`dpcalc.engine.dpsgd.pld_accounting.sgd_delta_pld`: one composition per configuration,
  every ε of a sweep read off it); lower end and estimate only where the pair is the run's own
  (``Sampler.pld_upper_only``: the models that only dominate the run give its upper end alone).
* ``abadi``: the closed form ε = ρT + √(4ρT·log(1/δ)) solved for δ, δ = exp(−(ε − ρT)²/(4ρT)) (1 for ε <= ρT):
  the same statement as its ε row (the classic conversion of the line αρT at α* = (ε + ρT)/(2ρT)), asymptotic,
  ``valid`` where Lemma 3's conditions hold at α*.
* ``bassily``: the reference formula ε = 16q·√(T·ln(2/δ)·ln(1.25T/(δn)))/σ solved for δ (a quadratic in
  ln(1/δ)), ``valid`` where its theorem's ε <= 1 and 1.25T > δn hold.
* ``dp-group``: the (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) at ε' = ε/K: δ = K·e^((K−1)ε/K)·δ'(ε/K), with
  δ' the example-level rdp row's δ.
* ``mc`` (balls-in-bins): the Monte Carlo upper bound on δ(ε) with probability ``confidence``, and its estimate
  (:func:`dpcalc.engine.dpsgd.balls_in_bins_mc.delta_balls_in_bins_mc`).
* shuffle's own row: the exact profile of the k Gaussians of its upper bound (no amplification); Chua et al.'s
  lower bound is for ε at δ only.

Each answer is a dict of columns as :func:`dpcalc.commands.sgd.rows.accountant_rows` returns them, δ in place of
ε in ``eps`` (an :class:`~dpcalc.engine.dpsgd.accounting.Epsilon`), ``lower`` and ``estimate`` δ's.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands.sgd.question import LAST_ITERATE
from dpcalc.commands.sgd.rows import (
    heuristic_cols,
    last_iterate,
    light_block,
    mc,
    pld_accounting,
    pld_refusal,
)
from dpcalc.engine._numerics import next_up
from dpcalc.engine.conversion.methods import delta_from_curve
from dpcalc.engine.dpsgd import accounting as sgd
from dpcalc.engine.mechanisms import gaussian_exact
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.samplers.base import steps_per_epoch
from dpcalc.errors import InputError

__all__ = ["delta_rows"]


def delta_rows(question, way, g, kw, light=True) -> dict:
    """One accountant's δ at each ε of ``g["eps"]`` on the combinations ``g`` (flat arrays), by the route
    ``way`` (:func:`dpcalc.commands.sgd.group.route`: an example's sampler and accountant, or a person's)."""
    p, name, sampler = question.params, way.name, way.sampler
    with light_block(light):
        if name == "dp-group":
            return _dp_group(way.k, g, kw)
        if name == LAST_ITERATE:
            return heuristic_cols(
                g, last_iterate.last_iterate_delta(g["eps"], g["sigma"], g["q"], g["steps"])
            )
        if name == "pld":
            return _pld(p, sampler, g, question.strict)
        if name == "mc":
            upper, estimate = mc.delta_bounds(p, sampler, g)
            return _cols(g, upper, estimate=estimate)
        if not sampler.covers("rdp"):  # a row of its own (shuffle)
            return _shuffle(g)
        if name == "rdp":
            return _rdp(g, kw)
        if name == "abadi":
            return _abadi(g, kw)
        if name == "bassily":
            return _bassily(g, kw)
    raise InputError(f"--method {name}: no δ at ε here")  # pragma: no cover - every accountant is above


def _cols(g, delta, alpha=None, valid=None, **more) -> dict:
    """The columns of rows with δ ``delta`` (upper bounds), the order ``alpha`` and ``valid`` flags."""
    n = g["q"].size
    delta = np.asarray(delta, float).reshape(n)
    alpha = np.full(n, np.nan) if alpha is None else np.asarray(alpha, float).reshape(n)
    valid = np.ones(n, bool) if valid is None else np.asarray(valid, bool).reshape(n)
    e = sgd.Epsilon(delta, alpha, np.zeros(n, bool), valid)
    return dict(noise_multiplier=g["sigma"], steps=g["steps"], eps=e, **more)


def _rdp(g, kw) -> dict:
    """The run's Rényi curve (one per distinct rate and noise, the steps a factor) converted at each ε."""
    orders = np.asarray(DEFAULT_ORDERS, float)
    extra = {k: kw[k] for k in ("dataset_size", "max_batch_size") if kw.get(k) is not None}
    for name, value in extra.items():
        sgd.check_whole(value, name, 1.0)
    sgd.check_whole(g["steps"], "steps")
    total = sgd.rdp_total(
        g["q"], g["sigma"], g["steps"], orders, sampling=kw["sampling"], neighbors=kw["neighbors"], **extra
    )
    b = delta_from_curve(orders, total, g["eps"], method=kw["conversion"])
    return _cols(g, b.value, b.alpha)


def _abadi(g, kw) -> dict:
    """Abadi et al.'s closed form solved for δ (docs/math.md §3.1): the same (ε, δ) pairs as its ε row."""
    if not sgd.applies("abadi", kw["sampling"], kw["neighbors"]):
        raise InputError(
            "--method abadi: the moments accountant (Abadi et al. 2016) is for Poisson sampling with "
            "add/remove-one neighbours only"
        )
    q, sigma, steps, eps = (np.asarray(g[k], float) for k in ("q", "sigma", "steps", "eps"))
    rho_t = sgd.abadi_rho(q, sigma) * steps
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        gap = eps - rho_t
        log_delta = -(gap * gap) / (4.0 * rho_t)
        delta = np.where(gap > 0, np.minimum(next_up(np.exp(log_delta)), 1.0), 1.0)
        alpha = np.where(gap > 0, 1.0 + gap / (2.0 * rho_t), np.nan)
        lam_max = sigma * sigma * np.log(1.0 / (q * sigma))
        valid = (sigma >= 1.0) & (q < 1.0 / (16.0 * sigma)) & ((gap <= 0) | (alpha - 1.0 <= lam_max))
    return _cols(g, delta, alpha, valid | (delta >= 1.0))


def _bassily(g, kw) -> dict:
    """The Bassily–Smith–Thakurta formula solved for δ (docs/math.md §3.4): with u = ln(1/δ),
    (ln 2 + u)(ln(1.25T/n) + u) = T⁻¹(εσ/(16q))², a quadratic in u; u rounded down (δ up)."""
    if not sgd.applies("bassily", kw["sampling"], kw["neighbors"]):
        raise InputError(
            "--method bassily: the Bassily-Smith-Thakurta analysis is for fixed-size batches with "
            "replace-one neighbours (use --sampling fixed-size --neighbors replace-one)"
        )
    if kw.get("dataset_size") is None:
        raise InputError("--dataset-size: needed by the bassily reference (its formula involves n)")
    q, sigma, steps, eps = (np.asarray(g[k], float) for k in ("q", "sigma", "steps", "eps"))
    n = np.asarray(kw["dataset_size"], float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        a, b = math.log(2.0), np.log(1.25 * steps / n)
        c = (eps * sigma / (16.0 * q)) ** 2 / steps
        u = 0.5 * (-(a + b) + np.sqrt((a - b) ** 2 + 4.0 * c))
        u = np.nextafter(u * (1.0 - 1e-12), -np.inf)  # δ = e^(−u) rounded up
        delta = np.where(u > 0, np.minimum(next_up(np.exp(-u)), 1.0), 1.0)
        valid = (1.25 * steps > delta * n) & (eps <= 1.0) & (u > 0)
    return _cols(g, delta, None, valid | (delta >= 1.0))


def _dp_group(k, g, kw) -> dict:
    """(ε, δ) group conversion at ε' = ε/K of the example-level rdp row: δ = K·e^((K−1)ε/K)·δ'(ε/K)."""
    k = int(k)
    example = _rdp({**g, "eps": g["eps"] / k}, kw)["eps"].epsilon
    with np.errstate(over="ignore", divide="ignore"):
        log_delta = math.log(k) + (k - 1) * (g["eps"] / k) + np.log(example)
        delta = np.where(example > 0, np.minimum(next_up(np.exp(log_delta)), 1.0), 0.0)
    note = (
        f"a person with K = {k} examples; comparison: (ε, δ) group conversion (Vadhan 2017, Lemma 2.2) of the "
        "example-level rdp bound at ε/K, δ = K·e^((K−1)ε/K)·δ'(ε/K); an upper bound"
    )
    return _cols(g, delta, note=[note] * g["q"].size)


def _pld(p, sampler, g, strict) -> dict:
    """The certified bracket of δ at each ε: one composition per distinct configuration (its ε values read
    off one profile); a configuration the accountant refuses is an error when pld alone was asked for
    (``strict``), else rows with no value and the reason."""
    n = g["q"].size
    out = np.full((3, n), np.nan)  # lower, estimate, upper
    notes = [""] * n
    keys = [
        tuple(float(g[k][i]) if k in g else None for k in ("q", "sigma", "steps", "n", "bmax"))
        for i in range(n)
    ]
    for key in dict.fromkeys(keys):
        rows = [i for i, k in enumerate(keys) if k == key]
        q, sigma, steps, size, cap = key
        setting = sampler.pld_setting(p.neighbors, size, cap)
        try:
            b = pld_accounting.sgd_delta_pld(q, sigma, steps, g["eps"][rows], p.eps_error, **setting)
        except InputError as exc:
            message = pld_refusal(exc)
            if strict:
                raise InputError(message) from None
            for i in rows:
                notes[i] = f"does not apply: {message}"
            continue
        out[:, rows] = [np.asarray(x, float).reshape(-1) for x in b]
    lower, est, upper = out
    if sampler.pld_upper_only:  # its models only dominate the run: no lower end, no estimate
        lower, est = np.full(n, np.nan), np.full(n, np.nan)
    return _cols(g, upper, lower=lower, estimate=est, note=notes)


#: The note of shuffle's row with --epsilon.
SHUFFLE_NOTE = (
    "upper bound without amplification: the exact profile of the k Gaussians (k epochs touched); Chua et al.'s "
    "lower bound is for ε at δ only"
)


def _shuffle(g) -> dict:
    """Shuffled batches: the exact δ(ε) of the upper bound's k Gaussians with r = 2/σ each (no amplification)."""
    m = steps_per_epoch(g["q"], g.get("n"), g.get("b"))
    k = np.ceil(g["steps"] / m)
    delta = gaussian_exact.delta_gaussian(g["eps"], 2.0 * np.sqrt(k) / g["sigma"])
    return _cols(g, delta, note=[SHUFFLE_NOTE] * g["q"].size)
