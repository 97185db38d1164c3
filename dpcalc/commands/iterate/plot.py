"""``dpcalc iterate --plot``: the figure of the rows (:class:`~dpcalc.result.PlotSpec`), against T if swept."""

from __future__ import annotations

from dpcalc.result import PlotSpec

_SYMBOL = {"sigma": "σ", "lipschitz": "L", "lr": "η", "steps": "T", "diameter": "D", "initial_distance": "R"}
# --plot: words for titles and subtitles, axis labels with units
_WORD = {"delta": "δ", "epsilon": "ε", "alpha": "α", "rdp": "Rényi bound", **_SYMBOL}
_AXIS = {
    "steps": "steps T (= n, one pass)",
    "delta": "δ (probability)",
    "epsilon": "ε (nats)",
    "alpha": "Rényi order α",
    "rdp": "Rényi DP ε(α) (nats)",
}


def _plot(params, query, target, alpha, answer, both, rows):
    """--plot: against T if swept, else the target, else another swept parameter; the other swept ones
    split the lines; nothing swept: the methods side by side (a dot chart)."""
    if rows < 2:
        return None
    key = query or "alpha"
    axes = {"steps": params["steps"], key: target if query is not None else alpha, **params}
    if both:
        axes["alpha"] = alpha
    swept = [k for k, v in axes.items() if len(v) > 1]
    x = swept[0] if swept else key
    return PlotSpec(
        x=x,
        y=answer,
        series="method",
        group=tuple(swept[1:]),
        logx=x in ("steps", "delta"),
        logy=answer != "epsilon",
        autolog=True,
        xlabel=_AXIS.get(x, ""),
        ylabel=_AXIS["rdp" if answer == "rdp" else answer],
        title=f"Hidden iterates: {_WORD[answer]} " + (f"by {_WORD[x]}" if swept else "by method"),
        subtitle=", ".join(f"{_WORD[k]} = {v[0]:g}" for k, v in axes.items() if len(v) == 1)
        + "; projected noisy SGD, one pass, replace-one",
    )
