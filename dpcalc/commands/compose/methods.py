"""The methods of ``dpcalc compose`` (docs/math.md §2, §7): each turns a list of parsed mechanisms and an
array of targets into a bound per target, or says why it does not apply.

Each method is one entry of :data:`METHODS` (name -> function); a function returns, for an array of
targets (δ values when ε is asked, or ε values when δ is asked), the bound per target and a note per
target, or ``None`` and the reason the method does not apply.  Formulas live in the engine
(:mod:`dpcalc.engine.composition`, :mod:`dpcalc.engine.mechanisms`, :mod:`dpcalc.engine.pld`,
:mod:`dpcalc.engine.conversion`).  :func:`dpcalc.commands.compose.command.compose` picks among them (and
:func:`dpcalc.commands.compose.calibration.calibrate` searches with them); the work of the command's
tables (their pieces and work estimates) and the neighbouring relations of a list of specs are here too,
shared by every compose question.
"""

from __future__ import annotations

import math

import numpy as np

from dpcalc.engine.composition import theorems as composition
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.composition.theorems import at_least
from dpcalc.engine.composition.tuning import tuned_rdp
from dpcalc.engine.conversion import methods as conversions
from dpcalc.engine.mechanisms import gaussian_exact as gaussian
from dpcalc.engine.mechanisms.catalogue import (
    float_up,
    gaussian_r2,
    max_loss,
    mechanism,
    per_release_dp,
    rdp_refusal,
    rdp_work_refusal,
    relations,
    total_rdp,
)
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.pld import profile
from dpcalc.engine.pld.grid import RDP_HINT
from dpcalc.errors import InputError

# Each takes (specs, want_eps, targets: np.ndarray, opts: dict) and returns
# (values | None, notes | reason, extra); opts holds eps_error and strict (for pld).
# ε at δ = 0 (docs/math.md §2.7) is the largest privacy loss of the composition, Σ ε_i over releases whose
# loss is bounded, and ∞ (with the reason) otherwise: every method that applies answers it so (_at_zero).


def _zero(want_eps, targets):
    """The mask of the targets where ε is asked at δ = 0."""
    return (targets == 0) if want_eps else np.zeros(targets.shape, bool)


def _zero_beyond_max_loss(specs, epsilons, values) -> None:
    """δ = 0 in ``values`` (an array, one per ε of ``epsilons``) wherever ε is at least the largest privacy
    loss Σ count·ε_i, compared exactly in the decimals given (docs/math.md §2.7)."""
    top, _ = max_loss(specs)
    for i, t in enumerate(epsilons):
        if top is not None and at_least(float(t), top):
            values[i] = 0.0


def _at_zero(specs, zero, values, notes, how):
    """``values`` and ``notes`` (lists, one per target) with the rows at δ = 0 filled in: the largest
    privacy loss Σ count·ε_i (exact, rounded up; ``how`` says why this method gives it), or ``inf`` and
    the reason where a release's loss is unbounded (Dwork & Roth 2014, Thm 3.16; docs/math.md §2.7)."""
    values = list(values)
    notes = [notes] * len(values) if isinstance(notes, str) else list(notes)
    if zero.any():
        top, reason = max_loss(specs)
        for i in zero.nonzero()[0]:
            values[i] = math.inf if top is None else float_up(top)
            notes[i] = f"{reason}: no finite ε at δ = 0" if top is None else how
    return values, notes


def _exact(specs, want_eps, targets, opts):
    r2 = gaussian_r2(specs)
    if r2 is None:
        return None, "only for compositions of plain gaussian specs", {}
    r = float(np.sqrt(r2))
    zero = _zero(want_eps, targets)
    values = np.full(targets.shape, np.nan)
    if want_eps:
        values[~zero] = gaussian.eps_gaussian(targets[~zero], r)
    else:
        values = np.atleast_1d(gaussian.delta_gaussian(targets, r))
    note = f"one Gaussian with sensitivity/sigma = {r:.6g}"
    return (*_at_zero(specs, zero, values, note, note), {})


EDGE_NOTE = "best order at the edge of the grid"
_INF_ORDER_NOTE = "order α = ∞: the largest privacy loss, the sum of the pure ε"
_NO_LOSS_ABOVE = "ε >= the largest privacy loss: δ = 0"


