"""``dpcalc sgd-epsilon --rdp-curve``: the Rényi curve of a DP-SGD run, the curve the rdp accountant
converts (the machinery of every command's curve is :mod:`dpcalc.commands.curve`)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence

import numpy as np

from dpcalc.commands import noise_std
from dpcalc.commands.curve import FOR_CONVERT, check_curve_rows, curve_result, orders, per_chunk
from dpcalc.commands.sgd.group import refuse_group
from dpcalc.commands.sgd.question import ask
from dpcalc.engine.dpsgd import accounting
from dpcalc.engine.grid import product
from dpcalc.engine.mechanisms import sgm
from dpcalc.engine.samplers import catalogue
from dpcalc.errors import InputError


def sgd_curve(params, alphas: Sequence[float] | None = None, *, stream: bool = False):
    """The Rényi curve of DP-SGD (``params``: :class:`dpcalc.commands.sgd.params.SgdEpsilonParams`; its
    ``delta``, ``conversion`` and ``eps_error`` are not used): T times the per-step curve of the
    subsampled Gaussian (:func:`dpcalc.engine.dpsgd.accounting.rdp_per_step`, Poisson: exact, MTZ 2019;
    fixed-size: the WBK 2019 bound at σ/2), exactly the curve the rdp accountant converts.

    ``convert --curve`` of it gives the rdp accountant's ε with ``--conversion balle`` or ``mironov``
    exactly; with ``optimal``, the accountant evaluates the exact conversion on a window of orders
    around the best order of its closed form (``eps_of_curve``) while ``convert`` evaluates it on every
    order, so ``convert`` is equal or (when the window misses the best order) lower.

    Returns a :class:`~dpcalc.result.Result`, or with ``stream`` a :class:`~dpcalc.result.Stream` of
    chunks (as every command's curve)."""
    p = params
    refuse_group(p, "--rdp-curve")
    if p.target_epsilon is not None:
        raise InputError(
            "--target-epsilon cannot be used with --rdp-curve: the curve is of a given noise multiplier "
            "and length (give --noise-multiplier and --steps or --epochs)"
        )
    if p.accountant not in ("rdp", "all"):
        raise InputError(
            f"--method {p.accountant} has no Rényi curve: --rdp-curve prints the rdp accountant's "
            "(the exact Rényi DP of the subsampled Gaussian)"
        )
    sampler = catalogue.sampler(p.sampling)
    if not sampler.covers("rdp"):
        raise InputError(
            f"--rdp-curve: --sampling {p.sampling} is bounded without a Rényi curve here ({sampler.no_curve}); "
            "use --sampling poisson or fixed-size for a curve"
        )
    if p.sigma is None:
        raise InputError("missing option --noise-multiplier")
    if p.steps is None and p.epochs is None:
        raise InputError("give --steps or --epochs")
    p = dataclasses.replace(p, accountant="rdp")
    p = ask(p).params  # the command's own checks of the inputs (and their messages)
    accounting.check_setting(p.sampling, p.neighbors)
    a = orders(alphas)
    sizes = {
        "--sample-rate": p.sample_rate,
        "--batch-size": p.batch_size,
        "--dataset-size": p.dataset_size,
        "--max-batch-size": p.max_batch_size,
        "--noise-multiplier": p.sigma,
        "--steps": p.steps,
        "--epochs": p.epochs,
    }
    check_curve_rows({k: len(v) for k, v in sizes.items() if v is not None}, a.size)
    axes = {}
    if p.sample_rate is not None:
        axes["q"] = np.asarray(p.sample_rate, float)
        if p.dataset_size is not None:
            axes["n"] = np.asarray(p.dataset_size, float)
    else:
        axes["b"] = np.asarray(p.batch_size, float)
        axes["n"] = np.asarray(p.dataset_size, float)
    if p.max_batch_size is not None:
        axes["bmax"] = np.asarray(p.max_batch_size, float)
    axes["sigma"] = np.asarray(p.sigma, float)
    if p.steps is not None:
        axes["steps"] = np.asarray(p.steps, float)
    else:
        axes["epochs"] = np.asarray(p.epochs, float)
    g = product(**axes)
    if "q" not in g:
        g["q"] = g["b"] / g["n"]
    if "epochs" in g:  # as the command counts them: ceil(E/q) = ceil(E·N/B), or whole epochs of floor(N/B)
        g["steps"] = sampler.steps_of_epochs(g["epochs"], g["q"], g.get("n"), g.get("b"))
    n = g["q"].size
    # as the command does: a curve of one chunk may evaluate small arrays without scipy (a single query
    # gives the command's digits); several chunks use scipy throughout, so that no value depends on
    # where a chunk ends
    light = n <= per_chunk(a)

    def values(method, lo, hi):
        part = {k: v[lo:hi] for k, v in g.items()}
        with sgm.light_start() if light else contextlib.nullcontext():
            total = accounting.rdp_total(
                part["q"],
                part["sigma"],
                part["steps"],
                a,
                sampling=p.sampling,
                neighbors=p.neighbors,
                dataset_size=part.get("n"),
                max_batch_size=part.get("bmax"),
            )
        return {"rdp": total}

    configs = {
        "sampling": [p.sampling] * n,
        "neighbors": [p.neighbors] * n,
        "sample_rate": g["q"].tolist(),
        "batch_size": g["b"].astype(int).tolist() if "b" in g else [None] * n,
        "dataset_size": g["n"].astype(int).tolist() if "n" in g else [None] * n,
        "max_batch_size": g["bmax"].astype(int).tolist() if "bmax" in g else [None] * n,
        "noise_multiplier": g["sigma"].tolist(),
        "steps": [int(t) for t in g["steps"]],
        "epochs": g["epochs"].tolist() if "epochs" in g else [None] * n,
    }
    swept = [c for c, opt in _SGD_COLUMNS.items() if sizes[opt] is not None and len(sizes[opt]) > 1]

    relation = sampler.relation_caption(p.neighbors)
    caption = (
        f"sampling: {p.sampling}; neighbours: {p.neighbors} ({relation}){noise_std.caption(p.noise_std)}; rdp: "
        f"{sampler.curve_words}, the rdp accountant's curve; {FOR_CONVERT}"
    )
    fixed = [
        f"{s} = {sizes[opt][0]:g}" for s, opt in _SGD_SYMBOLS.items() if sizes[opt] and len(sizes[opt]) == 1
    ]
    return curve_result(
        "sgd-epsilon",
        configs,
        [""],
        values,
        a,
        caption,
        stream=stream,
        swept=swept,
        subtitle=", ".join(fixed) + f"; sampling: {p.sampling}, neighbours: {p.neighbors}",
    )


_SGD_COLUMNS = {
    "sample_rate": "--sample-rate",
    "batch_size": "--batch-size",
    "dataset_size": "--dataset-size",
    "max_batch_size": "--max-batch-size",
    "noise_multiplier": "--noise-multiplier",
    "steps": "--steps",
    "epochs": "--epochs",
}
_SGD_SYMBOLS = {
    "q": "--sample-rate",
    "B": "--batch-size",
    "N": "--dataset-size",
    "B_max": "--max-batch-size",
    "σ": "--noise-multiplier",
    "T": "--steps",
    "epochs": "--epochs",
}
