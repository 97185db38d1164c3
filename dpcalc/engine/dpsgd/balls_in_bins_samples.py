"""DP-SGD with balls-in-bins batches: the Monte-Carlo sample sets of the dominating pair, conditioned on
rare events, drawn in batches and kept as counts on a fixed grid of losses, and their upper confidence bounds
on δ(ε) (docs/math.md §3.9).

Each epoch has ``m`` steps and every example goes to one of them uniformly at random, independently;
add/remove-one neighbours, sensitivity 1, noise σ.  Chua, Ghazi, Harrison, Leeman, Kamath, Kumar,
Manurangsi, Sinha & Zhang 2025 (AISTATS, "Balls-and-Bins Sampling for DP-SGD", arXiv:2412.16802,
the dominating pair of ABLQ_B) show that one epoch is tightly dominated by

    P = (1/m) Σ_i N(e_i, σ² I_m)   versus   Q = N(0, σ² I_m),

with δ(ε) = max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)).  ``epochs`` independent epochs compose: the remove direction
is the pair (P^K, Q^K), the add direction (Q^K, P^K).  With ℓ(x) = log((1/m) Σ_i exp((2x_i − 1)/(2σ²)))
(the loss log dP/dQ, symmetric in the coordinates, so the ball can be put in coordinate 0 of every epoch),

    δ_remove(ε) = E_{x~P^K}[(1 − e^{ε − Σ_k ℓ(x_k)})_+],   δ_add(ε) = E_{x~Q^K}[(1 − e^{ε + Σ_k ℓ(x_k)})_+].

Each term lies in [0, 1].  The upper confidence bound is the Chernoff–Hoeffding bound in KL form
(Hoeffding 1963, Thm 1; the bound the paper uses): for n i.i.d. [0,1]-valued terms with mean
μ, P(mean ≤ a) ≤ exp(−n·kl(a‖μ)) for a < μ, so U = max{μ : n·kl(mean‖μ) ≤ log(1/α)} is >= μ with
probability >= 1 − α, and U is non-decreasing in the empirical mean.

Rare-event conditioning (in the spirit of the paper's importance sampling, made exact; the events, their
bounds and the exact samplers: :mod:`dpcalc.engine.dpsgd.balls_in_bins_conditioning`): the mean is taken
under the law conditioned on an event E whose probability p(E) is known in closed form, and the part of δ
outside E is bounded deterministically — remove: some coordinate of some epoch above a threshold t
(Bennett's inequality off it, β(ε)); add, one epoch: an exponential tilt by λ (the weighted terms in [0, B]);
add, several epochs: a Gaussian event on the grand mean, valid for ε >= g₀.  p(E), t, λ and g₀ are fixed
before sampling (:func:`plan`), so the bound keeps its confidence.

**Batches and streams.**  The samples of a direction are drawn in batches whose size depends on the
configuration only (:func:`batch_rows`: the run's steps and the number of samples, never the processes), batch
``j`` of direction ``d`` (0 remove, 1 add) from ``numpy.random.default_rng(SeedSequence(seed,
spawn_key=(d, j)))``.  A batch returns counts, not losses
(:class:`~dpcalc.engine.dpsgd.balls_in_bins_counts.LossCounts`), and the counts of the batches are added as
integers, so the bound for a seed is the same bit for bit whichever ``mapper`` ran the batches (in this
process, on a pool, on a cluster) and in whatever order, and memory does not grow with the samples.

**The grid of losses** (:mod:`dpcalc.engine.dpsgd.balls_in_bins_counts`, fixed before sampling): each
sample's term is replaced by the term at the upper edge of its loss's bin, raised by an allowance for the
floating-point error of the loss — a value at least as large, so the bound keeps its confidence, and the ε
found is higher by a hair, never lower.

For a fixed sample set every term is non-increasing in ε, and so are β(ε) and the conditioning, so the
upper bound U(ε) is non-increasing in ε (:mod:`dpcalc.engine.dpsgd.balls_in_bins_mc` inverts it).

**Samples needed** (:meth:`Plan.floor`, :func:`samples_needed`): whatever the draws, the bound at ε is at least its
floor p(E)·(1 − (1 − c)^{1/n}) + β(ε) (B·(1 − (1 − c)^{1/n}) for the tilted add direction): the KL bound of an
empirical mean of 0.  Beyond every sampled loss the mean is 0 and the floor is the bound, so ε is finite
exactly when the floor at large ε is within δ: the sample count that certifies δ is where the floor falls to δ
— about p(E)·log(1/(1 − c))/δ, not the larger count the KL bound needs for a given relative accuracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.engine.dpsgd.balls_in_bins_conditioning import (
    _BLOCK,
    _P_MAX,
    _P_TINY,
    _add_p_event,
    _bennett_beta,
    _remove_p_event,
    _remove_plan,
    _sample_add,
    _sample_add_tilted,
    _sample_remove,
    _tilt_plan,
)
from dpcalc.engine.dpsgd.balls_in_bins_counts import (
    _ROUND,
    LossCounts,
    Merger,
    _Direction,
    _Tilted,
    bin_losses,
    kl_upper,
    sgd_allowance,
)
from dpcalc.errors import InputError

#: A batch is about this many normal draws (about 0.2 s on one core)...
BATCH_DRAWS = 2**23
#: ...of at least and at most this many samples...
BATCH_ROWS_MIN, BATCH_ROWS_MAX = 256, 2**20
#: ...and a direction has at most this many batches (larger batches for more samples).
MAX_BATCHES = 2**16
#: The most normal draws of one sample (the run's steps, K·m): held in memory at once (about 26 bytes each).
MAX_WIDTH = 2**23


def _serial(fn, items, weights=None):
    """The default mapper: ``fn`` on every item, in order, in this process."""
    return map(fn, items)


# ------------------------------------------------------------------------------------------------ batches


def batch_rows(width: float, samples: int) -> int:
    """The samples of each batch (the last one takes the rest): about :data:`BATCH_DRAWS` normal draws of
    ``width`` each, within [:data:`BATCH_ROWS_MIN`, :data:`BATCH_ROWS_MAX`], and more where ``samples`` would
    make more than :data:`MAX_BATCHES` batches.  A function of the configuration only."""
    rows = min(BATCH_ROWS_MAX, max(BATCH_ROWS_MIN, int(BATCH_DRAWS // max(width, 1.0))))
    return max(rows, -(-int(samples) // MAX_BATCHES))


def batches(samples: int, rows: int) -> list[tuple[int, int]]:
    """(index, size) of the batches of ``samples`` samples in batches of ``rows``."""
    samples, rows = int(samples), int(rows)
    return [(j, min(rows, samples - j * rows)) for j in range(-(-samples // rows))]


def stream(seed: int, direction: int, index: int) -> np.random.Generator:
    """The random stream of batch ``index`` of ``direction``: ``SeedSequence(seed, spawn_key=(direction,
    index))``, the same on any process."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(direction), int(index))))