def _rdp(specs, want_eps, targets, opts):
    for s in specs:
        if (refusal := rdp_refusal(s)) is not None:
            return None, refusal, {}
    if (refusal := rdp_work_refusal(specs)) is not None:
        return None, refusal, {}
    curve = total_rdp(specs, DEFAULT_ORDERS)
    tuning = opts.get("tuning")
    if tuning is not None:  # best of K runs of the whole composition (docs/math.md §2.10)
        return _rdp_tuned(curve, want_eps, targets, tuning)
    return rdp_rows(specs, curve, want_eps, targets)


def rdp_rows(specs, curve, want_eps, targets, head: str = ""):
    """The rdp method's rows from the summed Rényi ``curve`` at :data:`DEFAULT_ORDERS` (optimal conversion),
    the order α = ∞ read from the largest privacy loss of ``specs``; ``head`` starts every note."""
    fn = conversions.eps_from_curve if want_eps else conversions.delta_from_curve
    bound = fn(DEFAULT_ORDERS, curve, targets, method="optimal")
    values = np.atleast_1d(np.asarray(bound.value, float))
    alphas = np.atleast_1d(np.asarray(bound.alpha, float))
    edge = np.atleast_1d(np.asarray(bound.at_edge))
    notes = [head + (EDGE_NOTE if e else "optimal conversion over 225 orders") for e in edge]
    # the order α = ∞: D_∞ is the largest privacy loss, Σ ε_i where every loss is bounded (docs/math.md §2.7);
    # a finite grid of orders cannot certify δ = 0 by itself
    zero = _zero(want_eps, targets)
    values, notes = _at_zero(specs, zero, values, notes, head + _INF_ORDER_NOTE)
    alphas = [math.inf if z and math.isfinite(v) else a for z, v, a in zip(zero, values, alphas)]
    if not want_eps:  # δ = 0 at every ε >= D_∞
        top, _ = max_loss(specs)
        for i, t in enumerate(targets):
            if top is not None and at_least(float(t), top):
                values[i], alphas[i], notes[i] = 0.0, math.inf, f"{head}order α = ∞: {_NO_LOSS_ABOVE}"
    return values, notes, {"alpha": [None if np.isnan(a) else float(a) for a in alphas]}


#: The note of a method other than rdp under --tuning-runs.
TUNING_REFUSAL = "does not apply with --tuning-runs (an RDP bound)"


def _rdp_tuned(curve, want_eps, targets, tuning):
    """The rdp method under ``--tuning-runs``: the composition is the base algorithm Q, run K times with the
    best output released; its curve becomes the tuned algorithm's (Papernot & Steinke 2022, Thm 2 or Thm 6;
    :func:`dpcalc.engine.composition.tuning.tuned_rdp`), converted by the optimal conversion.  At δ = 0 no
    pure-ε bound is given (ε = inf): the theorems are RDP bounds, and the grid of orders is finite."""
    tuned = tuned_rdp(DEFAULT_ORDERS, curve, tuning, "optimal")
    fn = conversions.eps_from_curve if want_eps else conversions.delta_from_curve
    bound = fn(DEFAULT_ORDERS, tuned, targets, method="optimal")
    values = np.atleast_1d(np.asarray(bound.value, float))
    alphas = np.atleast_1d(np.asarray(bound.alpha, float))
    edge = np.atleast_1d(np.asarray(bound.at_edge))
    head = tuning.note()
    notes = [f"{head}; " + (EDGE_NOTE if e else "optimal conversion over 225 orders") for e in edge]
    zero = _zero(want_eps, targets)
    for i in zero.nonzero()[0]:
        values[i], alphas[i] = math.inf, np.nan
        notes[i] = f"{head}; δ = 0: no pure-ε bound (the tuning theorems are RDP bounds), ε = inf"
    return values, notes, {"alpha": [None if np.isnan(a) else float(a) for a in alphas]}


def _per_release(specs):
    """(eps, delta, counts) arrays of every spec, or (None, reason)."""
    pairs = []
    for s in specs:
        pair, reason = _per_release_dp(s)
        if pair is None:
            return None, reason
        pairs.append((pair[0], pair[1], s.count))
    return pairs, None


def _per_release_dp(spec):
    return per_release_dp(spec)


