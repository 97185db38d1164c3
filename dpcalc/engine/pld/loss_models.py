"""Privacy loss distributions (PLDs) of basic mechanisms, as continuous models (numpy only).

A mechanism's pair of output distributions (P, Q) on neighbouring inputs is described by its privacy
loss ``L = log dP/dQ`` under ``P`` (Meiser & Mohammadi 2018; Koskela et al. 2020; Sommer et al. 2019).
Its privacy profile is the hockey-stick divergence (formulas.md §0)

    δ(ε) = E_P[(1 − e^{ε−L})_+] + P(L = +∞),

and profiles of independent compositions are those of the sum of the losses.  A :class:`LossModel` holds
one ordered pair: finite atoms, one continuous piece given by a monotone map ``x ↦ L(x)`` with a density
of ``x`` under ``P``, and a mass at ``+∞``.  :mod:`dpcalc.engine.pld.discretise` turns it into a
pessimistic discrete PLD on a grid.

Models (each states its dominating pair):

* :func:`gaussian` — N(Δ,σ²) vs N(0,σ²): ``L ~ N(r²/2, r²)`` with ``r = Δ/σ`` (formulas.md §2.6).
  Symmetric.
* :func:`laplace` — Lap(Δ, b) vs Lap(0, b): atoms at ±Δ/b (masses ½ and ½e^{−Δ/b}) and a density
  ``¼e^{(l−Δ/b)/2}`` on (−Δ/b, Δ/b).  Symmetric.
* :func:`randomized_response` — binary RR truthful with probability p: atoms ±log(p/(1−p)).  Symmetric.
* :func:`approx_dp` — the tight dominating pair of an (ε, δ)-DP mechanism (Kairouz–Oh–Viswanath 2015):
  ``+∞`` w.p. δ, ε w.p. (1−δ)e^ε/(1+e^ε), −ε w.p. (1−δ)/(1+e^ε).  Symmetric.
* :func:`subsampled_gaussian` — Poisson subsampling with rate q of a Gaussian with noise multiplier σ,
  add/remove neighbours (formulas.md §3.2): "remove" is (μ, μ0) and "add" is (μ0, μ) with
  μ0 = N(0,σ²), μ = (1−q)N(0,σ²) + qN(1,σ²).  The two directions differ; callers compose both and
  report the worse (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy via
  characteristic function": the dominating pairs of Poisson subsampling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcalc.errors import InputError

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: How many standard deviations a Gaussian density is followed before it is exactly 0 in doubles.
_SPAN = 40.0


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


def _log_mix_sf(z_list, w_list) -> float:
    """``log Σ w_i Q(z_i)`` (upper bound, see :func:`log_normal_sf`)."""
    vals = [math.log(w) + log_normal_sf(z) for z, w in zip(z_list, w_list) if w > 0]
    vals = [v for v in vals if v > -math.inf]
    if not vals:
        return -math.inf
    m = max(vals)
    return m + math.log(sum(math.exp(v - m) for v in vals))


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
    """One ordered pair (P, Q): atoms of the loss, an optional continuous piece, and a mass at +∞.

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
    _nodes: object = field(default=None, repr=False, compare=False)

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

    def _piece_nodes(self, tmax: float):
        """Quadrature nodes (log weight·density, loss) covering the tilted integrand for |t| <= tmax
        (cached per power-of-two extension)."""
        pc = self.piece
        ext = pc.tilt_rate * tmax if pc.unbounded else 0.0
        key = 0 if ext <= pc.scale else int(math.ceil(math.log2(ext / pc.scale)))
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
        an estimate used to choose the grid and the window, never part of a bound)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        out = np.empty(t.size)
        for c0 in range(0, t.size, 16):
            tc = t[c0 : c0 + 16, None]
            parts = []
            if self.atoms_loc.size:
                with np.errstate(divide="ignore"):
                    parts.append(np.log(self.atoms_mass)[None, :] + tc * self.atoms_loc[None, :])
            if self.piece is not None:
                lw, lx = self._piece_nodes(float(np.max(np.abs(tc))))
                parts.append(lw[None, :] + tc * lx[None, :])
            if not parts:
                out[c0 : c0 + 16] = -np.inf
                continue
            allt = np.concatenate(parts, axis=1)
            m = np.max(allt, axis=1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0.0)
            with np.errstate(divide="ignore", over="ignore", under="ignore"):
                out[c0 : c0 + 16] = np.log(np.sum(np.exp(allt - m), axis=1)) + m[:, 0]
        return out


_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


