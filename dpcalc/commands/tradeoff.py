"""``--fpr``: the largest true-positive rate of any membership test at a false-positive rate, for
``compose`` and ``sgd-epsilon`` (docs/math.md §10; the engine is :mod:`dpcalc.engine.tradeoff`).

Rows (one per false-positive rate, per configuration and per method):

* ``exact`` — Gaussian compositions (and DP-SGD with q = 1): μ-GDP with μ = Δ/σ·√k, TPR = Φ(Φ⁻¹(α) + μ)
  exactly (Dong, Roth & Su 2022, arXiv:1905.02383, §2.1 and Cor. 3.3).
* ``pld`` — the privacy profile δ(ε) of the composed privacy loss distributions (certified brackets at
  a grid of ε refined around each α's best ε): ``tpr`` = ``tpr_upper`` from the upper ends (a certified
  bound), ``tpr_lower`` the least any profile within the bracket can certify, ``tpr_estimate`` from the
  estimates (not a bound).
* ``rdp`` — the profile of the Rényi curve (Balle et al.'s conversion on a dense grid of ε, the optimal
  one near each α's best ε): a certified upper bound.
* ``clt-asymptotic`` — DP-SGD's central-limit μ (Dong, Roth & Su, §5; Bu et al. 2020,
  arXiv:1911.11607): an approximation, never a guarantee, never judged by ``--max-tpr``: its value is in
  ``tpr_estimate``, its ``tpr`` empty.

``tpr`` is always a certified upper bound (or empty), as ``epsilon`` is in every command; the headline
(``-q``, ``--max-tpr``, ``best``) is the same value, ``tpr_upper``.  numpy loads inside the functions.
"""

from __future__ import annotations

import math

from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result

#: the methods of compose that answer --fpr, in the order --method all shows them
COMPOSE_METHODS = ("exact", "pld", "rdp", "clt-asymptotic")
_CLT_NOTE = "central limit theorem (Dong, Roth & Su 2022; Bu et al. 2020): an approximation, not a guarantee"


def _row(method, fpr, lo, est, hi, mu=None, note=""):
    """One trade-off row: ``tpr`` is the certified upper end ``hi`` (as ``epsilon`` is in every command),
    the estimate ``est`` goes to ``tpr_estimate``."""
    return {
        "method": method,
        "fpr": fpr,
        "tpr_lower": lo,
        "tpr_estimate": est,
        "tpr": hi,
        "tpr_upper": hi,
        "mu": mu,
        "note": note,
    }


