"""The rows of ``dpcalc iterate`` (docs/math.md §4): the columns of a chunk of combinations under each method,
from :mod:`dpcalc.engine.hidden_state.iteration` (Feldman et al.'s bound, Asoodeh et al.'s contraction bound, the
composition baseline, the contractive-noisy-iteration bound): the Rényi bound at α, ε at δ or δ at ε, and the
notes of the rows."""

from __future__ import annotations

import numpy as np

from dpcalc.commands.curve import grid_part
from dpcalc.engine.hidden_state import iteration as it
from dpcalc.engine.hidden_state import langevin as lg
from dpcalc.render.cells import rounded


def _rdp_at(m, a, s, lip, t, feldman_log):
    """Method ``m``'s Rényi bound at the orders ``a`` (nan where it has none) and its note."""
    note = np.full(a.shape, "", dtype=object)
    value = np.full(a.shape, np.nan)
    if m == "feldman":
        a_star = it.alpha_star(s, lip)
        value = it.rdp_feldman(a, s, lip, t, log_form=feldman_log)
        over = ~np.isfinite(value)
        value = np.where(over, np.nan, value)
        note = np.where(
            over,
            [
                f"no bound: α > α* = {rounded(x, 'down', 7)} (needs σ² >= 2α(α−1)L²)"
                for x in np.broadcast_to(np.atleast_1d(a_star), a.shape)
            ],
            note,
        )
    elif m == "asoodeh":
        note[:] = "no Rényi bound: this bound is (ε, δ) only"
    return value, note


def _profile_at(m, query, x, s, lip, lr, t, diam, dist, conversion, feldman_log, notes):
    """Method ``m``'s ε at δ = ``x`` (``query`` "delta") or δ at ε = ``x`` ("epsilon"): (value, best order, note);
    a caption-level remark is appended to ``notes``."""
    value, order, note = (
        np.full(x.shape, np.nan),
        np.full(x.shape, np.nan),
        np.full(x.shape, "", dtype=object),
    )
    if m == "feldman":
        fn = it.eps_feldman if query == "delta" else it.delta_feldman
        value, order = fn(x, s, lip, t, conversion=conversion, log_form=feldman_log)
        bad = "no finite ε certified" if query == "delta" else "vacuous: the bound is >= 1"
        note = np.where((value >= 1) if query == "epsilon" else np.isinf(value), bad, note)
        note = np.where(
            np.asarray(it.alpha_star_minus_one(s, lip)) <= 1e-9,
            "no usable order: α* ≈ 1 (σ ≪ L)",
            note,
        )
    elif m == "asoodeh":
        if query == "epsilon":
            value = it.delta_asoodeh(x, s, lip, lr, t, diam)
            vacuous = np.asarray(it.log_delta_asoodeh(x, s, lip, lr, t, diam)) >= 0
            note = np.where(vacuous, "vacuous: the bound is >= 1", note)
            if np.any(vacuous):
                notes.append("asoodeh: δ >= 1 (vacuous) on some rows, reported as 1")
        else:
            value = it.eps_asoodeh(x, s, lip, lr, t, diam)
            note = np.where(np.isinf(value), "no finite ε certified", note)
    elif m == "cni":
        coef = np.where(dist[1], np.inf, it.rdp_contractive_iteration(2.0, dist[0], dist[2], t) / 2.0)
        fn = lg.eps_linear_curve if query == "delta" else lg.delta_linear_curve
        value, order = fn(x, coef, conversion=conversion)
    elif query == "epsilon":
        value = it.delta_composition(x, s, lip)
    else:
        value = it.eps_composition(x, s, lip)
    return value, order, note


def cni_noise(lr, s):
    """cni's noise std ησ per step (docs/math.md §4.1) and where it underflowed: an underflowed ησ certifies
    nothing (inf); an overflowed one is replaced by a smaller std (safe)."""
    with np.errstate(over="ignore", under="ignore"):
        noise = lr * s
    gone = noise == 0
    return np.where(gone, 1.0, np.minimum(noise, 1e308)), gone


def _columns(params, axes, lo, hi, query, alpha, methods, conversion, feldman_log):
    """The columns of combinations ``lo`` to ``hi`` under each of ``methods`` (method first), and the
    caption-level notes they raise."""
    g = grid_part(axes, lo, hi)
    s, lip, lr, t, diam = (g[k] for k in ("sigma", "lipschitz", "lr", "steps", "diameter"))
    dist = g.get("initial_distance")
    answer = {"delta": "epsilon", "epsilon": "delta", None: "rdp"}[query]
    both = alpha is not None and query is not None
    # every input is a column (one schema); a table moves constant ones to its caption
    shown = list(params)
    cols: dict[str, list] = {
        n: [] for n in ["method", *shown, "delta", "epsilon", "alpha", "rdp", "best_alpha"]
    }
    cols["note"] = []
    notes: list[str] = []
    n = s.size
    for m in methods:
        row_notes = [[] for _ in range(n)]
        noise = None
        if m == "cni":
            noise, gone = cni_noise(lr, s)
        if alpha is not None:
            a = g["alpha"]
            if m == "cni":
                rdp = np.where(gone, np.inf, it.rdp_contractive_iteration(a, dist, noise, t))
                rnote = np.full(a.shape, "", dtype=object)
            elif m == "composition":
                rdp, rnote = it.rdp_composition(a, s, lip), np.full(a.shape, "", dtype=object)
            else:
                rdp, rnote = _rdp_at(m, a, s, lip, t, feldman_log)
            cols["alpha"] += list(a)
            cols["rdp"] += list(np.broadcast_to(np.asarray(rdp, float), a.shape))
            for i, x in enumerate(np.broadcast_to(rnote, a.shape)):
                if x:
                    row_notes[i].append(str(x))
        else:
            cols["rdp"] += [None] * n
        if query is not None:
            x = g["target"]
            cni = None if m != "cni" else (dist, gone, noise)
            value, order, pnote = _profile_at(
                m, query, x, s, lip, lr, t, diam, cni, conversion, feldman_log, notes
            )
            value = np.broadcast_to(np.asarray(value, float), x.shape)
            order = list(np.broadcast_to(np.asarray(order, float), x.shape))
            cols[query] += list(x)
            cols[answer] += list(value)
            if both:
                cols["best_alpha"] += order
            else:
                cols["alpha"] += order
            for i, y in enumerate(np.broadcast_to(pnote, x.shape)):
                if y and str(y) not in row_notes[i]:
                    row_notes[i].append(str(y))
        else:
            cols["delta"] += [None] * n
            cols["epsilon"] += [None] * n
        if not both:
            cols["best_alpha"] += [None] * n
        cols["method"] += [m] * n
        for k in shown:
            cols[k] += [int(v) for v in g[k]] if k == "steps" else list(g[k])
        cols["note"] += ["; ".join(r) for r in row_notes]
    if not any(cols["note"]):
        del cols["note"]
    for k in ("delta", "epsilon", "alpha", "rdp", "best_alpha"):
        if all(v is None for v in cols[k]):
            del cols[k]
    return cols, notes
