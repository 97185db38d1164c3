"""``--tuning-runs KIND:mean=M[,shape=η]`` of compose and sgd-epsilon (pure Python: no numpy here): the
configured computation is run a random number K of times and the best output released (Papernot & Steinke
2022; the math is :mod:`dpcalc.engine.composition.tuning`, docs/math.md §2.10)."""

from __future__ import annotations

import math

import click

#: The kinds (as :data:`dpcalc.engine.composition.tuning.KINDS`, kept here so that --help needs no numpy).
KINDS = ("geometric", "poisson", "logarithmic", "negative-binomial")

HELP = (
    "Private hyperparameter tuning: the whole computation is run K times, K random with the given mean, "
    "and the best output released; KIND:mean=M with KIND geometric, poisson, logarithmic (mean > 1; "
    "poisson mean >= 1), or negative-binomial:mean=M,shape=η (η > −1, η ≠ 0).  Papernot & Steinke 2022 "
    "(Thm 2, Thm 6): an RDP bound, for --method rdp only."
)


def parse_tuning(text: str):
    """``KIND:mean=M[,shape=η]`` -> :class:`~dpcalc.engine.composition.tuning.TuningRuns`; ValueError
    with a one-line reason otherwise."""
    kind, sep, rest = text.strip().partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise ValueError(f"unknown KIND {kind!r}: expected one of {', '.join(KINDS)}")
    fields: dict[str, float] = {}
    for item in rest.split(",") if sep and rest.strip() else []:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise ValueError(f"expected key=value, got {item.strip()!r}")
        if key not in ("mean", "shape"):
            raise ValueError(f"unknown key {key!r} (expected mean, and shape for negative-binomial)")
        if key in fields:
            raise ValueError(f"{key} given twice")
        try:
            fields[key] = float(value)
        except ValueError:
            raise ValueError(f"{key}: {value.strip()!r} is not a number") from None
        if not math.isfinite(fields[key]):
            raise ValueError(f"{key} must be finite, got {value.strip()}")
    if "mean" not in fields:
        raise ValueError(f"{kind} needs mean=M (e.g. {kind}:mean=10)")
    mean = fields["mean"]
    if kind == "negative-binomial":
        if "shape" not in fields:
            raise ValueError(
                "negative-binomial needs shape=η > -1, η != 0 (geometric is η = 1, logarithmic η → 0)"
            )
        if not fields["shape"] > -1 or fields["shape"] == 0:
            raise ValueError(
                f"shape must be > -1 and != 0 (for η = 0 use logarithmic), got {fields['shape']:g}"
            )
    elif "shape" in fields:
        raise ValueError(f"{kind} has no shape (only negative-binomial takes shape=η)")
    if kind == "poisson":
        if not mean >= 1:
            raise ValueError(f"poisson mean must be >= 1, got {mean:g}")
    elif not mean > 1:
        raise ValueError(f"{kind} mean must be > 1 (K >= 1, and mean 1 is one run: leave out --tuning-runs)")
    # lazy: the engine (numpy) loads only when a --tuning-runs value is converted, not for --help or completion
    from dpcalc.engine.composition.tuning import TuningRuns, tnb_gamma

    runs = TuningRuns(kind, mean, fields.get("shape"))
    if kind == "negative-binomial" and runs.shape < 0:
        tnb_gamma(mean, runs.shape)  # a mean out of reach for a shape near −1 is refused here, not mid-run
    return runs


class TuningType(click.ParamType):
    """The value of ``--tuning-runs``; a bad one is one error line naming the option (exit 2)."""

    name = "tuning"

    def get_metavar(self, param, ctx=None):  # click >= 8.2 passes ctx
        return "KIND:mean=M[,shape=η]"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        try:
            return parse_tuning(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def tuning_option(f):
    """The ``--tuning-runs`` option (parameter ``tuning``)."""
    return click.option("--tuning-runs", "tuning", type=TuningType(), default=None, help=HELP)(f)
