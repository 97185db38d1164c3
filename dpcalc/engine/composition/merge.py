"""Exact merging of a composition's mechanisms before numerical accounting (docs/math.md §2.6, §7).

Privacy loss distributions cost one grid (and one FFT factor) per distinct mechanism, so a list of
10,000 distinct specs is 10,000 grids.  Two rewrites leave the composition's privacy profile unchanged:

* **identical releases**: ``k`` copies of one mechanism and ``m`` more are ``k + m`` copies (composition
  is a product of the releases' pairs, whatever their order);
* **plain Gaussians**: Gaussian releases with ratios ``r_i = Δ_i/σ_i`` (no subsampling) compose to one
  Gaussian release with ``r = sqrt(Σ count_i·r_i²)``: the pair ``(N(0, I), N(r_vec, I))`` after an
  orthogonal change of coordinates is ``(N(0, 1), N(|r_vec|, 1))`` times pairs of equal laws (Dong, Roth &
  Su 2019, "Gaussian differential privacy", Cor. 2: μ-GDP composes to sqrt(Σ μ_i²)-GDP; Balle & Wang 2018,
  Thm 8 for the profile).  ``Σ count·r²`` is rounded up (:func:`dpcalc.engine.mechanisms.catalogue.gaussian_r2`)
  and its square root raised by one ulp, so the merged Gaussian is never more private than the list.

Nothing else is merged: compositions of other kinds are not of their kind.  The engine never imports the
spec parser; a spec here is any object with ``kind``, ``params``, ``count`` (and ``text``), and the
merged specs are :class:`Merged` records of the same fields.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from dpcalc.engine.mechanisms.catalogue import gaussian_r2, lookup, mechanism


class Merged(NamedTuple):
    """A spec after merging: ``kind`` (canonical), ``params``, ``count`` and a ``text`` naming it."""

    kind: str
    params: dict
    count: int
    text: str

    def label(self) -> str:
        return self.text


def _plain_gaussian(kind: str, params: dict) -> bool:
    """A Gaussian release without subsampling whose ratio Δ/σ is known (not left out for calibration)."""
    if kind != "gaussian" or params.get("q") is not None:
        return False
    try:
        sigma, sens = float(params["sigma"]), float(params["sensitivity"])
    except (KeyError, TypeError, ValueError):
        return False  # left out, or not a number: the model says what is wrong
    if not (0 < sigma < math.inf and 0 < sens < math.inf) or set(params) - {"sigma", "sensitivity"}:
        return False
    return mechanism(kind, params).gaussian_ratio(params) is not None


def merge_exact(specs) -> list[Merged]:
    """``specs`` with identical releases merged (counts summed, first order kept) and every plain Gaussian
    of two or more specs merged into one ``gaussian:sigma=1,sensitivity=r`` release (module docstring),
    placed where the first one was.  The profile of the result equals the list's; where ``Σ count·r²`` is not finite the
    Gaussians are left as they are.  ``specs``: objects with ``kind``, ``params``, ``count``, ``text``."""
    merged: dict[tuple, Merged] = {}
    gauss = []
    for s in specs:
        mech = lookup(s.kind)
        kind = mech.kind if mech is not None else s.kind
        params = {"sensitivity": 1.0, **s.params} if kind == "gaussian" else dict(s.params)
        count = int(s.count)
        text = getattr(s, "text", "") or kind
        if _plain_gaussian(kind, params):
            if not gauss:
                merged[("gaussian-merged",)] = None  # keeps its place in the order
            gauss.append(Merged(kind, params, count, text))
            continue
        key = (kind, tuple(sorted(params.items(), key=lambda kv: kv[0])))
        if key in merged:
            first = merged[key]
            merged[key] = Merged(kind, first.params, first.count + count, first.text)
        else:
            merged[key] = Merged(kind, params, count, text)
    if gauss:
        merged[("gaussian-merged",)] = _one_gaussian(gauss)
    out = []
    for v in merged.values():
        out.extend(v if isinstance(v, list) else [v])
    return out


def _one_gaussian(gauss: list[Merged]):
    """One Gaussian release equivalent to ``gauss`` (a list of at least one), or ``gauss`` itself where
    ``Σ count·r²`` overflows, or where it holds one spec (its count is composed as it is)."""
    if len(gauss) == 1:
        return gauss
    r2 = gaussian_r2(gauss)
    r = math.sqrt(r2) if r2 is not None and math.isfinite(r2) else math.inf
    if not (0 < r < math.inf):
        return gauss
    r = math.nextafter(r, math.inf)  # sqrt rounds to nearest: one ulp up is never below the exact root
    n = sum(g.count for g in gauss)
    text = f"{len(gauss)} gaussian specs ({n} releases) as one: sensitivity/sigma = {r:.6g}"
    return [Merged("gaussian", {"sigma": 1.0, "sensitivity": r}, 1, text)]