def _optimal(specs, want_eps, targets, opts):
    pairs, reason = _per_release(specs)
    if pairs is None:
        return None, reason, {}
    if len({(e, d) for e, d, _ in pairs}) > 1:
        return None, "mechanisms differ: exact composition is for identical (epsilon, delta) only", {}
    eps, delta, _ = pairs[0]
    k = sum(c for _, _, c in pairs)
    if k > composition.KOV_MAX_COUNT:
        return None, f"total count {k} above {composition.KOV_MAX_COUNT}", {}
    if not k * eps < 1e300:
        return None, "count*epsilon overflows", {}
    fn = composition.kov_eps if want_eps else composition.kov_delta
    zero = _zero(want_eps, targets)
    values = np.full(targets.shape, np.nan)
    values[~zero] = np.atleast_1d(np.asarray(fn(eps, delta, k, targets[~zero]), float))
    note = f"Kairouz-Oh-Viswanath, k = {k}"
    if not want_eps:  # δ(ε_g) = 0 exactly for ε_g >= kε when δ = 0 (the i = 0 point)
        _zero_beyond_max_loss(specs, targets, values)
    return (*_at_zero(specs, zero, values, note, f"{note}: kε at δ = 0"), {})


def _advanced(specs, want_eps, targets, opts):
    pairs, reason = _per_release(specs)
    if pairs is None:
        return None, reason, {}
    eps, delta, counts = (np.array(x, float) for x in zip(*pairs))
    e_basic, d_basic = composition.basic(eps, delta, counts)
    if want_eps:
        values = np.atleast_1d(np.asarray(composition.advanced_eps(eps, delta, counts, targets), float))
        short = targets <= d_basic
        notes = [
            f"needs --delta above sum of deltas = {d_basic!r}"
            if low
            else ("basic is smaller" if v >= e_basic * (1 - 1e-15) else "Dwork-Rothblum-Vadhan")
            for v, low in zip(values, short)
        ]
        values = [None if low else float(v) for v, low in zip(values, short)]
        # δ = 0: min(basic, advanced) is basic's Σε (advanced needs δ > Σδ_i), or ∞
        values, notes = _at_zero(specs, _zero(want_eps, targets), values, notes, "basic is smaller")
    else:
        values = np.atleast_1d(np.asarray(composition.advanced_delta(eps, delta, counts, targets), float))
        notes = ["basic is smaller" if t >= e_basic else "Dwork-Rothblum-Vadhan" for t in targets]
        # min(basic, advanced): basic's Σδ_i wherever ε >= Σε_i exactly (1 + 2 <= 3, as basic decides it)
        given = composition.exact_sum(eps, counts)
        for i, t in enumerate(targets):
            if composition.at_least(float(t), given) and d_basic <= values[i]:
                values[i], notes[i] = d_basic, "basic is smaller"
    return values, notes, {}


def _basic(specs, want_eps, targets, opts):
    pairs, reason = _per_release(specs)
    if pairs is None:
        return None, reason, {}
    eps, delta, counts = zip(*pairs)
    e_basic, d_basic = composition.basic(eps, delta, counts)
    # the boundary is decided on the exact sums of the decimals given (1 + 2 <= 3 holds); the values
    # reported are the sums rounded up
    given = composition.exact_sum(delta, counts) if want_eps else composition.exact_sum(eps, counts)
    ok = [composition.at_least(float(t), given) for t in targets]
    if want_eps:
        values = [e_basic if o else None for o in ok]
        notes = ["" if o else f"needs --delta >= sum of deltas = {d_basic!r}" for o in ok]
        zero = _zero(want_eps, targets) & ~np.array(ok)  # δ = 0 below Σδ_i: the loss is unbounded, ε = ∞
        values, notes = _at_zero(specs, zero, values, notes, "")
    else:
        values = [d_basic if o else None for o in ok]
        notes = ["" if o else f"needs --epsilon >= sum of epsilons = {e_basic!r}" for o in ok]
    return values, notes, {}


