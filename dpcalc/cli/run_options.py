"""The options that describe a DP-SGD run, declared once (flags, value types, order) for the commands
that take a run: ``sgd-epsilon`` (the run it accounts) and ``audit`` (the run whose ε is the claim).

Each command words the help of the options itself (what the run is for there); :func:`run_options` adds
those it words, in the order of :data:`RUN_OPTIONS`, none with a default (left out unless given).  The
command receives them as ``sigma``, ``sample_rate``, ``batch_size``, ``dataset_size``,
``max_batch_size``, ``steps`` and ``epochs``.  Pure click: ``--help`` imports nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping

import click

from dpcalc.cli.types import Grid

#: option -> (its declarations, its value type), in the order the options are listed.
RUN_OPTIONS = {
    "--noise-multiplier": (("--noise-multiplier", "--sigma", "sigma"), Grid(lo=0)),
    "--sample-rate": (("--sample-rate",), Grid(lo=0, hi=1)),
    "--batch-size": (("--batch-size",), Grid(lo=1, lo_open=False, integer=True)),
    "--dataset-size": (("--dataset-size",), Grid(lo=1, lo_open=False, integer=True)),
    "--max-batch-size": (("--max-batch-size",), Grid(lo=1, lo_open=False, integer=True)),
    "--steps": (("--steps",), Grid(lo=1, lo_open=False, integer=True)),
    "--epochs": (("--epochs",), Grid(lo=0)),
}


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
