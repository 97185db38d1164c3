"""``dpcalc matrix --advantage`` / ``--prior P`` / ``--fpr F`` / ``--target-advantage A`` / ``--target-tpr T``:
membership-inference risk of a matrix-mechanism run in an attacker's terms (docs/math.md §10, §10.4, §12.6), with
the rows, columns and rules of ``sgd-epsilon`` and ``compose`` (:mod:`dpcalc.commands.risk`,
:mod:`dpcalc.commands.tradeoff`; the formulas are :mod:`dpcalc.engine.risk` and :mod:`dpcalc.engine.tradeoff`).

Each row reads the privacy profile δ(ε) of its accountant (:mod:`.profiles`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpcalc.commands import noise_std, sweep
from dpcalc.commands.matrix import command as base
from dpcalc.commands.matrix import params, plan, sampled
from dpcalc.commands.matrix.profiles import MC_NO_TRADEOFF, _mmcc_note, _row
from dpcalc.commands.risk import refused_rows, risk_result, risk_rows
from dpcalc.commands.tradeoff import tradeoff_result, tradeoff_row
from dpcalc.engine import tradeoff
from dpcalc.engine._special import lazy_special as special
from dpcalc.engine.matrix import accounting as acc
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError
from dpcalc.result import Result

#: Most false-positive rates of a bandmf-pld or mmcc trade-off (each refines the profile around its own ε).  Kept for
#: now (beyond it the row says why it does not apply, or --method names it an error): the rates of one row are one
#: computation whose refinements are not yet split into pieces; its work could be estimated (VALUE_SECONDS) instead.
MAX_PLD_FPR = 10
#: The noise search of --target-advantage / --target-tpr (as sgd-epsilon's): its tolerance and range.
SIGMA_RTOL = 1e-4
SIGMA_RANGE = (1e-3, 1e6)
#: The most runs (step counts × strategies × patterns) one calibration answers (each method a search).  Kept for now:
#: a table of these searches is not yet estimated and planned as the ε and risk rows are (their searches' costs are
#: not measured); it bounds the work of --target-advantage / --target-tpr to 16 searches a method.
MAX_TARGET_CONFIGS = 16
#: The work of a risk question (CPU seconds on one core), from quick timings on the development machine (2 cores,
#: shared; time.process_time) with a margin of about 1.5 to 3: per row's profile at one σ (--advantage, --prior: δ(ε)
#: read at a few ε; --fpr: the trade-off curve), plus per prior or false-positive rate.  Measured: gaussian below
#: 1 ms; bandmf-rdp 0.06 s a σ (advantage), 1 to 1.2 s (one to four rates); bandmf-pld 0.11 to 0.35 s a σ (advantage;
#: 64 bands over 10⁵ steps the most), 0.4 to 2.5 s with one rate and 1 s a rate more; mmcc 1.5 s a σ (advantage, two
#: passes of its profile) and 2.3 s (one rate) for the 4-banded square root over 200 steps under poisson:q=0.01,
#: counted as passes of MMCC's own estimate (:func:`dpcalc.commands.matrix.sampled.mmcc_seconds`); mc by its samples.
PROFILE_SECONDS = {
    "risk": {"gaussian": 2e-3, "bandmf-rdp": 0.1, "bandmf-pld": 0.6},
    "tradeoff": {"gaussian": 2e-3, "bandmf-rdp": 1.5, "bandmf-pld": 3.0},
}
VALUE_SECONDS = {
    "risk": {"gaussian": 1e-4, "bandmf-rdp": 0.05, "bandmf-pld": 0.05, "mmcc": 0.3, "mc": 0.0},
    "tradeoff": {"gaussian": 1e-4, "bandmf-rdp": 0.1, "bandmf-pld": 1.0, "mmcc": 0.5, "mc": 0.0},
}
MMCC_PASSES = {"risk": 2, "tradeoff": 3}


def _runs(p, question: str):
    """``(step counts, patterns, methods, strict)`` of a risk question, checked."""
    if p.target_epsilon is not None:
        raise InputError(f"{question} cannot be used with --target-epsilon (one target at a time)")
    counts = params.step_counts(p)
    if counts is None:
        raise InputError(f"{question}: give --steps")
    parts, methods, strict = params.setting(p, counts)
    return counts, parts, methods, strict


def _each(p, counts, parts, methods, strict):
    """``(strategy, pattern, sensitivity, method)`` of every run and method that applies, in the order of the ε
    rows (step count, strategy, pattern, method); a method that does not apply is an error where ``strict``."""
    built = plan._Built(p, parts)
    for n, text, j, m, _ in plan.runs(p, counts, parts, methods, strict):
        s, sens = built(text, n, j)
        yield s, parts[j], sens, m


def _no_tradeoff(method: str, rates: int) -> str | None:
    """Why ``method``'s row has no trade-off curve at ``rates`` false-positive rates, or None."""
    if method == "mc":
        return MC_NO_TRADEOFF
    if method in ("bandmf-pld", "mmcc") and rates > MAX_PLD_FPR:
        return (
            f"{rates} rates, above the limit of {MAX_PLD_FPR} for the {method} row (each refines its profile "
            "around its own ε)"
        )
    return None