def _pld(specs, want_eps, targets, opts):
    """Tight numerical composition of privacy loss distributions, with a certified bracket
    (``dpcalc.engine.composition.pld``: pessimistic / optimistic discretisation, FFT composition)."""
    try:
        b = compose_pld(
            specs,
            **({"delta": targets} if want_eps else {"epsilon": targets}),
            eps_error=opts.get("eps_error"),
        )
    except InputError as exc:
        message = str(exc).replace(RDP_HINT, "--method rdp")
        if opts.get("strict"):  # --method pld alone: a refusal is an error, not a row
            raise InputError(message) from None
        return None, message, {}
    lower, est, upper = (np.atleast_1d(np.asarray(x, float)) for x in b)
    note = "privacy loss distributions: certified [lower, upper]"
    dominated = pld_dominated(specs)
    if dominated:  # the engine left the lower end and the estimate out (nan): they would be of the models
        lower, est = np.full(lower.shape, np.nan), np.full(est.shape, np.nan)
        note = f"privacy loss distributions: certified upper bound ({PLD_DOMINATED}: {'; '.join(dominated)})"
    # δ = 0 (compose_pld): the bracket is the largest privacy loss itself, or [inf, inf]
    _, notes = _at_zero(
        specs,
        _zero(want_eps, targets),
        upper,
        note,
        "privacy loss distributions at δ = 0: the largest privacy loss, Σ count·ε",
    )
    if not want_eps:
        top, _ = max_loss(specs)
        if top is not None:
            notes = [_NO_LOSS_ABOVE if at_least(float(t), top) else n for t, n in zip(targets, notes)]
    return upper, notes, {"lower": lower, "estimate": est}


#: What a pld row's note says where some spec's loss models only dominate it (:func:`pld_dominated`).
PLD_DOMINATED = "no lower end or estimate: the bracket is of models that dominate the mechanism"


def pld_dominated(specs) -> list[str]:
    """``"SPEC: what its models are"`` for each spec whose privacy loss models only dominate it (a pair no
    instance of it attains: :meth:`~dpcalc.engine.mechanisms.base.Mechanism.pld_dominated`); a composition
    with one has a certified upper end, and no lower end or estimate of its own."""
    out = []
    for s in specs:
        why = mechanism(s.kind, s.params).pld_dominated(s.params)
        if why:
            out.append(f"{s.text or s.kind}: {why}")
    return out


#: The work of compose's tables (issue 40): many targets are computed, not refused.  A table of targets is cut
#: into pieces (:func:`pieces`) fixed by the work alone, never by the processes, spread over the cores
#: (:func:`dpcalc.commands.sweep.run`) and put back in order.  Up to these many targets a method's targets are
#: one piece, computed exactly as before the pieces existed (they were the limits of a table): the targets
#: of one --delta/--epsilon (:data:`ONE_PIECE`), of the pld method (:data:`PLD_ONE_PIECE`: many ε share one
#: composition, so a piece of ε is a batch; past it, batches of this many), of --fpr (:data:`FPR_ONE_PIECE`;
#: pld: :data:`PLD_FPR_ONE_PIECE`, a refined profile a piece) and of the dp-group route
#: (:data:`DP_GROUP_ONE_PIECE`, a search each).
ONE_PIECE = 500
PLD_ONE_PIECE = 100
FPR_ONE_PIECE = 1000
PLD_FPR_ONE_PIECE = 10
DP_GROUP_ONE_PIECE = 10
#: The CPU seconds (one core) a piece of a larger table is cut to, where its targets are independent.
PIECE_SECONDS = 1.0

#: Measured CPU seconds on one core (2-core shared machine, ``time.process_time`` around each method's
#: function on 1, 20 and 100-1000 targets, kinds gaussian, laplace, randomized-response, dp and
#: subsampled-gaussian with count 100-1000), rounded up with a margin of about 1.5: per target, and per piece
#: (what a piece costs whatever its targets, e.g. the Rényi curve).  pld per target and per distinct spec
#: (after merging; plain Gaussians are one): a subsampled one costs :data:`PLD_SUBSAMPLED_SECONDS`
#: (measured 0.04-0.09 s an ε of a batch, 0.08-0.23 s a δ), any other :data:`PLD_SPEC_SECONDS` (0.001-0.03 s);
#: optimal per target and per release of the homogeneous count k (measured 0.12 s a δ at k = 10^6).
TARGET_SECONDS = {
    "exact": 2e-5,
    "rdp": 0.012,
    "optimal": 1e-3,
    "advanced": 2e-5,
    "basic": 2e-5,
    "rdp-group": 0.012,
    "dp-group": 1.0,  # a search of up to 26 example-level bounds at one δ (measured 0.15-0.9 s)
}
PIECE_FIXED_SECONDS = {"rdp": 0.08, "rdp-group": 0.15, "pld": 0.02}
PLD_SPEC_SECONDS = 0.025
PLD_SUBSAMPLED_SECONDS = 0.15
OPTIMAL_RELEASE_SECONDS = 2e-7


