"""``dpcalc sgd-epsilon --fpr``: the largest true-positive rate of any membership test at each
false-positive rate, for a DP-SGD run (docs/math.md §10; the rows are those of
:mod:`dpcalc.commands.tradeoff`): rdp (the profile of the run's Rényi curve), pld (a certified bracket) and,
with ``--method all``, exact at q = 1 and the central-limit approximation."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np

from dpcalc.commands import noise_std
from dpcalc.commands.sgd.group import refuse_group
from dpcalc.commands.sgd.question import check_inputs, eps_error_of
from dpcalc.commands.tradeoff import CLT_NOTE, RDP_NOTE, exact_rows, tradeoff_result, tradeoff_row
from dpcalc.engine.dpsgd.accounting import rdp_total
from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.samplers import catalogue
from dpcalc.engine.samplers.base import OPTIONS
from dpcalc.errors import InputError
from dpcalc.result import Result


def sgd_tradeoff(params, fpr) -> Result:
    """``dpcalc sgd-epsilon --fpr``: one row per configuration, false-positive rate and accountant
    (rdp, pld; with ``all`` also exact where q = 1 and the central-limit row)."""
    # lazy: scipy (dpcalc.engine.tradeoff); only --fpr needs it: a plain sgd-epsilon or convert imports none
    from dpcalc.engine import tradeoff

    refuse_group(params, "--fpr")
    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    if params.target_epsilon is not None:
        raise InputError("--fpr cannot be used with --target-epsilon (give the noise, rate and steps)")
    sampler, neighbors, extra = profile_setting(params)
    sampling = sampler.name
    plain = (sampling, neighbors) == ("poisson", "add-remove")
    accountant = params.accountant
    if accountant not in ("rdp", "pld", "all"):
        raise InputError(f"--fpr: applies to --method rdp, pld or all, not {accountant}")

    has_pld = sampler.covers("pld")
    if accountant == "pld" and not has_pld:
        raise InputError(f"--fpr: --method pld does not apply to --sampling {sampling}; use --method rdp")
    params = replace(params, eps_error=eps_error_of(params, has_pld and accountant in ("pld", "all")))
    pld_kw = sampler.pld_setting(neighbors, extra.get("dataset_size"), extra.get("max_batch_size"))
    rows = []
    for q, sigma, steps in profile_configs(params, sampler):
        cfg = {"sample_rate": q, "noise_multiplier": sigma, "steps": steps}
        if q == 1.0 and accountant == "all" and plain:
            rows += [dict(r, **cfg) for r in exact_rows(fpr, math.sqrt(steps) / sigma)]
        if accountant in ("rdp", "all"):
            curve = rdp_total(
                q, sigma, steps, DEFAULT_ORDERS, sampling=sampling, neighbors=neighbors, **extra
            )
            hi = tradeoff.rdp_tpr(DEFAULT_ORDERS, curve, fpr)
            note = RDP_NOTE
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
            if sampler.pld_upper_only:  # the models dominate the run: an upper end only
                lo, est = [None] * len(hi), [None] * len(hi)
                note += f" (no lower end or estimate: {sampler.pld_upper_why})"
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
        f"; {k}: {v:g}" for k, v in extra.items() if k in sampler.captioned_inputs
    )
    caption = setting + noise_std.caption(params.noise_std)
    return tradeoff_result(rows, "sgd-epsilon", "DP-SGD trade-off", caption, setting)


def profile_setting(params, question="--fpr"):
    """(sampler, neighbours, the keywords of the accountants) of ``--fpr``: every sampler whose bound is a
    privacy profile (not shuffle or fixed-size); the inputs its run reads with one value each (the rows have
    no columns for them)."""
    sampler = catalogue.sampler(params.sampling)
    if not sampler.profile_relations:
        profiles = [s.name for s in catalogue.CATALOGUE.values() if s.profile_relations]
        raise InputError(
            f"{question}: does not apply to --sampling {sampler.name} (its bound is not a privacy profile here); use "
            + ", ".join(profiles[:-1])
            + f" or {profiles[-1]}"
        )
    neighbors = params.neighbors or "add-remove"
    if neighbors not in sampler.profile_relations:
        raise InputError(
            f"{question}: --sampling {sampler.name} is analysed under add/remove neighbours only"
        )

    check_inputs(params, sampler)  # what the sampler needs, and --max-batch-size belonging to it
    given = [k for k in sampler.run_inputs if getattr(params, k) is not None]
    if any(len(getattr(params, k)) != 1 for k in given):
        raise InputError(
            f"{question} with --sampling {sampler.name}: give "
            + " and ".join(f"one {OPTIONS[k]}" for k in reversed(given))  # the cap first, as it always read
        )
    extra = {k: float(getattr(params, k)[0]) for k in given}
    return sampler, neighbors, extra


def profile_configs(params, sampler, question="--fpr", sigmas=None, length=True):
    """(q, σ, T) of every configuration of the swept inputs (``sigmas``: instead of --noise-multiplier;
    ``length`` False: the steps are what is found, T is None)."""
    sigmas = params.sigma if sigmas is None else sigmas
    if sigmas is None:
        raise InputError(f"{question}: give --noise-multiplier")
    if params.sample_rate is not None:
        rates = [(float(q), 1.0, float(q)) for q in params.sample_rate]  # (q, N, B) with E·N/B = E/q
    elif params.batch_size is not None and params.dataset_size is not None:
        rates = [(b / n, float(n), float(b)) for b in params.batch_size for n in params.dataset_size]
        if any(r[0] > 1 for r in rates):
            raise InputError("--batch-size: must not exceed --dataset-size")
    else:
        raise InputError(f"{question}: give --sample-rate (or --batch-size with --dataset-size)")
    out = []
    for (q, n, b), sigma in itertools.product(rates, sigmas):
        if not length:
            lengths = [None]
        elif params.steps is not None:
            lengths = [int(t) for t in params.steps]
        elif params.epochs is not None:  # as sgd-epsilon counts them (ceil(E·N/B), or whole epochs)
            by_rate = params.sample_rate is not None
            lengths = [
                int(sampler.steps_of_epochs(e, q, None if by_rate else n, None if by_rate else b))
                for e in params.epochs
            ]
        else:
            raise InputError(f"{question}: give --steps or --epochs")
        out += [(q, float(sigma), t) for t in lengths]
    return out