def _composite_nodes(lo: float, hi: float, width: float):
    """Nodes and weights of composite 8-point Gauss–Legendre on [lo, hi] with panels <= width."""
    n = max(1, int(math.ceil((hi - lo) / width)))
    edges = np.linspace(lo, hi, n + 1)
    mid = 0.5 * (edges[1:] + edges[:-1])
    half = 0.5 * (edges[1:] - edges[:-1])
    x = (mid[:, None] + half[:, None] * _GL_X[None, :]).ravel()
    w = (half[:, None] * _GL_W[None, :]).ravel()
    return x, w


# --------------------------------------------------------------------------------------- mechanisms


def gaussian(sigma: float, sensitivity: float = 1.0) -> LossModel:
    """Gaussian mechanism: ``L ~ N(r²/2, r²)`` under P with ``r = Δ/σ`` (Balle & Wang 2018 §3;
    formulas.md §2.6).  Symmetric, so one direction suffices."""
    sigma, sensitivity = float(sigma), float(sensitivity)
    if not (sigma > 0 and math.isfinite(sigma)):
        raise InputError(f"sigma: must be a finite number > 0, got {sigma}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise InputError(f"sensitivity: must be a finite number > 0, got {sensitivity}")
    r = sensitivity / sigma
    mu, s = 0.5 * r * r, r
    piece = Piece(
        x_lo=mu - _SPAN * s,
        x_hi=mu + _SPAN * s,
        increasing=True,
        loss=lambda x: x,
        x_of_loss=lambda v: np.asarray(v, dtype=float),
        dloss=lambda x0, dx: dx,
        log_pdf=lambda x: -0.5 * ((x - mu) / s) ** 2 - _LOG_SQRT_2PI - math.log(s),
        scale=s,
        tilt_rate=s * s,
    )
    return LossModel(
        name=f"gaussian(r={r:g})",
        piece=piece,
        log_sf_above=lambda b: log_normal_sf((b - mu) / s),
        log_cdf_below=lambda a: log_normal_sf((mu - a) / s),
    )


def laplace(scale: float, sensitivity: float = 1.0) -> LossModel:
    """Laplace mechanism Lap(Δ, b) vs Lap(0, b) (Koskela et al. 2021 §6; Mironov 2017 Table II for its
    RDP).  With ε0 = Δ/b: atoms −ε0 (mass ½e^{−ε0}) and ε0 (mass ½), density ¼e^{(l−ε0)/2} between."""
    scale, sensitivity = float(scale), float(sensitivity)
    if not (scale > 0 and math.isfinite(scale)):
        raise InputError(f"scale: must be a finite number > 0, got {scale}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise InputError(f"sensitivity: must be a finite number > 0, got {sensitivity}")
    e0 = sensitivity / scale
    piece = Piece(
        x_lo=-e0,
        x_hi=e0,
        increasing=True,
        loss=lambda x: x,
        x_of_loss=lambda v: np.asarray(v, dtype=float),
        dloss=lambda x0, dx: dx,
        log_pdf=lambda x: np.where(np.abs(x) <= e0, 0.5 * (x - e0) - 2.0 * math.log(2.0), -np.inf),
        scale=4.0,
        unbounded=False,
    )
    return LossModel(
        name=f"laplace(eps0={e0:g})",
        atoms_loc=np.array([-e0, e0]),
        atoms_mass=np.array([0.5 * math.exp(-e0), 0.5]),
        piece=piece,
        loss_min=-e0,
        loss_max=e0,
        log_sf_above=lambda b: _laplace_log_between(max(b, -e0), e0, e0),
        log_cdf_below=lambda a: _laplace_log_between(-e0, min(a, e0), e0),
    )


def _laplace_log_between(lo: float, hi: float, e0: float) -> float:
    """``log ∫_lo^hi ¼ e^{(l−ε0)/2} dl`` (upper bound by 1e-15 relative)."""
    if hi <= lo:
        return -math.inf
    v = 0.5 * (math.exp(0.5 * (hi - e0)) - math.exp(0.5 * (lo - e0)))
    return math.log(v) + 1e-15 if v > 0 else -math.inf


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


def randomized_response(p: float | None = None, epsilon: float | None = None) -> LossModel:
    """Binary randomized response truthful with probability p (or ε = log(p/(1−p))): the pair of
    (ε, 0)-DP (formulas.md §2.5 for its RDP)."""
    if epsilon is None:
        if p is None:
            raise InputError("randomized-response: give p or epsilon")
        p = float(p)
        if not (0.0 <= p <= 1.0):
            raise InputError(f"p: must lie in [0, 1], got {p}")
        p = max(p, 1.0 - p)
        epsilon = math.inf if p == 1.0 else math.log(p) - math.log1p(-p)
    return approx_dp(epsilon, 0.0)


def subsampled_gaussian(q: float, sigma: float, direction: str) -> LossModel:
    """Poisson-subsampled Gaussian, add/remove neighbours (Mironov, Talwar & Zhang 2019 §3.3;
    formulas.md §3.2).  ``direction="remove"``: P = μ, Q = μ0, ``L(x) = log(1−q+q e^{(2x−1)/(2σ²)})``
    (increasing, L > log(1−q)).  ``direction="add"``: P = μ0, Q = μ, ``L(x) = −log(1−q+q e^{(2x−1)/(2σ²)})``
    (decreasing, L < −log(1−q)).  q = 1 is the plain Gaussian with r = 1/σ."""
    q, sigma = float(q), float(sigma)
    if not (0.0 < q <= 1.0):
        raise InputError(f"q: the sampling rate must lie in (0, 1], got {q}")
    if not (sigma > 0 and math.isfinite(sigma)):
        raise InputError(f"sigma: the noise multiplier must be a finite number > 0, got {sigma}")
    if direction not in ("remove", "add"):
        raise InputError(f"direction: must be 'remove' or 'add', got {direction!r}")
    if q == 1.0:
        return gaussian(sigma, 1.0)
    s2 = sigma * sigma
    log1mq = math.log1p(-q)
    logq = math.log(q)

    def _u(x):
        return (2.0 * x - 1.0) / (2.0 * s2)

    def _lse(x):  # log(1 − q + q e^{u(x)})
        return np.logaddexp(log1mq, logq + _u(x))

    def _x_of(l_pos):  # x with log(1−q+q e^{u}) = l_pos (l_pos > log(1−q))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # e^{l} − (1 − q) = e^{l} − e^{log1mq}, in log space
            d = np.asarray(l_pos, dtype=float)
            lg = np.where(d > log1mq, d + np.log(-np.expm1(log1mq - d)), -np.inf)
            return s2 * (lg - logq) + 0.5

    def _dlse(x0, dx, sign):  # log(1−q+q e^{u(x0+sign dx)}) − log(1−q+q e^{u(x0)})
        with np.errstate(over="ignore", invalid="ignore"):
            lu0 = logq + _u(x0)
            frac = np.exp(lu0 - _lse(x0))  # q e^{u0}/(1−q+q e^{u0}) in (0, 1)
            return np.log1p(frac * np.expm1(sign * dx / s2))

    def _log_pdf_mu0(x):
        return -0.5 * (x / sigma) ** 2 - _LOG_SQRT_2PI - math.log(sigma)

    def _log_pdf_mu(x):
        return np.logaddexp(log1mq + _log_pdf_mu0(x), logq + _log_pdf_mu0(x - 1.0))

    x_lo, x_hi = -_SPAN * sigma, 1.0 + _SPAN * sigma
    if direction == "remove":
        piece = Piece(
            x_lo=x_lo,
            x_hi=x_hi,
            increasing=True,
            loss=_lse,
            x_of_loss=_x_of,
            dloss=lambda x0, dx: _dlse(x0, dx, 1.0),
            log_pdf=_log_pdf_mu,
            scale=sigma,
            tilt_rate=1.0,
        )

        def sf_above(b):  # P_mu(x > x(b))
            xb = float(_x_of(b))
            return _log_mix_sf([xb / sigma, (xb - 1.0) / sigma], [1.0 - q, q])

        return LossModel(
            name=f"sgm-remove(q={q:g},sigma={sigma:g})",
            piece=piece,
            loss_min=log1mq,
            log_sf_above=sf_above,
            log_cdf_below=lambda a: -math.inf if a <= log1mq else _log_mix_cdf(float(_x_of(a)), sigma, q),
        )

    piece = Piece(
        x_lo=x_lo,
        x_hi=x_hi,
        increasing=False,
        loss=lambda x: -_lse(x),
        x_of_loss=lambda v: _x_of(-np.asarray(v, dtype=float)),
        dloss=lambda x0, dx: -_dlse(x0, dx, -1.0),
        log_pdf=_log_pdf_mu0,
        scale=sigma,
        tilt_rate=1.0,
    )
    return LossModel(
        name=f"sgm-add(q={q:g},sigma={sigma:g})",
        piece=piece,
        loss_max=-log1mq,
        # L > b  <=>  x < x(b);  L < a  <=>  x > x(a)
        log_sf_above=lambda b: -math.inf if b >= -log1mq else log_normal_sf(-float(_x_of(-b)) / sigma),
        log_cdf_below=lambda a: 0.0 if a >= -log1mq else log_normal_sf(float(_x_of(-a)) / sigma),
    )


def _log_mix_cdf(x: float, sigma: float, q: float) -> float:
    """Upper bound on ``log P_mu(X < x)`` for μ = (1−q)N(0,σ²) + qN(1,σ²)."""
    return _log_mix_sf([-x / sigma, (1.0 - x) / sigma], [1.0 - q, q])
