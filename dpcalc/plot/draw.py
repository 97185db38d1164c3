"""``--plot FILE``: draw a result with matplotlib (the optional ``plot`` extra).

matplotlib is imported only here, only when ``--plot`` is given; without it the command exits 2 with
the install command.  A :class:`~dpcalc.result.PlotSpec` says which columns to draw:

* a **line chart** of ``y`` (and the ``y_extra`` columns) against ``x``, one line per ``series``
  value (and per value of the ``group`` columns), with an optional shaded ``band``, vertical
  reference lines at the values of the ``xref`` column and horizontal ``hlines``;
* a **dot chart** when every line has a single point (a comparison of methods at one setting):
  one labelled dot per method, and a "no number" entry for methods that do not apply.

Rows without a finite number are left out (never drawn as 0).  Axes are labelled with the quantity
and its unit.  With ``autolog``, x is drawn on a log scale when its positive values span a ratio
above 50 and are spread geometrically (1, 10, 100 rather than 1, 2, 3), and y when its values span
a ratio above 50 against a log x, or above 10⁴ against a linear x.  The picture is written to a temporary file beside FILE and renamed into place, so
an error never leaves half an image; PNG, SVG or PDF by the file's extension, with no timestamps in
the file, so regenerating an unchanged picture gives the same bytes.
"""

from __future__ import annotations

import math
import os
import tempfile
import textwrap
from dataclasses import dataclass, field

import click

from dpcalc.render import table_cell
from dpcalc.result import LOWER_BOUND_COLUMNS, PlotSpec, Result

INSTALL_HINT = "pip install 'dpcalc[plot]'"

#: Axis labels (quantity and unit) of the shared column names, where a PlotSpec gives none.
AXIS_LABELS = {
    "alpha": "Rényi order α",
    "best_alpha": "best Rényi order α",
    "rdp": "Rényi DP ε(α) (nats)",
    "rdp_lower": "Rényi DP lower bound (nats)",
    "rdp_certifying": "largest certifying Rényi DP ζ (nats)",
    "epsilon": "ε (nats)",
    "epsilon_estimate": "ε estimate (nats)",
    "epsilon_lower": "ε lower bound (nats)",
    "epsilon_rdp": "ε (nats)",
    "target_epsilon": "target ε (nats)",
    "delta": "δ (probability)",
    "steps": "steps T",
    "epochs": "epochs",
    "step": "event number",
    "sigma": "noise σ",
    "noise_multiplier": "noise multiplier σ (noise std / clipping norm)",
    "sample_rate": "sample rate q",
    "lipschitz": "Lipschitz constant L",
    "lr": "step size η",
    "diameter": "diameter D",
    "initial_distance": "initial distance R",
    "sensitivity": "gradient sensitivity S_g",
    "strong_convexity": "strong convexity λ",
    "smoothness": "smoothness β",
    "dataset_size": "dataset size n",
}
#: Symbols for legend entries of ``group`` columns ("optimal, ζ = 0.5") and for dot-chart subtitles.
SYMBOLS = {
    "alpha": "α",
    "rdp": "ζ",
    "delta": "δ",
    "epsilon": "ε",
    "target_epsilon": "target ε",
    "sigma": "σ",
    "noise_multiplier": "σ",
    "sample_rate": "q",
    "batch_size": "B",
    "dataset_size": "n",
    "steps": "T",
    "epochs": "epochs",
    "lipschitz": "L",
    "lr": "η",
    "diameter": "D",
    "initial_distance": "R",
    "sensitivity": "S_g",
    "strong_convexity": "λ",
    "smoothness": "β",
}
_STYLES = ("-", "--", ":", "-.")
_MARKERS_BELOW = 30  # lines with fewer points get a marker on each point


def _matplotlib():
    """pyplot on the Agg backend, or a one-line usage error with the install command."""
    try:
        # lazy: matplotlib (the optional 'plot' extra) loads only for --plot
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # lazy: as above, once the backend is chosen
    except ImportError:
        raise click.UsageError(f"--plot needs matplotlib, which is not installed: {INSTALL_HINT}") from None
    return plt


@dataclass
class _Line:
    key: tuple  # (series value, group values)
    column: str
    label: str
    points: list = field(default_factory=list)  # finite (x, y), sorted by x
    color: str = "C0"
    style: str = "-"
    width: float = 1.6
    invalid: bool = False  # points where the ``valid`` column is false: the method's conditions fail


