"""DP-SGD's largest sample rate (or batch size) within a target ε (docs/math.md §3; the forward
accounting is :mod:`dpcalc.engine.dpsgd.accounting`).

With the number of steps fixed, ε grows with the sample rate q (more of each example's updates are
seen; Mironov, Talwar & Zhang 2019).  With the number of *epochs* fixed the run has ceil(E/q) steps,
fewer as q grows, and ε still grows with q in practice (ε ≈ q·sqrt(T) ∝ sqrt(qE) for small q).
Conservative by construction: ε was computed at the rate returned and found within the target, and at
the rate one tolerance step above (or one batch more) and found above it.
"""

from __future__ import annotations

import warnings

import numpy as np

from dpcalc.engine.dpsgd._multisect import multisect
from dpcalc.engine.dpsgd.accounting import check_whole, epsilon
from dpcalc.errors import DpcalcWarning

#: The smallest sample rate searched (below it a run of any practical length sees no example twice).
Q_MIN = 1e-12


def _steps(x, epochs, n, whole: bool):
    """Steps of a run of ``epochs`` at rate (or batch size) ``x``: ceil(E/q) = ceil(E·N/B), at least 1
    (the arithmetic of the forward command's ``--epochs``)."""
    ratio = epochs * n / x if whole else epochs / x
    return np.maximum(np.ceil(ratio), 1.0)


def max_sample_rate(
    sigma, steps, delta, target, *, epochs=None, dataset_size=None, accountant="rdp", rtol=1e-4, **kw
):
    """Largest q in (0, 1] (within a factor 1 + rtol) with ε(q, σ, T, δ) <= target, vectorised over the
    broadcast inputs; with ``dataset_size`` N the largest batch size B in [1, N] (returned as q = B/N).
    Give ``steps`` T, or ``epochs`` E (then T = ceil(E/q)).  Returns ``(q, ε at q)``; q = 0 (ε nan)
    where even the smallest rate misses the target."""
    whole = dataset_size is not None
    if epochs is None:
        check_whole(steps, "steps")
    if whole:
        check_whole(dataset_size, "dataset_size", 1.0)
    length = epochs if epochs is not None else steps
    arrays = [sigma, length, delta, target] + ([dataset_size] if whole else [])
    arrays = np.broadcast_arrays(*(np.asarray(a, float) for a in arrays))
    shape = arrays[0].shape
    sf, lf, df, ef = (a.reshape(-1) for a in arrays[:4])
    nf = arrays[4].reshape(-1) if whole else None
    n_rows = sf.size
    lo_end = np.ones(n_rows) if whole else np.full(n_rows, Q_MIN)
    hi_end = nf.copy() if whole else np.ones(n_rows)
    kw = {k: v for k, v in kw.items() if k != "dataset_size"}

    def eps_at(x, rows):
        """ε at rate / batch size ``x`` (shape (len(rows), m))."""
        n = nf[rows, None] if whole else None
        q = x / n if whole else x
        if epochs is None:
            t = np.broadcast_to(lf[rows, None], x.shape)
        else:
            t = _steps(x, lf[rows, None], n, whole)
        extra = {"dataset_size": n} if whole and "dataset_size" in _NEEDS_N.get(accountant, ()) else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DpcalcWarning)
            return epsilon(accountant, q, sf[rows, None], t, df[rows, None], **kw, **extra).epsilon

    rows = np.arange(n_rows)
    ends = eps_at(np.stack([lo_end, hi_end], axis=1), rows)
    none_ok = ~(ends[:, 0] <= ef)
    all_ok = ends[:, 1] <= ef

    def too_much(x, active):
        out = np.zeros(x.shape, dtype=bool)
        r = np.nonzero(active)[0]
        out[r] = ~(eps_at(x[r], r) <= ef[r, None])
        return out

    search = ~none_ok & ~all_ok
    if whole:
        stop = lambda a, b: ~search | (b - a <= 1.0)  # noqa: E731
    else:
        stop = lambda a, b: ~search | (b <= a * (1.0 + rtol))  # noqa: E731
    lo, _ = multisect(too_much, lo_end, hi_end, stop, points=15, rounds=60, integer=whole)
    x = np.where(all_ok, hi_end, np.where(none_ok, np.nan, lo))
    e = np.full(n_rows, np.nan)
    fine = ~np.isnan(x)
    e[fine] = eps_at(x[fine, None], rows[fine])[:, 0]
    if np.any(e[fine] > ef[fine]):
        raise AssertionError("max_sample_rate returned a rate above the target")
    q = np.where(fine, x / nf if whole else x, 0.0)
    if np.any(none_ok):
        least = "a batch of one" if whole else f"a sample rate of {Q_MIN:g}"
        warnings.warn(
            f"--target-epsilon: even {least} exceeds the target for {int(np.sum(none_ok))} row(s) "
            "(sample rate 0, no epsilon)",
            DpcalcWarning,
            stacklevel=2,
        )
    return q.reshape(shape), e.reshape(shape)


#: Accountants whose formula involves the dataset size.
_NEEDS_N = {"bassily": ("dataset_size",)}