def _planned(p, counts, parts, methods, strict, question: str, values: int):
    """The rows of a risk question (``question``: "risk" or "tradeoff", ``values`` priors or rates a row), computed
    after their work is planned (:func:`dpcalc.commands.matrix.plan.execute`: the estimate, the cap, the bar; the runs
    spread over the processes, or the Monte Carlo samples where there are any): one list of row dicts per (run, σ),
    from ``compute(s, part, sens, m, sigma)``, yielded in order.  Returns a function of ``compute``."""
    sweep.check_rows(
        {
            "--steps": len(counts),
            "--strategy": len(p.strategies),
            "--participation": len(parts),
            "--noise-multiplier": len(p.sigma),
            "--prior/--fpr": values,
        },
        len(methods),
        per="methods",
    )
    tasks, seconds, samples, seen = [], 0.0, 0.0, set()
    for n, text, j, m, s in plan.runs(p, counts, parts, methods, strict):
        part = parts[j]
        if (n, text, j) not in seen:
            seen.add((n, text, j))
            seconds += plan.run_seconds(text, n)
        reason = _no_tradeoff(m, values) if question == "tradeoff" else None
        if reason is not None:  # rows saying why they do not apply (nothing sampled or composed), or an error
            if strict:
                raise InputError(f"--fpr: --method {m}: {reason}")
        elif m == "mc":
            sampled.mc_check(s, part)
            count = sampled.mc_count(p)
            samples += 2.0 * count * len(p.sigma)
            seconds += sampled.mc_seconds(count, part.b, len(p.sigma))
        elif m == "mmcc":
            seconds += MMCC_PASSES[question] * sampled.mmcc_seconds(s, part.q, p.sigma, 1)
        else:
            seconds += PROFILE_SECONDS[question][m] * len(p.sigma)
        if reason is None:
            seconds += VALUE_SECONDS[question][m] * values * len(p.sigma)
        tasks += [(n, text, j, m, k) for k in range(len(p.sigma))]
    if not tasks:
        raise InputError(f"--method {p.method}: applies to none of the strategies and patterns given")
    built = plan._Built(p, parts)

    def run(compute):
        def one(task):
            n, text, j, m, k = task
            s, sens = built(text, n, j)
            return compute(s, parts[j], sens, m, p.sigma[k])

        for rows in plan.execute(one, tasks, seconds, samples, rows=values):
            yield from rows

    return run


def _caption(parts, what: str, noise=None) -> str:
    """The setting of the rows (``noise``: the pair of --noise-std/--clip-norm, named when given)."""
    return (
        f"participation: {', '.join(pt.label() for pt in parts)}; noise: C·G + Z with Z ~ N(0, σ²) per entry, σ "
        f"relative to the clipping norm{noise_std.caption(noise)}; {what} from each row's privacy profile "
        "(docs/math.md §12.6)"
    )


def _grouped(result: Result, rows, columns=("strategy", "participation")) -> Result:
    """The figure's lines split by strategy and pattern too, where there are several."""
    if result.plot is not None:
        more = tuple(c for c in columns if len({r.get(c) for r in rows}) > 1)
        result.plot = dataclasses.replace(result.plot, group=more + tuple(result.plot.group or ()))
    result.derived = tuple(result.derived or ()) + (
        "sensitivity_bound",
        "sensitivity_exact",
        "dpsgd_steps",
        "sample_rate",
        "confidence",
        "samples",
    )
    return result