def _f(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _exact_rows(fpr, mu, method="exact"):
    from dpcalc.engine import tradeoff

    hi = tradeoff.gaussian_tpr(fpr, mu)
    lo = tradeoff.gaussian_tpr_lower(fpr, mu)
    note = f"μ-GDP, μ = {mu:.6g}: TPR = Φ(Φ⁻¹(FPR) + μ)"
    return [_row(method, float(a), float(lw), None, float(h), mu, note) for a, lw, h in zip(fpr, lo, hi)]


def _compose_clt_mu(specs):
    """μ of the central limit theorem for Gaussian and Poisson-subsampled Gaussian specs (μ² adds up over
    compositions, Dong, Roth & Su §3 and §5), or ``None`` when some spec is of another kind."""
    from dpcalc.engine import tradeoff
    from dpcalc.engine.mechanisms.catalogue import CATALOGUE

    total = 0.0
    for s in specs:
        r = CATALOGUE[s.kind].gaussian_ratio(s.params)
        if r is not None:
            total += s.count * r * r
        elif s.kind == "subsampled-gaussian" and s.params.get("sampling", "poisson") == "poisson":
            total += float(tradeoff.clt_mu(s.params["q"], s.params["sigma"], s.count)) ** 2
        else:
            return None
    return math.sqrt(total)


#: Most false-positive rates of one ``compose --fpr`` with the pld method (each adds PLD brackets of δ(ε)).
MAX_PLD_FPR = 10


def compose_tradeoff(texts, fpr, method, eps_error=None) -> Result:
    """``dpcalc compose --fpr``: one row per false-positive rate (and per method with ``all``)."""
    import numpy as np

    from dpcalc.commands.compose import _check_relations, _relation_caption
    from dpcalc.engine import tradeoff
    from dpcalc.engine.composition.pld import compose_pld
    from dpcalc.engine.mechanisms.catalogue import gaussian_r2, rdp_refusal, total_rdp
    from dpcalc.engine.orders import DEFAULT_ORDERS
    from dpcalc.spec import expand_sources, merge_identical, parse_mechanisms

    if method not in (*COMPOSE_METHODS[:3], "best", "all"):
        raise InputError(f"--fpr: applies to --method exact, pld, rdp, best or all, not {method}")
    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    specs = merge_identical(parse_mechanisms(expand_sources(texts)))
    _check_relations(specs)
    names = COMPOSE_METHODS if method in ("all", "best") else (method,)
    per: dict[str, list] = {}
    for name in names:
        reason = None
        if name == "exact":
            r2 = gaussian_r2(specs)
            if r2 is None:
                reason = "only for compositions of plain gaussian specs"
            else:
                per[name] = _exact_rows(fpr, math.sqrt(r2))
        elif name == "pld":
            try:
                if len(fpr) > MAX_PLD_FPR:  # each rate refines the profile around its own ε
                    raise InputError(
                        f"--fpr: {len(fpr)} rates, above the limit of {MAX_PLD_FPR} for --method pld "
                        "(each refines the composed profile around its own ε)"
                    )
                lo, est, hi = tradeoff.pld_tpr(
                    fpr,
                    lambda e: compose_pld(specs, epsilon=e, eps_error=eps_error),
                    lambda d: compose_pld(specs, delta=d, eps_error=eps_error).upper,
                )
            except InputError as exc:
                if method == "pld":
                    raise
                reason = str(exc)
            else:
                note = "privacy profile of the composed PLD: certified tpr_upper"
                per[name] = [
                    _row("pld", float(a), *map(float, t), None, note) for a, *t in zip(fpr, lo, est, hi)
                ]
        elif name == "rdp":
            refusals = [r for s in specs if (r := rdp_refusal(s)) is not None]
            if refusals:
                reason = refusals[0]
            else:
                hi = tradeoff.rdp_tpr(DEFAULT_ORDERS, total_rdp(specs, DEFAULT_ORDERS), fpr)
                note = "privacy profile of the Rényi curve (Balle et al. and optimal conversions): an upper bound"
                per[name] = [_row("rdp", float(a), None, None, float(h), None, note) for a, h in zip(fpr, hi)]
        else:  # clt-asymptotic: only where some spec is subsampled (else exact is the same, and exact)
            mu = _compose_clt_mu(specs)
            if mu is None or gaussian_r2(specs) is not None:
                continue
            rows = _exact_rows(fpr, mu, "clt-asymptotic")
            per[name] = [
                dict(r, tpr_lower=None, tpr_estimate=r["tpr"], tpr=None, tpr_upper=None, note=_CLT_NOTE)
                for r in rows
            ]
        if reason is not None:
            per[name] = [
                _row(name, float(a), None, None, None, None, f"does not apply: {reason}") for a in fpr
            ]
    rows = _pick(per, fpr.size) if method == "best" else [r for m in names if m in per for r in per[m]]
    return _result(
        rows,
        "compose",
        "trade-off",
        "mechanisms: " + " + ".join(s.label() for s in specs) + _relation_caption(specs),
        " + ".join(s.text for s in specs),
    )


def _pick(per, n):
    """``best``: per false-positive rate, the row with the smallest certified ``tpr_upper``."""
    out = []
    for i in range(n):
        cands = [rows[i] for rows in per.values() if rows[i]["tpr_upper"] is not None]
        if not cands:
            raise InputError("MECHANISM: no method gives a trade-off bound for these mechanisms")
        out.append(min(cands, key=lambda r: r["tpr_upper"]))
    return out


def _result(rows, command, title, caption, subtitle) -> Result:
    from dpcalc.commands.schema import tradeoff_names

    cols = {
        name: [_f(r.get(name)) if name not in ("method", "note") else r.get(name) for r in rows]
        for name in tradeoff_names(command)
    }
    for name in ("sample_rate", "noise_multiplier", "steps"):
        if name in cols:
            cols[name] = [r.get(name) for r in rows]
    result = Result(cols, headline="tpr_upper", title=title, caption=caption)
    fixed = [
        f"{sym} = {cols[name][0]:g}"
        for name, sym in (("sample_rate", "q"), ("noise_multiplier", "σ"), ("steps", "T"))
        if name in cols and cols[name] and len(set(cols[name])) == 1
    ]
    subtitle = "; ".join(p for p in (", ".join(fixed), subtitle) if p)
    result.plot = _result_plot(
        tuple(g for g in ("sample_rate", "noise_multiplier", "steps") if g in cols and len(set(cols[g])) > 1),
        subtitle,
    )
    return result


def _result_plot(group, subtitle) -> PlotSpec:
    """``--plot``: TPR against FPR on log axes, one line per method (and per swept ``group`` value), the
    pld bracket shaded, and the diagonal of random guessing; estimates (pld's, the central-limit
    approximation) as lines of their own, labelled as not a bound."""
    return PlotSpec(
        x="fpr",
        y="tpr",
        y_extra=("tpr_estimate",),
        series="method",
        logx=True,
        logy=True,
        group=group,
        band=("tpr_lower", "tpr_upper"),
        diagonal="random guessing (TPR = FPR)",
        labels={
            "pld": "pld (its certified bracket shaded)",
            "clt-asymptotic": "clt-asymptotic (an approximation, not a bound)",
            "tpr": "bound",
            "tpr_estimate": "estimate, not a bound",
        },
        xlabel="false-positive rate α",
        ylabel="largest true-positive rate",
        title="What ε means for an attacker: the trade-off curve",
        subtitle=subtitle,
    )


def sgd_tradeoff(params, fpr) -> Result:
    """``dpcalc sgd-epsilon --fpr``: one row per configuration, false-positive rate and accountant
    (rdp, pld; with ``all`` also exact where q = 1 and the central-limit row)."""
    import numpy as np

    from dpcalc.engine import tradeoff
    from dpcalc.engine.dpsgd.accounting import rdp_total
    from dpcalc.engine.dpsgd.pld_accounting import sgd_delta_pld, sgd_epsilon_pld
    from dpcalc.engine.orders import DEFAULT_ORDERS

    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    if params.target_epsilon is not None:
        raise InputError("--fpr cannot be used with --target-epsilon (give the noise, rate and steps)")
    sampling, neighbors, extra = _fpr_setting(params)
    plain = (sampling, neighbors) == ("poisson", "add-remove")
    accountant = params.accountant
    if accountant not in ("rdp", "pld", "all"):
        raise InputError(f"--fpr: applies to --accountant rdp, pld or all, not {accountant}")
    from dpcalc.commands.samplers import ALLOCATION, pld_applies, pld_setting

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
            rows += [dict(r, **cfg) for r in _exact_rows(fpr, math.sqrt(steps) / sigma)]
        if accountant in ("rdp", "all"):
            curve = rdp_total(
                q, sigma, steps, DEFAULT_ORDERS, sampling=sampling, neighbors=neighbors, **extra
            )
            hi = tradeoff.rdp_tpr(DEFAULT_ORDERS, curve, fpr)
            note = "privacy profile of the Rényi curve (Balle et al. and optimal conversions): an upper bound"
            rows += [
                dict(_row("rdp", float(a), None, None, float(h), None, note), **cfg) for a, h in zip(fpr, hi)
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
                dict(_row("pld", float(a), *(None if v is None else float(v) for v in t), None, note), **cfg)
                for a, *t in zip(fpr, lo, est, hi)
            ]
        if accountant == "all" and q < 1.0 and plain:
            mu = float(tradeoff.clt_mu(q, sigma, steps))
            rows += [
                dict(
                    r, tpr_lower=None, tpr_estimate=r["tpr"], tpr=None, tpr_upper=None, note=_CLT_NOTE, **cfg
                )
                for r in _exact_rows(fpr, mu, "clt-asymptotic")
            ]
    setting = f"sampling: {sampling}; neighbours: {neighbors}" + "".join(
        f"; {k}: {v:g}" for k, v in extra.items() if k != "dataset_size" or sampling == "truncated-poisson"
    )
    return _result(rows, "sgd-epsilon", "DP-SGD trade-off", setting, setting)


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
    from dpcalc.commands.samplers import check_truncated

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
    import itertools

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
            from dpcalc.engine.dpsgd.allocation import epoch_steps

            m = float(epoch_steps(q, None if params.sample_rate is not None else n))
            lengths = [max(math.ceil(e * m), 1) for e in params.epochs]
        elif params.epochs is not None:  # steps = ceil(E/q) = ceil(E·N/B), as sgd-epsilon counts them
            lengths = [max(math.ceil(e * n / b), 1) for e in params.epochs]
        else:
            raise InputError("--fpr: give --steps or --epochs")
        out += [(q, float(sigma), t) for t in lengths]
    return out