def _subsampled(spec) -> bool:
    return "q" in spec.params or spec.kind in ("subsampled-gaussian", "random-allocation", "mixture-gaussian")


def pld_target_seconds(specs) -> float:
    """The estimated CPU seconds of one pld target (a δ, or an ε of a batch) of the composition ``specs``."""
    sub = [_subsampled(s) for s in specs]
    plain = [s.kind == "gaussian" and not u for s, u in zip(specs, sub)]  # all merge into one distribution
    others = [u for u, p in zip(sub, plain) if not p]  # each its own: subsampled or not
    return (
        PLD_SPEC_SECONDS * (any(plain) + sum(not u for u in others)) + PLD_SUBSAMPLED_SECONDS * sum(others)
    ) or PLD_SPEC_SECONDS


def target_seconds(name: str, specs, want_eps: bool) -> float:
    """The estimated CPU seconds of one target of method ``name`` (one core)."""
    if name == "pld":
        return pld_target_seconds(specs)
    if name == "optimal":
        releases = min(sum(s.count for s in specs), composition.KOV_MAX_COUNT)  # above it: does not apply
        return TARGET_SECONDS["optimal"] + OPTIMAL_RELEASE_SECONDS * releases
    if name == "dp-group" and not want_eps:  # δ at ε/K: the example-level methods at once, no search
        return 0.1
    return TARGET_SECONDS.get(name, 1e-3)


def pieces(n: int, one_piece: int, seconds_each: float, batch: bool = False) -> list[tuple[int, int]]:
    """``[(lo, hi), ...]``: the pieces of ``n`` targets — one up to ``one_piece`` targets; past it, pieces of
    ``one_piece`` (``batch``: the targets of a piece are computed together) or of about
    :data:`PIECE_SECONDS` of work (independent targets of ``seconds_each``).  The work decides them, never the
    number of processes, so the rows are the same however they run."""
    if n <= one_piece:
        return [(0, n)]
    size = one_piece if batch else max(1, int(PIECE_SECONDS / seconds_each))
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


def fresh_profiles() -> None:
    """Forget the pld privacy profiles kept for reuse (:mod:`dpcalc.engine.pld.profile`): a piece of a table
    computed after another in the same process would read the other's shared grid, and its rows would depend
    on where it ran."""
    profile._CACHE.clear()


#: Name -> method, in the order ``--method all`` shows them; ``best`` picks among them.  Adding a method
#: is one entry here: a function ``(specs, want_eps, targets, opts) -> (values, notes, extra)``; ``extra`` may
#: hold ``alpha`` (the best order) and ``lower``/``estimate`` (where ``values`` is the upper end of a bracket).
METHODS = {
    "exact": _exact,
    "pld": _pld,
    "rdp": _rdp,
    "optimal": _optimal,
    "advanced": _advanced,
    "basic": _basic,
}
METHOD_ORDER = tuple(METHODS)


def check_relations(specs) -> None:
    """Poisson (add/remove-one) and fixed-size (replace-one) bounds do not compose into one statement."""
    if len(relations(specs)) > 1:
        raise InputError(
            "MECHANISM: subsampled specs mix sampling=poisson (add/remove-one neighbours) and "
            "sampling=fixed-size (replace-one neighbours); no single guarantee covers both: compose them separately"
        )


def relation_caption(specs) -> str:
    samplings = relations(specs)
    if samplings == {"poisson"} and any(s.kind == "random-allocation" for s in specs):
        return "; neighbours: add/remove-one (Poisson sampling or random allocation)"
    if samplings == {"poisson"}:
        return "; neighbours: add/remove-one (Poisson sampling)"
    if samplings == {"fixed-size"}:
        return "; neighbours: replace-one (fixed-size sampling)"
    if any(s.kind == "tree-aggregation" for s in specs):
        return "; neighbours: add/remove-one, in at most one leaf per epoch (tree-aggregation, sensitivity 1)"
    if any(s.kind == "exponential" for s in specs):
        return (
            "; exponential: ε-bounded range (Durfee & Rogers 2019), its Rényi curve and PLD pair the worst "
            "generalised randomized response (Dong, Durfee & Rogers 2020), adaptive composition"
        )
    return ""