def matrix_risk(p, priors) -> Result:
    """``--advantage`` / ``--prior``: one row per (step count, strategy, pattern, method, σ) and prior."""
    question = "--prior" if priors is not None else "--advantage"
    counts, parts, methods, strict = _runs(p, question)
    if p.sigma is None:
        raise InputError(f"{question}: give --noise-multiplier (or leave it out with --target-advantage)")
    per = 1 if priors is None else len(priors)
    run = _planned(p, counts, parts, methods, strict, "risk", per)

    def compute(s, part, sens, m, sigma):
        row = _row(m, s, part, sens, sigma, p)
        got = risk_rows(m, row.delta_at, priors, row.cfg, row.note)
        note = _mmcc_note(row, row.note)
        return [dict(r, note=note) for r in got]

    rows: list[dict] = list(run(compute))
    what = "advantage and success: certified upper bounds (mc: with probability confidence)"
    return _grouped(risk_result(rows, "matrix", _caption(parts, what, p.noise_std), priors), rows)


def matrix_tradeoff(p, fpr) -> Result:
    """``--fpr``: one row per (step count, strategy, pattern, method, σ) and false-positive rate."""
    fpr = tradeoff.check_fpr(np.atleast_1d(np.asarray(fpr, float)))
    counts, parts, methods, strict = _runs(p, "--fpr")
    if p.sigma is None:
        raise InputError("--fpr: give --noise-multiplier")
    run = _planned(p, counts, parts, methods, strict, "tradeoff", fpr.size)

    def compute(s, part, sens, m, sigma):
        row = _row(m, s, part, sens, sigma, p)
        reason = _no_tradeoff(m, fpr.size)
        if reason is not None:
            if strict:
                raise InputError(f"--fpr: --method {m}: {reason}")
            return [
                dict(
                    tradeoff_row(m, float(a), None, None, None, None, f"does not apply: {reason}"),
                    **row.cfg,
                )
                for a in fpr
            ]
        lo, est, hi, mu = row.tpr(fpr)
        note = _mmcc_note(row, row.note)
        return [
            dict(
                tradeoff_row(m, float(a), _at(lo, i), _at(est, i), float(hi[i]), mu, note),
                **{k: v for k, v in row.cfg.items() if k not in ("confidence", "samples")},
            )
            for i, a in enumerate(fpr)
        ]

    rows: list[dict] = list(run(compute))
    result = tradeoff_result(
        rows, "matrix", "Matrix mechanism: the trade-off curve", _caption(parts, "tpr", p.noise_std), ""
    )
    return _grouped(result, rows)


def _at(v, i):
    return None if v is None or math.isnan(float(v[i])) else float(v[i])


