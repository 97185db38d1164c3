"""``dpcalc sgd-epsilon --plot``: the figure of the rows (:class:`~dpcalc.result.PlotSpec`), the headline by the
first swept input, one line per accountant."""

from __future__ import annotations

from dpcalc.result import PlotSpec

_PLOT_SYMBOL = {
    "group_size": "K",
    "epochs": "epochs",
    "steps": "T",
    "target_epsilon": "target ε",
    "noise_multiplier": "σ",
    "sample_rate": "q",
    "batch_size": "B",
    "dataset_size": "N",
    "max_batch_size": "B_max",
    "delta": "δ",
    "epsilon": "ε",
}


def plot_spec(question, out):
    """--plot: the answer to ``question`` (:class:`~dpcalc.commands.sgd.question.Question`) by the first swept
    input, one line per accountant (a dot per accountant when nothing is swept); rows whose ``valid`` is false
    are drawn as "not a bound"."""
    p, headline = question.params, question.answer
    inputs = {
        "group_size": p.group_size if max(p.group_size) > 1 else None,
        "epochs": p.epochs,
        "steps": p.steps,
        "target_epsilon": p.target_epsilon,
        "noise_multiplier": p.sigma,
        "sample_rate": p.sample_rate,
        "batch_size": p.batch_size,
        "dataset_size": p.dataset_size,
        "max_batch_size": p.max_batch_size,
        "delta": p.delta,
        "epsilon": p.epsilon,
    }
    inputs = {k: v for k, v in inputs.items() if v is not None and k != headline}
    swept = [k for k, v in inputs.items() if len(v) > 1 and k in out]
    if len(out["method"]) < 2:
        return None
    x = swept[0] if swept else ("epsilon" if question.at_eps else "delta")
    fixed = ", ".join(f"{_PLOT_SYMBOL[k]} = {v[0]:g}" for k, v in inputs.items() if len(v) == 1)
    what, ylabel = _PLOT_HEADLINE[headline]
    return PlotSpec(
        x=x,
        y=headline,
        series="method",
        group=tuple(swept[1:]),
        valid="valid",
        band=(f"{headline}_lower", headline)
        if headline in ("epsilon", "delta") and f"{headline}_lower" in out
        else None,
        logx=x == "delta",
        autolog=True,
        xlabel={
            "steps": "steps T",
            "epochs": "epochs",
            "target_epsilon": "target ε (nats)",
            "group_size": "examples of one person K",
            "epsilon": "ε (nats)",
        }.get(x, ""),
        ylabel=ylabel,
        title=f"DP-SGD: {what} " + (f"by {_PLOT_SYMBOL[x]}" if swept else "by accountant"),
        subtitle=(f"{fixed}; " if fixed else "")
        + f"sampling: {p.sampling}, neighbours: {p.neighbors}"
        + (f", conversion: {p.conversion}" if "rdp" in out["accountant"] else ""),
    )


#: --plot: the headline of each question (ε, or what --target-epsilon solves for) -> (title words,
#: y-axis label); every headline :func:`dpcalc.commands.sgd.epsilon.sgd_epsilon_stream` can
#: choose is here.
_PLOT_HEADLINE = {
    "epsilon": ("ε", "ε (nats)"),
    "delta": ("δ", "δ (probability)"),
    "noise_multiplier": ("smallest noise multiplier", "noise multiplier σ (noise std / clipping norm)"),
    "steps": ("largest number of steps", "largest number of steps T"),
    "sample_rate": ("largest sample rate", "largest sample rate q"),
    "batch_size": ("largest batch size", "largest batch size B"),
}