def draw(result: Result, path: str) -> None:
    """Draw ``result`` (as its :class:`~dpcalc.result.PlotSpec` says) to ``path`` atomically."""
    spec = result.plot
    if spec is not None and spec.points:  # an audit's points and boxes over trade-off curves
        plt = _matplotlib()
        # lazy: plot_audit imports matplotlib, which _matplotlib() has just found installed
        from dpcalc.plot.audit import draw_points

        with plt.rc_context({"svg.hashsalt": "dpcalc", "font.size": 9}):
            fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120, layout="constrained")
            try:
                draw_points(ax, spec)
                fig.suptitle(spec.title or result.title or "dpcalc", fontsize=11)
                if spec.subtitle:
                    ax.set_title(textwrap.fill(spec.subtitle, 85), fontsize=8.5, color="0.3")
                _save_atomically(fig, path)
            finally:
                plt.close(fig)
        return
    if spec is None or len(result) < 2:
        raise click.UsageError(
            "--plot: this result is a single row, with no curve or comparison to draw"
            if len(result) < 2
            else "--plot: this result has no curve or comparison to draw (sweep an option)"
        )
    plt = _matplotlib()
    lines, missing = _lines(result, spec)
    rc = {"svg.hashsalt": "dpcalc", "font.size": 9}
    with plt.rc_context(rc):
        fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120, layout="constrained")
        try:
            xs = {x for line in lines for x, _ in line.points}
            if len(xs) <= 1:
                _dot_chart(ax, spec, result, lines, missing, xs)
            else:
                _line_chart(ax, spec, result, lines, missing)
            fig.suptitle(spec.title or result.title or "dpcalc", fontsize=11)
            if spec.subtitle:
                width = 85 if len(xs) > 1 else 70
                ax.set_title(textwrap.fill(spec.subtitle, width), fontsize=8.5, color="0.3")
            _save_atomically(fig, path)
        finally:
            plt.close(fig)


# -- data -------------------------------------------------------------------------------------
def _lines(result: Result, spec: PlotSpec) -> tuple[list[_Line], list[tuple]]:
    """One line per (series value, group values, y column) with finite points; keys with none at all."""
    n = len(result)
    xs = result.column(spec.x)
    series, gvals = _key_columns(result, spec)
    keys = list(dict.fromkeys(zip(series, gvals)))
    ycols = [c for c in dict.fromkeys((spec.y, *spec.y_extra)) if c in result.columns]
    ok = result.column(spec.valid) if spec.valid in result.columns else [True] * n
    lines: list[_Line] = []
    for col in ycols:
        ys = result.column(col)
        for key in keys:
            for invalid in (False, True):
                pts = sorted(
                    (float(x), float(y))
                    for x, y, s, g, v in zip(xs, ys, series, gvals, ok)
                    if (s, g) == key and _finite(x) and _finite(y) and (v is False) == invalid
                )
                if pts:
                    lines.append(_Line(key, col, "", pts, invalid=invalid))
    have = {line.key for line in lines}
    missing = [k for k in keys if k not in have]
    _style(lines, spec)
    return lines, missing


def _key_columns(result: Result, spec: PlotSpec) -> tuple[list, list[tuple]]:
    """Per row: the series value and the tuple of group values (what tells the lines apart)."""
    n = len(result)
    series = result.column(spec.series) if spec.series else [None] * n
    groups = [result.column(g) for g in spec.group if g in result.columns]
    return series, (list(zip(*groups)) if groups else [()] * n)


def _style(lines: list[_Line], spec: PlotSpec) -> None:
    """Colours by (series, column) — by group when there is one series only; labels for the legend."""
    colour_keys = list(dict.fromkeys((line.key[0], line.column) for line in lines))
    group_keys = list(dict.fromkeys(line.key[1] for line in lines))
    by_group = len(colour_keys) == 1 and len(group_keys) > 1
    cols_per_series: dict = {}
    for line in lines:
        cols_per_series.setdefault(line.key[0], set()).add(line.column)
    for line in lines:
        series, gval = line.key
        if by_group:
            line.color = f"C{group_keys.index(gval) % 10}"
        else:
            rank = colour_keys.index((series, line.column))
            line.color = f"C{rank % 10}"
            line.style = _STYLES[group_keys.index(gval) % len(_STYLES)]
            # later lines thinner, drawn on top: bounds that coincide show as nested stripes
            line.width = max(1.1, 3.0 - 0.5 * rank) if 1 < len(colour_keys) <= 5 else 1.8
        if line.column in LOWER_BOUND_COLUMNS and line.column != spec.y and line.style == "-":
            line.style = "--"
        if series is not None:
            base = spec.labels.get(str(series), str(series))
            if len(cols_per_series[series]) > 1:
                base += f" ({spec.labels.get(line.column, line.column)})"
        else:
            base = spec.labels.get(line.column, "") if len(colour_keys) > 1 or not gval else ""
        line.label = ", ".join(p for p in (base, _group_label(spec, gval)) if p)
        if line.invalid:
            line.label += " (its conditions fail: not a bound)"
            line.style, line.width = ":", 1.2