def _binned_batch(draw, rows: int, block: int) -> LossCounts:
    """The counts of ``rows`` losses drawn ``block`` at a time by ``draw(r)``: memory of one block."""
    merger = Merger()
    for start in range(0, rows, block):
        merger.add(bin_losses(draw(min(block, rows - start))))
    return merger.result()


def _draw_batch(task) -> LossCounts:
    """One batch of one direction (a module-level function of a small tuple: cheap to send to a worker):
    ``(kind, parameters, seed, direction, index, rows)``."""
    kind, par, seed, direction, index, rows = task
    rng = stream(seed, direction, index)
    if kind == "remove":
        sigma, m, k, t = par
        return _binned_batch(
            lambda r: _sample_remove(sigma, m, k, t, r, rng), rows, max(1, _BLOCK // (k * m))
        )
    if kind == "add":
        sigma, m, k, g0 = par
        return _binned_batch(lambda r: _sample_add(sigma, m, k, g0, r, rng), rows, max(1, _BLOCK // (k * m)))
    sigma, m, lam = par  # tilted: the losses log(m/S)
    with np.errstate(divide="ignore"):
        return _binned_batch(
            lambda r: math.log(m) - np.log(_sample_add_tilted(sigma, m, lam, r, rng)),
            rows,
            max(1, _BLOCK // (2 * m)),
        )


def run_batches(tasks, mapper=None) -> dict:
    """Run the batch ``tasks`` (tuples of :func:`_draw_batch`) through ``mapper`` (default: in this process,
    in order) and merge each direction's counts: {direction: LossCounts}.  The merge is exact, so the result
    does not depend on the mapper."""
    mapper = mapper or _serial
    tasks = list(tasks)
    merged: dict = {}
    results = mapper(_draw_batch, tasks, [t[-1] for t in tasks])
    for task, part in zip(tasks, results):
        merged.setdefault(task[3], Merger()).add(part)
    return {d: mg.result() for d, mg in merged.items()}


def check_width(width: float) -> None:
    """Refuse a sample of more than :data:`MAX_WIDTH` normal draws (one sample is held in memory at once)."""
    if width > MAX_WIDTH:
        raise InputError(
            f"balls-in-bins Monte Carlo: one sample of {width:.0f} steps (epochs × steps per epoch) needs "
            f"{width:.3g} normal draws held in memory at once, more than {MAX_WIDTH:.3g}; use --method rdp or pld"
        )


# ------------------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """The conditioning of both directions, fixed before sampling (module doc): the remove threshold ``t``
    (inf: none) and the add sampler (``add``: 'tilted' with ``lam``, ``log_b``; 'conditioned' with ``p_add``;
    'tiny' when the add loss cannot pass g₀ but with probability below :data:`_P_TINY`; 'plain'); ``g0`` the
    add direction's validity start."""

    sigma: float
    m: int
    k: int
    t: float
    add: str
    g0: float
    lam: float = 0.0
    log_b: float = 0.0
    p_add: float = 1.0

    @property
    def width(self) -> int:
        return self.k * self.m

    def p_remove(self) -> float:
        return float(_remove_p_event(self.sigma, self.m, self.k, self.t)) if math.isfinite(self.t) else 1.0

    def beta(self):
        """β(ε) of the remove direction."""
        if math.isfinite(self.t):
            return lambda e, s=self.sigma, m=self.m, k=self.k, t=self.t: _bennett_beta(s, m, k, t, e)
        return lambda e: 0.0 * np.asarray(e, dtype=float)

    def tasks(self, samples: int, seed: int) -> list[tuple]:
        """The batches of both directions (:func:`_draw_batch`'s tuples)."""
        rows = batch_rows(self.width, samples)
        out = [
            ("remove", (self.sigma, self.m, self.k, self.t), seed, 0, j, r) for j, r in batches(samples, rows)
        ]
        if self.add == "tilted":
            par, kind = (self.sigma, self.m, self.lam), "tilted"
        elif self.add == "tiny":
            return out
        else:
            par, kind = (
                (self.sigma, self.m, self.k, self.g0 if self.add == "conditioned" else math.inf),
                "add",
            )
        return out + [(kind, par, seed, 1, j, r) for j, r in batches(samples, rows)]

    def directions(self, counts: dict, samples: int):
        """The two directions' bounds from the merged counts of :meth:`tasks`' batches."""
        allowance = sgd_allowance(self.sigma, self.m, self.k)
        rem = _Direction(counts[0], self.p_remove(), self.beta(), -math.inf, allowance)
        if self.add == "tilted":
            add = _Tilted(counts[1], self.m, self.lam, self.log_b, self.g0, allowance)
        elif self.add == "tiny":  # the add loss passes g0 with probability below _P_TINY: that is its bound
            none = LossCounts(np.zeros(0, np.int64), np.zeros(0, np.int64), int(samples), 0)
            add = _Direction(none, _P_TINY, lambda e: 0.0 * e, self.g0, allowance)
        elif self.add == "conditioned":
            add = _Direction(counts[1], self.p_add, lambda e: 0.0 * e, self.g0, allowance)
        else:
            add = _Direction(counts[1], 1.0, lambda e: 0.0 * e, -math.inf, allowance)
        return rem, add

    def floor(self, samples: int, confidence: float) -> float:
        """The least bound at any one ε, whatever the draws, with ``samples`` samples (module doc): the larger
        direction's floor, the remove direction's p(E)·kl_upper(0) + β(ε) at its smallest over a grid of ε
        (β decreases in ε; its numerical form is 1 where e^{ε/K} overflows, so the grid stops at 700·K)."""
        kl0 = float(kl_upper(0.0, samples, confidence))
        add = {
            "tilted": math.exp(self.log_b) * kl0,
            "tiny": _P_TINY * kl0,
            "conditioned": self.p_add * kl0,
            "plain": kl0,
        }[self.add]
        grid = np.concatenate((np.linspace(0.0, 50.0, 501), np.geomspace(50.0, 700.0 * self.k, 200)))
        grid = np.concatenate(([max(self.g0, 0.0)], grid[grid >= self.g0]))
        rem = self.p_remove() * kl0 + float(np.min(np.asarray(self.beta()(grid), dtype=float)))
        return min(1.0, max(rem, add))


def plan(sigma, m, k, eps_ref, n, confidence, delta_target=None) -> Plan:
    """The conditioning of both directions for ``n`` samples (module doc), chosen from ``eps_ref`` (and the
    δ aimed at) before any draw: only the tightness depends on it, never the validity."""
    t = _remove_plan(sigma, m, k, eps_ref, n, confidence, delta_target)
    g0 = max(float(eps_ref), 0.0)
    if k == 1 and m > 1:
        lam, log_b = _tilt_plan(sigma, m, g0)
        if log_b < math.log(_P_MAX):
            return Plan(sigma, m, k, t, "tilted", g0, lam=lam, log_b=log_b)
    p_add = _add_p_event(sigma, m, k, g0)
    if p_add < _P_TINY:
        return Plan(sigma, m, k, t, "tiny", g0)
    if p_add < _P_MAX:
        return Plan(sigma, m, k, t, "conditioned", g0, p_add=p_add)
    return Plan(sigma, m, k, t, "plain", -math.inf)


def _directions(sigma, m, k, eps_ref, n, confidence, seed, delta_target=None, mapper=None):
    """The two directions' bounds from ``n`` samples each, drawn in batches through ``mapper`` (module doc)."""
    check_width(k * m)
    p = plan(sigma, m, k, eps_ref, n, confidence, delta_target)
    return p.directions(run_batches(p.tasks(n, seed), mapper), n)


def samples_for_floor(delta, confidence, scale=1.0, beta=0.0) -> float:
    """The least n with scale·(1 − (1 − c)^{1/n})·(1 + rounding) + beta <= δ (:func:`kl_upper` of a mean of 0,
    the floor of the module doc), checked against :func:`kl_upper` itself; inf when no n gives it."""
    room = (float(delta) - float(beta)) / float(scale)
    if not room > 0:
        return math.inf
    lia = -math.log1p(-float(confidence))
    n = math.ceil(lia / -math.log1p(-min(room / (1.0 + 4 * _ROUND), 1.0 - 1e-16)))
    for _ in range(64):
        if scale * float(kl_upper(0.0, n, confidence)) + beta <= delta:
            return float(n)
        n = math.ceil(n * 1.001) + 1
    return math.inf


def samples_needed(sigma, m, k, eps_ref, delta, confidence, start) -> float:
    """The least number of samples per direction (from ``start`` on, searched by doubling then bisection) whose
    floor, with the conditioning :func:`plan` chooses for that number, is within ``delta``: below it ε is
    inf whatever the draws; from it on the bound can certify ``delta`` (module doc).  inf if no number below
    2^200 does."""

    def ok(n):
        return plan(sigma, m, k, eps_ref, n, confidence, delta).floor(n, confidence) <= delta

    lo, hi = int(start), max(int(start), 2)
    for _ in range(200):
        if ok(hi):
            break
        lo, hi = hi, hi * 2
    else:
        return math.inf
    while hi - lo > max(1, hi // 1000):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return float(hi)
