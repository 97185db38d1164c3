"""``dpcalc sgd-epsilon --fpr``: the largest true-positive rate of any membership test at each
false-positive rate, for a DP-SGD run (docs/math.md §10; the rows are those of
:mod:`dpcalc.commands.tradeoff`): rdp (the profile of the run's Rényi curve), pld (a certified bracket) and,
with ``--accountant all``, exact at q = 1 and the central-limit approximation."""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpcalc.commands.samplers import ALLOCATION, check_truncated, pld_applies, pld_setting
from dpcalc.commands.tradeoff import CLT_NOTE, exact_rows, tradeoff_result, tradeoff_row
from dpcalc.engine.dpsgd.accounting import rdp_total
from dpcalc.engine.dpsgd.allocation import epoch_steps
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError
from dpcalc.result import Result


def sgd_tradeoff(params, fpr) -> Result:
    """``dpcalc sgd-epsilon --fpr``: one row per configuration, false-positive rate and accountant
    (rdp, pld; with ``all`` also exact where q = 1 and the central-limit row)."""
    # lazy: scipy (dpcalc.engine.tradeoff); only --fpr needs it: a plain sgd-epsilon or convert imports none
    from dpcalc.engine import tradeoff

    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    if params.target_epsilon is not None:
        raise InputError("--fpr cannot be used with --target-epsilon (give the noise, rate and steps)")
    sampling, neighbors, extra = _fpr_setting(params)
    plain = (sampling, neighbors) == ("poisson", "add-remove")
    accountant = params.accountant
    if accountant not in ("rdp", "pld", "all"):
        raise InputError(f"--fpr: applies to --accountant rdp, pld or all, not {accountant}")

    has_pld = pld_applies(sampling)
    if accountant == "pld" and not has_pld:
        raise InputError(
            f"--fpr: --accountant pld does not apply to --sampling {sampling}; use --accountant rdp"
        )
    pld_kw = pld_setting(sampling, neighbors, extra.get("dataset_size"), extra.get("max_batch_size"))
    rows = []
    for q, sigma, steps in _sgd_configs(params):
        cfg = {"sample_rate": q, "noise_multiplier": sigma, "steps": steps}
        if q == 1.0 and accountant == "all" and plain:
            rows += [dict(r, **cfg) for r in exact_rows(fpr, math.sqrt(steps) / sigma)]
        if accountant in ("rdp", "all"):
            curve = rdp_total(
                q, sigma, steps, DEFAULT_ORDERS, sampling=sampling, neighbors=neighbors, **extra
            )
            hi = tradeoff.rdp_tpr(DEFAULT_ORDERS, curve, fpr)
            note = "privacy profile of the Rényi curve (Balle et al. and optimal conversions): an upper bound"
            rows += [
                dict(tradeoff_row("rdp", float(a), None, None, float(h), None, note), **cfg)
                for a, h in zip(fpr, hi)
            ]
        if accountant in ("pld", "all") and has_pld:
            lo, est, hi = tradeoff.pld_tpr(
                fpr,
                lambda e, c=(q, sigma, steps): sgd_delta_pld(*c, e, params.eps_error, **pld_kw),
                lambda d, c=(q, sigma, steps): sgd_epsilon_pld(*c, d, params.eps_error, **pld_kw).upper,
            )
            note = "privacy profile of the composed PLD (both directions): certified tpr_upper"
            if sampling in ALLOCATION:  # the rounds' models dominate the pair: an upper end only
                lo = [None] * len(hi)
                note += " (no lower end: the allocation rounds' models dominate the pair, docs/math.md §3.10)"
            rows += [
                dict(
                    tradeoff_row("pld", float(a), *(None if v is None else float(v) for v in t), None, note),
                    **cfg,
                )
                for a, *t in zip(fpr, lo, est, hi)
            ]
        if accountant == "all" and q < 1.0 and plain:
            mu = float(tradeoff.clt_mu(q, sigma, steps))
            rows += [
                dict(r, tpr_lower=None, tpr_estimate=r["tpr"], tpr=None, tpr_upper=None, note=CLT_NOTE, **cfg)
                for r in exact_rows(fpr, mu, "clt-asymptotic")
            ]
    setting = f"sampling: {sampling}; neighbours: {neighbors}" + "".join(
        f"; {k}: {v:g}" for k, v in extra.items() if k != "dataset_size" or sampling == "truncated-poisson"
    )
    return tradeoff_result(rows, "sgd-epsilon", "DP-SGD trade-off", setting, setting)


def _fpr_setting(params):
    """(sampling, neighbours, the keywords of the accountants) of ``--fpr``: every sampler with a Rényi curve
    or a PLD (not shuffle); truncated Poisson with one --dataset-size and one --max-batch-size (the rows
    have no columns for them)."""
    sampling = params.sampling
    if sampling in ("shuffle", "fixed-size"):
        raise InputError(
            f"--fpr: does not apply to --sampling {sampling} (its bound is not a privacy profile here); use "
            "poisson, truncated-poisson, balls-in-bins or random-allocation"
        )
    neighbors = params.neighbors or "add-remove"
    if sampling != "poisson" and neighbors != "add-remove":
        raise InputError(f"--fpr: --sampling {sampling} is analysed under add/remove neighbours only")

    check_truncated(params)  # what truncated Poisson needs, and --max-batch-size belonging to it
    extra = {}
    if sampling == "truncated-poisson":
        if len(params.max_batch_size) != 1 or len(params.dataset_size) != 1:
            raise InputError(
                "--fpr with --sampling truncated-poisson: give one --max-batch-size and one --dataset-size"
            )
        extra = dict(
            dataset_size=float(params.dataset_size[0]), max_batch_size=float(params.max_batch_size[0])
        )
    if sampling == "balls-in-bins" and params.dataset_size is not None:
        if len(params.dataset_size) != 1:
            raise InputError("--fpr with --sampling balls-in-bins: give one --dataset-size")
        extra = dict(dataset_size=float(params.dataset_size[0]))
    return sampling, neighbors, extra


def _sgd_configs(params):
    """(q, σ, T) of every configuration of the swept inputs."""
    if params.sigma is None:
        raise InputError("--fpr: give --noise-multiplier")
    if params.sample_rate is not None:
        rates = [(float(q), 1.0, float(q)) for q in params.sample_rate]  # (q, N, B) with E·N/B = E/q
    elif params.batch_size is not None and params.dataset_size is not None:
        rates = [(b / n, float(n), float(b)) for b in params.batch_size for n in params.dataset_size]
        if any(r[0] > 1 for r in rates):
            raise InputError("--batch-size: must not exceed --dataset-size")
    else:
        raise InputError("--fpr: give --sample-rate (or --batch-size with --dataset-size)")
    out = []
    for (q, n, b), sigma in itertools.product(rates, params.sigma):
        if params.steps is not None:
            lengths = [int(t) for t in params.steps]
        elif params.epochs is not None and params.sampling == "balls-in-bins":  # whole epochs of floor(N/B)
            m = float(epoch_steps(q, None if params.sample_rate is not None else n))
            lengths = [max(math.ceil(e * m), 1) for e in params.epochs]
        elif params.epochs is not None:  # steps = ceil(E/q) = ceil(E·N/B), as sgd-epsilon counts them
            lengths = [max(math.ceil(e * n / b), 1) for e in params.epochs]
        else:
            raise InputError("--fpr: give --steps or --epochs")
        out += [(q, float(sigma), t) for t in lengths]
    return out
