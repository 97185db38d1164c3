"""``--plot FILE``: draw a result's curve with matplotlib (the optional ``plot`` extra).

matplotlib is imported only here, only when ``--plot`` is given.  The picture is written to a
temporary file beside FILE and renamed into place, so an error never leaves half an image.
"""

from __future__ import annotations

import math
import os
import tempfile

import click

from dpcalc.result import Result

INSTALL_HINT = "pip install 'dpcalc[plot]'"


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise click.UsageError(f"--plot needs matplotlib, which is not installed: {INSTALL_HINT}") from None
    return plt


def draw(result: Result, path: str) -> None:
    """Draw ``result`` (as its :class:`~dpcalc.result.PlotSpec` says) to ``path`` atomically."""
    spec = result.plot
    if spec is None:
        raise click.UsageError("--plot: this result is a single point, not a curve or a comparison")
    plt = _matplotlib()
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    try:
        xs = result.column(spec.x)
        ys = result.column(spec.y)
        groups = result.column(spec.series) if spec.series else [None] * len(xs)
        order: list = []
        for g in groups:
            if g not in order:
                order.append(g)
        for g in order:
            pts = [(x, y) for x, y, gg in zip(xs, ys, groups) if gg == g and _finite(x) and _finite(y)]
            if not pts:
                continue
            pts.sort()
            px, py = zip(*pts)
            marker = "o" if len(pts) < 30 else None
            ax.plot(px, py, marker=marker, markersize=3, label=str(g) if g is not None else None)
        if spec.logx:
            ax.set_xscale("log")
        if spec.logy:
            ax.set_yscale("log")
        ax.set_xlabel(spec.xlabel or spec.x)
        ax.set_ylabel(spec.ylabel or spec.y)
        title = spec.title or result.title
        if title:
            ax.set_title(title, fontsize=10)
        if spec.series and len(order) > 1:
            ax.legend(title=spec.series, fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        _save_atomically(fig, path)
    finally:
        plt.close(fig)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _save_atomically(fig, path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    ext = path.rsplit(".", 1)[-1].lower()
    fd, tmp = tempfile.mkstemp(prefix=".dpcalc-plot-", suffix="." + ext, dir=directory)
    os.close(fd)
    try:
        fig.savefig(tmp, format=ext)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