def matrix_target(p, priors, target, fpr=None) -> Result:
    """``--target-advantage A`` (``fpr`` None) or ``--target-tpr T --fpr F``: per run and method, the least noise
    multiplier whose certified advantage (TPR at F) is at most the target — the monotone search of sgd-epsilon's
    (:func:`dpcalc.engine.pld.search.boundary`: the σ found computed within it, σ/(1 + 10⁻⁴) computed above it; the
    risk falls as σ grows, a noisier run being a post-processing of a less noisy one) — with its ε at ``--delta``.
    gaussian, bandmf-rdp and bandmf-pld rows; mmcc and mc say why not in their notes."""
    question = "--target-advantage" if fpr is None else "--target-tpr"
    counts, parts, methods, strict = _runs(p, question)
    if p.sigma is not None:
        raise InputError(f"{question}: leave out --noise-multiplier (it is what is found)")
    if p.delta is None or len(p.delta) != 1:
        raise InputError(f"{question} needs one --delta (ε of the answer is shown at it)")
    delta = float(p.delta[0])
    if len(counts) * len(p.strategies) * len(parts) > MAX_TARGET_CONFIGS:
        raise InputError(
            f"{question}: {len(counts) * len(p.strategies) * len(parts)} runs (step counts × strategies × "
            f"patterns), above the limit of {MAX_TARGET_CONFIGS}"
        )
    what = "advantage" if fpr is None else f"TPR at FPR {fpr:g}"
    lo, hi = SIGMA_RANGE
    rows: list[dict] = []
    for s, part, sens, m in _each(p, counts, parts, methods, strict):
        base_cfg = _row("gaussian", s, part, sens, 1.0, p).cfg
        if m in ("mmcc", "mc"):
            why = (
                "each step of the search would be a full MMCC computation (use --target-epsilon)"
                if m == "mmcc"
                else "a Monte Carlo bound is not calibrated to"
            )
            if strict:
                raise InputError(f"{question}: --method {m}: {why}")
            cfg = dict(base_cfg, noise_multiplier=None, delta=delta, dpsgd_steps=None)
            rows += refused_rows(m, priors, f"{question} is not offered for {m}: {why}", cfg)
            continue

        def value(sigma, m=m, s=s, part=part, sens=sens):
            row = _row(m, s, part, sens, sigma, p)
            try:
                if fpr is None:
                    return row.advantage()
                tlo, _, thi, _ = row.tpr(np.array([fpr]))
                shown = {"fpr": fpr, "tpr": float(thi[0]), "tpr_lower": _at(tlo, 0)}
                return float(thi[0]), shown
            except InputError:  # a PLD that cannot hold this σ's loss: a miss, never reported
                return math.inf, None

        # the start only steers: the σ at which the row's μ-GDP (gaussian: exact; bandmf: the central-limit μ of
        # Thm 4's DP-SGD, Dong, Roth & Su 2022, Thm 5.3) meets the target
        mu = (
            2.0 * float(special.ndtri((1.0 + target) / 2.0))
            if fpr is None
            else float(special.ndtri(target) - special.ndtri(fpr))
        )
        mu = max(mu, 1e-12)
        start = sens.value / mu if m == "gaussian" else _clt_sigma(s, part, mu)
        start = min(max(start, lo), hi)
        found = boundary(value, target, start, ok_above=True, lo=lo, hi=hi, rtol=SIGMA_RTOL, first_step=1.05)
        if found.x is None or not math.isfinite(found.x):
            cfg = dict(base_cfg, noise_multiplier=math.inf, delta=delta)
            rows += refused_rows(m, priors, f"no σ in [{lo:g}, {hi:g}] has {what} ≤ {target:g}", cfg)
            continue
        sigma = float(found.x)
        row = _row(m, s, part, sens, sigma, p)
        plain = priors is None and fpr is None  # the advantage alone: the search's own bracket at the answer
        delta_at = (lambda e, b=found.info: b) if plain else row.delta_at
        eps = _epsilon(s, part, sens, m, sigma, delta, p)
        extra = found.info if fpr is not None else {}
        note = (
            f"the least noise multiplier with {what} ≤ {target:g} (σ/(1 + {SIGMA_RTOL:g}) computed and above it); "
            f"epsilon: its ε at δ = {delta:g}; {row.note}"
        )
        rows += risk_rows(m, delta_at, priors, dict(row.cfg, delta=delta, epsilon=eps, **extra), note)
    caption = _caption(parts, f"the least σ with {what} ≤ {target:g}")
    return _grouped(risk_result(rows, "matrix", caption, priors, headline="noise_multiplier"), rows)


def _clt_sigma(s, part, mu: float) -> float:
    """The σ of a bandmf row whose central-limit μ (:func:`dpcalc.engine.tradeoff.clt_mu` of Thm 4's DP-SGD: rate q,
    ⌈n/b⌉ steps, σ / the largest column norm) is ``mu``, by bisection in log σ (μ falls as σ grows): where a search
    starts, nothing more."""
    steps, norm = acc.bandmf_run(s, part)
    lo, hi = math.log(SIGMA_RANGE[0]), math.log(SIGMA_RANGE[1])
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if float(tradeoff.clt_mu(part.q, math.exp(mid) / norm, steps)) > mu:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def _epsilon(s, part, sens, method, sigma, delta, p) -> float:
    """ε at δ of the row at σ, as the ε rows compute it."""
    out: dict[str, list] = {c: [] for c in base.COLUMNS}
    g = {"sigma": np.array([sigma]), "delta": np.array([delta])}
    base._rows(out, s, part, sens, method, g, None, p, strict=True)
    return float(out["epsilon"][0])
