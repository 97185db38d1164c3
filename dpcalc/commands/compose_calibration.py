"""``dpcalc compose --epsilon E --delta D`` with specs that leave sigma out: the smallest σ making the
composition (ε, δ)-DP (the rest of the command is :mod:`dpcalc.commands.compose`).

Plain Gaussians share one σ found from their exact profile (Balle & Wang 2018; docs/math.md §2.6); any
other list, or ``--method pld``, gets the σ of the spec(s) that left it out from the certified upper end
of the PLD bracket (docs/math.md §7, :func:`dpcalc.engine.pld.calibration.calibrate_compose_pld`).
numpy loads only when it runs.
"""

from __future__ import annotations

from dpcalc.commands.schema import conform
from dpcalc.errors import InputError
from dpcalc.result import PlotSpec, Result


def calibrate(texts, epsilon, delta, method, eps_error=None) -> Result:
    """The smallest σ making a composition (ε, δ)-DP: a common σ of plain Gaussians by their exact
    profile (docs/math.md §2.6), or with ``method`` pld (or specs other than plain Gaussians) the σ of
    the spec(s) that left it out, by the certified PLD upper end (docs/math.md §7)."""
    import math

    import numpy as np

    from dpcalc.engine.grid import product
    from dpcalc.engine.mechanisms import gaussian_exact as gaussian
    from dpcalc.spec import expand_sources, parse_mechanisms

    specs = parse_mechanisms(expand_sources(texts), omit=("sigma",))
    plain = all(s.kind == "gaussian" and s.params["sigma"] is None for s in specs)
    if method == "pld" or (not plain and method in ("best", "all")):
        return _calibrate_pld(specs, epsilon, delta, eps_error)
    for s in specs:
        if s.kind != "gaussian":
            raise InputError(
                f"mechanism {s.text!r}: --epsilon with --delta calibrates σ of gaussian specs only "
                "(give one of them to compose)"
            )
        if s.params["sigma"] is not None:
            raise InputError(
                f"mechanism {s.text!r}: --epsilon with --delta solves for sigma: leave sigma out "
                "(or give only one of --epsilon/--delta)"
            )
    if method not in ("best", "all", "exact"):
        raise InputError("Invalid value for '--method': calibration uses exact or pld (or best, all)")
    if 0 in delta:
        raise InputError(
            "Invalid value for '--delta': 0: no σ makes a Gaussian (ε, 0)-DP (its privacy loss is unbounded); "
            "give δ > 0 to calibrate σ"
        )
    sens = math.sqrt(math.fsum(s.count * s.params["sensitivity"] ** 2 for s in specs))
    g = product(epsilon=np.asarray(epsilon, float), delta=np.asarray(delta, float))
    sigma = np.atleast_1d(gaussian.sigma_gaussian(g["epsilon"], g["delta"], sensitivity=sens))
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
            cols["sigma"].append(
                float(np.nextafter(math.sqrt(2 * math.log(1.25 / d)) * sens / e, np.inf)) if ok else None
            )
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


def _calibrate_pld(specs, epsilon, delta, eps_error) -> Result:
    """σ of the spec(s) that left it out, smallest (within a factor 1.0001) with the composition's
    certified PLD upper ε(δ) at or below the target, one row per (ε, δ)."""
    import dataclasses

    import numpy as np

    from dpcalc.engine.grid import product
    from dpcalc.engine.pld.calibration import calibrate_compose_pld

    free = [s for s in specs if "sigma" in s.params and s.params["sigma"] is None]
    if not free:
        raise InputError(
            "--epsilon with --delta solves for sigma: leave sigma out of the spec to calibrate "
            "(e.g. subsampled-gaussian:q=0.01,count=1000), or give only one of --epsilon/--delta"
        )
    if 0 in delta:
        raise InputError(
            "Invalid value for '--delta': 0: no σ makes Gaussian noise (ε, 0)-DP (its privacy loss is "
            "unbounded); give δ > 0 to calibrate σ"
        )

    def fill(sigma):
        return [
            dataclasses.replace(s, params={**s.params, "sigma": sigma})
            if s.params.get("sigma", 0) is None
            else s
            for s in specs
        ]

    g = product(epsilon=np.asarray(epsilon, float), delta=np.asarray(delta, float))
    cols: dict[str, list] = {k: [] for k in ("method", "epsilon", "delta", "sigma", "epsilon_lower")}
    cols.update(epsilon_estimate=[], note=[])
    solved = " and ".join(repr(s.text) for s in free)
    for e, d in zip(g["epsilon"], g["delta"]):
        sigma, lower, est, upper = calibrate_compose_pld(fill, float(d), float(e), eps_error=eps_error)
        cols["method"].append("pld")
        cols["epsilon"].append(float(e))
        cols["delta"].append(float(d))
        found = bool(np.isfinite(sigma))
        cols["sigma"].append(float(sigma) if found else float("inf"))
        cols["epsilon_lower"].append(float(lower) if found else None)
        cols["epsilon_estimate"].append(float(est) if found else None)
        cols["note"].append(
            f"sigma of {solved}: certified PLD epsilon {upper:.6g} <= target"
            if found
            else "no sigma up to 1e12"
        )
    return Result(
        conform(cols, "compose"),
        headline="sigma",
        title="PLD calibration",
        caption="sigma: the smallest noise (within a factor 1.0001) of the spec(s) that left sigma out, so that "
        "the certified PLD upper end of ε at δ is within --epsilon; [epsilon_lower, certified upper end] "
        "bracket the ε reached there",
    )