def _group_label(spec: PlotSpec, gval: tuple) -> str:
    names = [g for g in spec.group]
    return ", ".join(f"{spec.labels.get(g, SYMBOLS.get(g, g))} = {_fmt(v)}" for g, v in zip(names, gval))


def _key_label(spec: PlotSpec, key: tuple) -> str:
    series, gval = key
    base = spec.labels.get(str(series), str(series)) if series is not None else ""
    return ", ".join(p for p in (base, _group_label(spec, gval)) if p) or spec.y


def _note_for(result: Result, spec: PlotSpec, key: tuple) -> str:
    """Why a line has no number: "no number", with the first note of its rows if there is one."""
    if "note" in result.columns and spec.series:
        for s, note in zip(result.column(spec.series), result.column("note")):
            if s == key[0] and note:
                note = str(note).removeprefix("does not apply: ")
                return "no number: " + (note if len(note) <= 60 else note[:57] + "...")
    return "no number"


# -- charts -----------------------------------------------------------------------------------
def _line_chart(ax, spec: PlotSpec, result: Result, lines: list[_Line], missing: list[tuple]) -> None:
    allx = [x for line in lines for x, _ in line.points]
    logx = spec.logx or (spec.autolog and _spans(allx) and _log_spaced(allx))
    ally = [y for line in lines for _, y in line.points]
    if spec.band:
        ally += [v for c in spec.band if c in result.columns for v in result.column(c) if _finite(v)]
    logy = spec.logy or (spec.autolog and _spans(ally, 1e4 if not logx else 50.0))
    drawn = 0
    for line in lines:
        pts = [(x, y) for x, y in line.points if (x > 0 or not logx) and (y > 0 or not logy)]
        if not pts:
            continue
        px, py = zip(*pts)
        repeated = len(set(px)) < len(px)  # several values at one x: points, not a zig-zag line
        ax.plot(
            px,
            py,
            color=line.color,
            linestyle="none" if repeated else line.style,
            marker="o" if repeated or line.invalid or len(pts) < _MARKERS_BELOW else None,
            markersize=3.5,
            markerfacecolor="white" if line.invalid else line.color,
            linewidth=line.width,
            label=line.label or None,
        )
        drawn += 1
    if spec.band and all(c in result.columns for c in spec.band):
        _band(ax, spec, result, lines, logy)
    _references(ax, spec, result, lines, logx)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(spec.xlabel or spec.labels.get(spec.x) or AXIS_LABELS.get(spec.x, spec.x))
    ax.set_ylabel(spec.ylabel or AXIS_LABELS.get(spec.y, spec.y))
    ax.grid(True, which="major", alpha=0.35)
    if logx or logy:
        ax.grid(True, which="minor", alpha=0.12)
    if missing:
        text = "\n".join(
            f"not drawn, {_key_label(spec, k)}: {_note_for(result, spec, k)}" for k in missing[:4]
        )
        ax.text(0.01, 0.01, text, transform=ax.transAxes, fontsize=7, color="0.4", va="bottom")
    handles, _ = ax.get_legend_handles_labels()
    if len(handles) > 1 or (handles and spec.series):
        title = spec.labels.get(spec.series, "") if spec.series else ""
        if len(handles) > 8:
            ax.legend(fontsize=7.5, title=title or None, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        else:
            ax.legend(fontsize=8, title=title or None)
    if not drawn:
        raise click.UsageError("--plot: no finite value to draw")


def _band(ax, spec: PlotSpec, result: Result, lines: list[_Line], logy: bool) -> None:
    lo_col, hi_col = spec.band
    xs, lo, hi = (result.column(c) for c in (spec.x, lo_col, hi_col))
    series, gvals = _key_columns(result, spec)
    keys = list(zip(series, gvals))
    colours = {line.key: line.color for line in lines}
    for key in dict.fromkeys(keys):  # one band per line (series and group values)
        pts = sorted(
            (float(x), float(a), float(b))
            for x, a, b, k in zip(xs, lo, hi, keys)
            if k == key and _finite(x) and _finite(a) and _finite(b) and (a > 0 or not logy)
        )
        if len(pts) > 1:
            px, pa, pb = zip(*pts)
            ax.fill_between(px, pa, pb, color=colours.get(key, "C0"), alpha=0.18, linewidth=0)


def _references(ax, spec: PlotSpec, result: Result, lines: list[_Line], logx: bool) -> None:
    xs = [x for line in lines for x, _ in line.points]
    if spec.xref and spec.xref in result.columns and xs:
        values = sorted({float(v) for v in result.column(spec.xref) if _finite(v)})
        inside = [v for v in values if min(xs) <= v <= max(xs) and (v > 0 or not logx)]
        name = spec.labels.get(spec.xref, spec.xref)
        for v in inside[:3]:
            ax.axvline(v, color="0.35", linestyle=":", linewidth=1.1, label=f"{name} = {_fmt(v)}")
    for value, label in spec.hlines:
        ax.axhline(value, color="0.5", linestyle="-.", linewidth=1.0, label=label or None)
    if spec.diagonal and xs:  # y = x: a trade-off curve's random guessing
        lo, hi = min(xs), max(xs)
        ax.plot([lo, hi], [lo, hi], color="0.5", linestyle="-.", linewidth=1.0, label=spec.diagonal)


def _dot_chart(ax, spec: PlotSpec, result: Result, lines: list[_Line], missing: list[tuple], xs) -> None:
    """Every line has one point (one setting): one labelled dot per line, top to bottom in the rows'
    order; a line without a number is listed with the reason."""
    order = list(dict.fromkeys(zip(*_key_columns(result, spec))))
    entries = [(order.index(line.key), line.label or _key_label(spec, line.key), line) for line in lines]
    entries += [(order.index(k), _key_label(spec, k), _note_for(result, spec, k)) for k in missing]
    entries.sort(key=lambda e: e[0])  # stable: a key's extra columns stay right after it
    values = [line.points[0][1] for line in lines]
    if not values:
        raise click.UsageError("--plot: no finite value to draw")
    log = min(values) > 0 and (spec.logy or (spec.autolog and _spans(values)) or _spans(values, 1000.0))
    lo = min(values) / 3 if log else min(0.0, min(values))
    hi = max(values) * (4 if log else 1.2) if max(values) > 0 else 1.0
    for i, (_, _, line) in enumerate(entries):
        if isinstance(line, str):  # no number: the reason
            ax.text(lo, i, "  " + line, va="center", fontsize=8, color="0.4")
            continue
        v = line.points[0][1]
        face = "white" if line.invalid else line.color
        ax.hlines(i, lo, v, color=line.color, linewidth=2.2, alpha=0.35)
        ax.plot([v], [i], "o", color=line.color, markersize=7, markerfacecolor=face)
        text = table_cell(line.column, v)  # an upper bound rounded up, a lower bound down, as in tables
        ax.annotate(text, (v, i), xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(range(len(entries)), [textwrap.fill(label, 40) for _, label, _ in entries])
    ax.set_ylim(len(entries) - 0.5, -0.5)
    if log:
        ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel(spec.ylabel or AXIS_LABELS.get(spec.y, spec.y))
    ax.grid(True, axis="x", which="major", alpha=0.35)
    if xs and not spec.subtitle:
        (x0,) = xs
        ax.set_title(f"{SYMBOLS.get(spec.x, spec.x)} = {_fmt(x0)}", fontsize=8.5, color="0.3")


# -- helpers ----------------------------------------------------------------------------------
def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _spans(values, ratio: float = 50.0) -> bool:
    """Do the positive values span more than ``ratio`` (about two decades by default)?"""
    pos = [v for v in values if _finite(v) and v > 0]
    return len(pos) > 1 and max(pos) / min(pos) > ratio


def _log_spaced(values) -> bool:
    """Are the distinct positive values spread geometrically (1, 10, 100, ...) rather than evenly?"""
    pos = sorted({v for v in values if v > 0})
    return bool(pos) and pos[len(pos) // 2] < (pos[0] + pos[-1]) / 10


def _fmt(v) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _save_atomically(fig, path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    ext = path.rsplit(".", 1)[-1].lower()
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}.get(ext)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".dpcalc-plot-", suffix="." + ext, dir=directory)
    except OSError as exc:  # the directory named is missing or not writable: bad input, like a read-only file
        raise click.UsageError(f"--plot: cannot write {path!r}: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the picture the usual mode
        fig.savefig(tmp, format=ext, metadata=metadata)
        os.replace(tmp, path)
    except OSError as exc:
        raise click.ClickException(f"--plot: cannot write {path!r}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
