"""The options that describe a DP-SGD run, declared once (flags, value types, order) for the commands
that take a run: ``sgd-epsilon`` (the run it accounts) and ``audit`` (the run whose ε is the claim); ``matrix``
takes the pair ``--noise-std``/``--clip-norm`` from here too.

Each command words the help of the options itself (what the run is for there); :func:`run_options` adds
those it words, in the order of :data:`RUN_OPTIONS`, none with a default (left out unless given).  The
command receives them as ``sigma``, ``noise_std``, ``clip_norm``, ``sample_rate``, ``batch_size``,
``dataset_size``, ``max_batch_size``, ``steps`` and ``epochs``; :func:`noise_multiplier` turns ``--noise-std S
--clip-norm C`` into the noise multiplier σ = S/C.  Pure click: ``--help`` imports nothing more.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

import click

from dpcalc.cli.common import single
from dpcalc.cli.types import Grid
from dpcalc.lazy import lazy_module

fractions = lazy_module("fractions")  # only for --noise-std with --clip-norm

#: option -> (its declarations, its value type), in the order the options are listed.
RUN_OPTIONS = {
    "--noise-multiplier": (("--noise-multiplier", "--sigma", "sigma"), Grid(lo=0)),
    "--noise-std": (("--noise-std", "noise_std"), Grid(lo=0)),
    "--clip-norm": (("--clip-norm", "clip_norm"), Grid(lo=0)),
    "--sample-rate": (("--sample-rate",), Grid(lo=0, hi=1)),
    "--batch-size": (("--batch-size",), Grid(lo=1, lo_open=False, integer=True)),
    "--dataset-size": (("--dataset-size",), Grid(lo=1, lo_open=False, integer=True)),
    "--max-batch-size": (("--max-batch-size",), Grid(lo=1, lo_open=False, integer=True)),
    "--steps": (("--steps",), Grid(lo=1, lo_open=False, integer=True)),
    "--epochs": (("--epochs",), Grid(lo=0)),
}

#: What S and C are, for each command's help of --noise-std and --clip-norm.
NOISE_STD_WORDS = (
    "the standard deviation S of the Gaussian noise added to the sum of the clipped per-example gradients"
)
CLIP_NORM_WORDS = "the clipping norm C of each per-example gradient (> 0; one value)"


def run_options(help: Mapping[str, str], metavar: Mapping[str, str] | None = None):
    """A decorator adding the options of :data:`RUN_OPTIONS` that ``help`` words (option -> help), in
    that order; ``metavar``: option -> its metavar, where the command shows one."""
    unknown = set(help) - set(RUN_OPTIONS)
    if unknown:
        raise ValueError(f"not a DP-SGD run option: {', '.join(sorted(unknown))}")
    metavar = metavar or {}

    def decorate(func):
        for name in reversed([n for n in RUN_OPTIONS if n in help]):
            decls, kind = RUN_OPTIONS[name]
            option = click.option(*decls, type=kind, default=None, metavar=metavar.get(name), help=help[name])
            func = option(func)
        return func

    return decorate


def noise_multiplier(sigma, noise_std, clip_norm, *, solved=None, refused=None, why=None, one=False):
    """``(σ values, ((S, ...), C) or None)``: ``--noise-multiplier`` as given, or ``--noise-std S --clip-norm C``
    turned into σ = S/C (the pair returned beside it, for the caption).  ``--noise-std`` may be a sweep (unless
    ``one``: a single value), ``--clip-norm`` is one value.

    σ is S/C rounded down to a float where the quotient is not one: less noise, never a smaller ε.  A usage
    error (exit 2) names the option at fault: both forms given; the pair with an option of ``refused`` (option
    -> its value; given: not None, not False; ``why``: the reason the error gives); the pair while ``solved``
    (the target option, e.g. ``--target-epsilon``) solves for the noise, whose answer is a noise multiplier;
    one of the pair without the other; a list for --clip-norm; a quotient that overflows or underflows."""
    if noise_std is None and clip_norm is None:
        return sigma, None
    named = [o for o, v in (("--noise-std", noise_std), ("--clip-norm", clip_norm)) if v is not None]
    given = "/".join(named)
    if sigma is not None:
        raise click.UsageError(
            f"give --noise-multiplier or --noise-std with --clip-norm, not both (--noise-multiplier is noise std / "
            f"clip norm; {given} given beside it)"
        )
    for option, value in (refused or {}).items():
        if value is not None and value is not False:
            raise click.UsageError(f"{given} cannot be used with {option}" + (f" ({why})" if why else ""))
    if solved is not None:
        raise click.UsageError(
            f"{given}: {solved} solves for the noise here, and its answer is a noise multiplier σ = noise std / "
            f"clip norm (the noise std is σ times the clip norm): leave out {' and '.join(named)}"
        )
    if clip_norm is None:
        raise click.UsageError(
            "--noise-std needs --clip-norm (the noise multiplier is noise std / clip norm)"
        )
    if noise_std is None:
        raise click.UsageError(
            "--clip-norm needs --noise-std (the noise multiplier is noise std / clip norm)"
        )
    c = single(clip_norm, "--clip-norm")
    stds = (single(noise_std, "--noise-std"),) if one else tuple(noise_std)
    return [_ratio_down(s, c) for s in stds], (stds, c)


def _ratio_down(s: float, c: float) -> float:
    """S/C as a float at or below the exact quotient (the float division rounds to nearest: one step down where
    it rounded up); a quotient beyond the floats, or one that underflows to 0, is refused."""
    q = s / c
    if math.isinf(q):
        raise click.BadParameter(
            f"{s!r} / {c!r} (noise std / clip norm) is beyond the largest float {sys.float_info.max:g}",
            param_hint="'--noise-std'",
        )
    if fractions.Fraction(q) > fractions.Fraction(s) / fractions.Fraction(c):
        q = math.nextafter(q, 0.0)
    if q == 0:
        raise click.BadParameter(
            f"{s!r} / {c!r} (noise std / clip norm) underflows to 0", param_hint="'--noise-std'"
        )
    return q
