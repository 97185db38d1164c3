"""Privacy loss distributions (PLDs) of basic mechanisms, as continuous models (numpy only).

A mechanism's pair of output distributions (P, Q) on neighbouring inputs is described by its privacy
loss ``L = log dP/dQ`` under ``P`` (Meiser & Mohammadi 2018; Koskela et al. 2020; Sommer et al. 2019).
Its privacy profile is the hockey-stick divergence (docs/math.md §0)

    δ(ε) = E_P[(1 − e^{ε−L})_+] + P(L = +∞),

and profiles of independent compositions are those of the sum of the losses.  A :class:`LossModel` holds
one ordered pair: finite atoms, one continuous piece given by a monotone map ``x ↦ L(x)`` with a density
of ``x`` under ``P``, and a mass at ``+∞``.  :mod:`dpcalc.engine.pld.discretise` turns it into a
pessimistic discrete PLD on a grid.

Each mechanism's models live in its own module of :mod:`dpcalc.engine.mechanisms` (its
``pld_pair``); this module holds the model types, Gaussian tail bounds and one shared pair:

* :func:`approx_dp` — the tight dominating pair of an (ε, δ)-DP mechanism (Kairouz–Oh–Viswanath 2015):
  ``+∞`` w.p. δ, ε w.p. (1−δ)e^ε/(1+e^ε), −ε w.p. (1−δ)/(1+e^ε).  Symmetric.  Used by ``dp`` specs and
  by randomized response (the pair of (ε, 0)-DP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcalc.engine._numerics import gauss_legendre
from dpcalc.errors import InputError

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: How many standard deviations a Gaussian density is followed before it is exactly 0 in doubles.
_SPAN = 40.0


def gather_atoms(loc, mass, h: float, ia: int, ib: int):
    """Atoms (losses ``loc`` with masses ``mass``) split onto the grid ``ia·h .. ib·h`` the pessimistic way
    ("connect the dots", Doroshenko et al. 2022: :mod:`dpcalc.engine.pld.discretise` says why the split
    dominates): each in-range atom at ``l`` between ``ε_j`` and ``ε_{j+1}`` sends ``a(l) = (e^{ε_{j+1} − l} −
    1)/(e^h − 1)`` of its mass to ``ε_j`` and the rest to ``ε_{j+1}``; mass below the grid goes to its first
    point, mass above it is returned for ``+∞``.  Returns ``(p, above, outside, shift)``: the grid masses,
    the mass above the grid, the mass outside it, and the split's mean shift ``E[L' − L]`` in range."""
    n = ib - ia + 1
    p = np.zeros(n)
    a_val, b_val = ia * h, ib * h
    em1h = math.expm1(h)
    below, over = loc < a_val, loc > b_val
    p[0] += float(np.sum(mass[below]))
    above = float(np.sum(mass[over]))
    outside = float(np.sum(mass[below | over]))
    inr = ~(below | over)
    j = np.clip(np.floor(loc[inr] / h).astype(np.int64) - ia, 0, n - 1)
    t = np.clip(loc[inr] - (j + ia) * h, 0.0, h)
    wl = np.where(j < n - 1, np.minimum(np.expm1(h - t) / em1h, 1.0), 1.0)  # (np vs math expm1: 1 ulp)
    np.add.at(p, j, mass[inr] * wl)
    np.add.at(p, np.minimum(j + 1, n - 1), mass[inr] * (1.0 - wl))
    shift = float(np.sum(mass[inr] * np.where(j < n - 1, h * (1.0 - wl) - t, 0.0)))
    return p, above, outside, shift


def log_normal_sf(z: float) -> float:
    """An upper bound on ``log Q(z)`` (Q = 1 − Φ), accurate to 1e-15 relative for z < 25.

    For ``z >= 25`` the Mills-ratio bound ``Q(z) <= φ(z)/z`` is used (over by < 0.2 %), so the result
    stays finite far beyond the range of ``erfc``.
    """
    z = float(z)
    if z < 25.0:
        v = 0.5 * math.erfc(z / math.sqrt(2.0))
        return math.log(v) if v > 0 else -math.inf
    return -0.5 * z * z - math.log(z) - _LOG_SQRT_2PI


@dataclass
class Piece:
    """The continuous part of a loss model: ``x`` has log-density ``log_pdf`` under P on ``[x_lo, x_hi]``
    (beyond that range the density is 0 in double precision), and the loss ``L(x)`` is monotone.

    ``x_of_loss(l)`` inverts the loss (values outside the loss range map outside ``[x_lo, x_hi]`` or to
    ±inf); ``dloss(x0, dx)`` returns ``L(x0 ± dx) − L(x0)`` accurately for ``dx >= 0`` ("+" for an
    increasing loss, "−" for a decreasing one: always towards larger losses).  ``scale`` is the length
    scale on which the density varies (quadrature sub-intervals are at most ``scale/4`` long).
    """

    x_lo: float
    x_hi: float
    increasing: bool
    loss: object
    x_of_loss: object
    dloss: object
    log_pdf: object
    scale: float
    tilt_rate: float = 0.0  # how far (in x) the tilted density e^{tL}p moves per unit of |t|
    unbounded: bool = True  # whether the density extends beyond [x_lo, x_hi] (Gaussian tails)


@dataclass
class LossModel:
    """One ordered pair (P, Q): atoms of the loss, an optional continuous piece, and a mass at +∞
    (or, with ``dominates_only``, a pair that dominates it).

    ``log_sf_above(b)`` / ``log_cdf_below(a)`` return upper bounds on ``log P(b < L < ∞)`` and
    ``log P(L < a)``; ``loss_min`` / ``loss_max`` bound the finite losses (may be ±inf).
    """

    name: str
    atoms_loc: np.ndarray = field(default_factory=lambda: np.zeros(0))
    atoms_mass: np.ndarray = field(default_factory=lambda: np.zeros(0))
    piece: Piece | None = None
    inf_mass: float = 0.0
    loss_min: float = -math.inf
    loss_max: float = math.inf
    log_sf_above: object = None
    log_cdf_below: object = None
    #: The model only dominates the pair (its profile bounds the pair's from above, as random allocation's
    #: rounds, docs/math.md §3.10): a bracket computed from it has a certified upper end and no lower end
    #: (:func:`dpcalc.engine.pld.bracket.dominates_only`).
    dominates_only: bool = False
    #: Of ``inf_mass``, the part that is finite loss moved to +∞ by a cut (a tail of components too unlikely to
    #: matter): the pair with it at +∞ dominates the true one, and a lower end counts it as a bad event
    #: (:mod:`dpcalc.engine.pld.discretise`), so the bracket still brackets the true pair.
    cut_mass: float = 0.0
    #: ``cut(log_budget)``: a cheaper model of the same pair with at most ``e^{log_budget}`` more mass cut to +∞
    #: (counted in ``cut_mass``), or None; the accountant asks with the tail mass its grid already gives up
    #: (:func:`dpcalc.engine.pld.grid._prepare`).
    cut: object = field(default=None, repr=False, compare=False)
    _nodes: object = field(default=None, repr=False, compare=False)
    _mgf_memo: object = field(default=None, repr=False, compare=False)

    def _atom_log_tail(self, b, above: bool) -> float:
        sel = self.atoms_loc > b if above else self.atoms_loc < b
        m = float(np.sum(self.atoms_mass[sel]))
        return math.log(m) if m > 0 else -math.inf

    def log_tail_above(self, b: float) -> float:
        """Upper bound on ``log P(b < L < ∞)``."""
        out = self._atom_log_tail(b, True)
        if self.piece is not None and b < self.loss_max:
            out = np.logaddexp(out, self.log_sf_above(b))
        return float(out)

    def log_tail_below(self, a: float) -> float:
        """Upper bound on ``log P(L < a)``."""
        out = self._atom_log_tail(a, False)
        if self.piece is not None and a > self.loss_min:
            out = np.logaddexp(out, self.log_cdf_below(a))
        return float(out)

    def _node_key(self, tmax: float) -> int:
        """Which node set covers the tilted integrand for ``|t| <= tmax`` (one per power-of-two extension)."""
        pc = self.piece
        ext = pc.tilt_rate * tmax if pc.unbounded else 0.0
        return 0 if ext <= pc.scale else int(math.ceil(math.log2(ext / pc.scale)))

    def _piece_nodes(self, tmax: float):
        """Quadrature nodes (log weight·density, loss) covering the tilted integrand for |t| <= tmax
        (cached per power-of-two extension)."""
        pc = self.piece
        key = self._node_key(tmax)
        if self._nodes is None:
            self._nodes = {}
        if key not in self._nodes:
            e = 0.0 if key == 0 else pc.scale * 2.0**key
            e = min(e, 4000.0 * pc.scale)
            lo, hi = pc.x_lo - e, pc.x_hi + e
            x, w = _composite_nodes(lo, hi, max(pc.scale / 2.0, (hi - lo) / 1500.0))
            with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
                lw = np.log(w) + pc.log_pdf(x)
                lx = pc.loss(x)
            keep = np.isfinite(lw) & np.isfinite(lx)
            self._nodes[key] = (lw[keep], lx[keep])
        return self._nodes[key]

    def log_mgf(self, t) -> np.ndarray:
        """``log E_P[e^{tL}; L < ∞]`` for an array of ``t`` (quadrature for the continuous piece:
        an estimate used to choose the grid and the window, never part of a bound).  The accountant
        asks for the same tilts many times (the window's θ grid, then each tail bound's search on it; each
        direction, each attempt): answers are memoised per tilt.  A tilt's answer does not depend on the
        others asked with it (each row of :meth:`_log_mgf_chunk` is its own, on the node set of its |t|), so
        the memo returns exactly what a fresh evaluation would."""
        t = np.atleast_1d(np.asarray(t, dtype=float)).ravel()
        if self._mgf_memo is None:
            self._mgf_memo = {}
        memo = self._mgf_memo
        values = [memo.get(v) for v in t.tolist()]
        missing = [i for i, v in enumerate(values) if v is None]
        if missing:
            fresh = self._log_mgf(t[missing]).tolist()
            for i, v in zip(missing, fresh):
                values[i] = v
                if len(memo) < _MGF_MEMO_MAX and t[i] == t[i]:  # (never a nan key: nan != nan)
                    memo[float(t[i])] = v
        return np.array(values, dtype=float)

    def _log_mgf(self, t: np.ndarray) -> np.ndarray:
        out = np.empty(t.size)
        # a larger |t| needs a wider (and larger) node set: chunks of t with the same node set, so
        # that small tilts are not integrated on the node set of the largest one
        order = np.argsort(np.abs(t), kind="stable")
        if self.piece is not None:
            keys = np.array([self._node_key(float(abs(v))) for v in t[order]])
            cuts = np.nonzero(np.diff(keys))[0] + 1
        else:
            cuts = np.array([], dtype=int)
        for group in np.split(order, cuts):
            for c0 in range(0, group.size, 16):
                idx = group[c0 : c0 + 16]
                out[idx] = self._log_mgf_chunk(t[idx, None])
        return out

    def _log_mgf_chunk(self, tc: np.ndarray) -> np.ndarray:
        """``log E_P[e^{tL}; L < ∞]`` for a column ``tc`` of tilts sharing one node set."""
        parts = []
        if self.atoms_loc.size:
            with np.errstate(divide="ignore"):
                parts.append(np.log(self.atoms_mass)[None, :] + tc * self.atoms_loc[None, :])
        if self.piece is not None:
            lw, lx = self._piece_nodes(float(np.max(np.abs(tc))))
            v = tc * lx[None, :]
            v += lw[None, :]
            parts.append(v)
        if not parts:
            return np.full(tc.shape[0], -np.inf)
        allt = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        m = np.max(allt, axis=1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore", over="ignore", under="ignore"):
            allt -= m
            np.exp(allt, out=allt)
            return np.log(np.sum(allt, axis=1)) + m[:, 0]


#: Tilts whose quadrature cumulant a model keeps (a few grids of about a hundred each).
_MGF_MEMO_MAX = 8192


def _composite_nodes(lo: float, hi: float, width: float):
    """Nodes and weights of composite 8-point Gauss–Legendre on [lo, hi] with panels <= width."""
    n = max(1, int(math.ceil((hi - lo) / width)))
    edges = np.linspace(lo, hi, n + 1)
    mid = 0.5 * (edges[1:] + edges[:-1])
    half = 0.5 * (edges[1:] - edges[:-1])
    gx, gw = gauss_legendre(8)
    x = (mid[:, None] + half[:, None] * gx[None, :]).ravel()
    w = (half[:, None] * gw[None, :]).ravel()
    return x, w


# ------------------------------------------------------------------------ the pair of (ε, δ)-DP


def approx_dp(epsilon: float, delta: float = 0.0) -> LossModel:
    """The tight dominating pair of (ε, δ)-DP (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan 2016):
    losses +∞ (δ), ε ((1−δ)e^ε/(1+e^ε)) and −ε ((1−δ)/(1+e^ε)).  ε = inf puts all mass at +∞."""
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon >= 0) or math.isnan(epsilon):
        raise InputError(f"epsilon: must be >= 0, got {epsilon}")
    if not (0.0 <= delta <= 1.0):
        raise InputError(f"delta: must lie in [0, 1], got {delta}")
    if math.isinf(epsilon):
        return LossModel(name="dp(inf)", inf_mass=1.0, loss_min=0.0, loss_max=0.0)
    p_hi = (1.0 - delta) / (1.0 + math.exp(-epsilon))
    p_lo = (1.0 - delta) / (1.0 + math.exp(epsilon))
    return LossModel(
        name=f"dp({epsilon:g},{delta:g})",
        atoms_loc=np.array([-epsilon, epsilon]),
        atoms_mass=np.array([p_lo, p_hi]),
        inf_mass=delta,
        loss_min=-epsilon,
        loss_max=epsilon,
    )
