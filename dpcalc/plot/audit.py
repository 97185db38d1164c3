"""``dpcalc audit --plot``: an audit's (FPR, TPR) points with their Clopper–Pearson boxes over the trade-off
curves of the claim (docs/math.md §11.6); :func:`dpcalc.plot.draw.draw` calls :func:`draw_points` for a
:class:`~dpcalc.result.PlotSpec` with ``points``, which :mod:`dpcalc.commands.audit.plot` computes.

It imports matplotlib: :func:`dpcalc.plot.draw.draw` imports it only for such a spec, once it has found
matplotlib installed.  Both axes are logarithmic from 10⁻⁶ (:data:`FLOOR`) to 1.  A rate below the floor (no false positive at
all) is drawn at the floor, with a hollow marker, and the box reaches the axis: it is never left out.
"""

from __future__ import annotations

from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from dpcalc.result import PlotSpec

FLOOR = 1e-6
_CURVE_STYLE = {
    "claim": dict(color="C3", linestyle="-", linewidth=2.0),
    "profile": dict(color="C0", linestyle="-", linewidth=1.6),
    "proved": dict(color="C2", linestyle="--", linewidth=1.3),
}

_POINT_COLOURS = ("C1", "C4", "C5", "C6", "C8", "C9", "C7")  # not the curves' C0, C2, C3
_MORE_DASHES = (":", "-.", (0, (5, 1, 1, 1)))


def draw_points(ax, spec: PlotSpec) -> None:
    """Curves first, then one box and one marker per point, the diagonal of guessing, labelled axes."""
    low = min([FLOOR] + [v for p in spec.points for v in (p[3], p[5]) if v > 0])
    low = max(low, 1e-12)
    seen: dict[str, int] = {}
    for label, xs, ys, kind in spec.curves:
        pts = [(x, y) for x, y in zip(xs, ys) if x > 0 and y > 0]
        if pts:
            px, py = zip(*pts)
            style = dict(_CURVE_STYLE.get(kind, _CURVE_STYLE["claim"]))
            k = seen[kind] = seen.get(kind, -1) + 1  # a second curve of a kind (another δ): another dash
            if k:
                style["linestyle"] = _MORE_DASHES[(k - 1) % len(_MORE_DASHES)]
                style["linewidth"] = max(1.0, style["linewidth"] - 0.3 * k)
            ax.plot(px, py, label=label, **style)
    for i, (label, x, y, xlo, xhi, ylo, yhi) in enumerate(spec.points):
        colour = _POINT_COLOURS[i % len(_POINT_COLOURS)]
        x0, y0 = max(xlo, low), max(ylo, low)
        ax.add_patch(
            Rectangle(
                (x0, y0),
                max(xhi, x0) - x0,
                max(yhi, y0) - y0,
                facecolor=to_rgba(colour, 0.3),
                edgecolor=colour,
                linewidth=1.4,
                zorder=4,
                label=(label + ": confidence box") if label else None,
            )
        )
        clipped = x < low or y < low
        ax.plot(
            [max(x, low)],
            [max(y, low)],
            marker="o",
            markersize=5,
            color=colour,
            markerfacecolor="white" if clipped else colour,
            linestyle="none",
            zorder=5,
        )
    ax.plot([low, 1.0], [low, 1.0], color="0.5", linestyle="-.", linewidth=1.0, label=spec.diagonal)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, 1.0)
    ax.set_ylim(low, 1.3)
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    ax.legend(fontsize=7.5, loc="lower right")
