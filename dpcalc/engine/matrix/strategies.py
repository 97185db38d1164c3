"""Strategy matrices C of the matrix mechanism (docs/math.md §12.1).

A run of n steps releases A·G + B·Z for a workload A = B·C (G: the n clipped gradient sums, one per step; Z:
Gaussian noise of standard deviation σ per entry), whose privacy is that of C·G + Z.  What the privacy needs of
C is its Gram matrix ``G = CᵀC`` (the inner products of its columns, one column per step) and, for amplification
by sampling, its bands.  The strategies:

* ``identity`` — C = I: DP-SGD (independent noise);
* ``toeplitz:coef=c0|c1|...`` or ``toeplitz:path=FILE`` (alias ``banded``; the file holds the coefficients:
  :func:`dpcalc.engine.matrix.strategy_files.read_coefficients`) — the lower-triangular Toeplitz matrix with ``C[i, j] =
  c_{i−j}`` for ``0 <= i − j < len(coef)``: a b-banded strategy with b = len(coef) (BandMF, Choquette-Choo et
  al. 2023, arXiv:2306.08153);
* ``sqrt`` / ``sqrt:bands=b`` — the square root of the prefix-sum workload, Toeplitz with ``c_k = C(2k, k)/4^k``
  (Fichtenberger, Henzinger & Upadhyay 2023, "Constant matters: fine-grained error bound on differentially
  private continual observation", ICML 2023); with ``bands=b`` its first b coefficients (the banded square
  root of Kalinin & Lampert 2024, "Banded square root matrix factorization for differentially private model
  training", NeurIPS 2024);
* ``blt:theta=θ1|θ2|...,omega=ω1|ω2|...`` — a buffered linear Toeplitz (BLT) strategy: Toeplitz with ``c_0 = 1``
  and ``c_k = Σ_i ω_i θ_i^(k−1)`` for k >= 1 (Dvijotham, McMahan, Pillutla, Steinke & Thakurta 2024, "Efficient
  and near-optimal noise generation for streaming differential privacy", arXiv:2404.16706, §3; the
  parameters jax_privacy's ``BufferedToeplitz`` calls ``buf_decay`` and ``output_scale``, accepted as aliases);
* ``tree`` — the binary-tree strategy of DP-FTRL (Kairouz et al. 2021, arXiv:2103.00039; Dwork et al. 2010,
  Chan et al. 2011): one row per released node, the complete dyadic intervals within the n steps; column j is
  1 on the nodes that contain step j (at most ⌊log₂ n⌋ + 1); not square, not banded;
* ``file:path=FILE`` — any square lower-triangular C from a CSV file (one row per line) or a ``.npy`` file,
  checked (square, lower triangular, finite) with the entry at fault named.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcalc.engine.matrix import strategy_files
from dpcalc.engine.matrix.strategy_files import read_coefficients, read_matrix
from dpcalc.errors import InputError

#: The most steps of a strategy whose Gram matrix is formed (n² doubles: 4096 steps are 134 MB).
MAX_DENSE_STEPS = strategy_files.MAX_DENSE_STEPS
#: The most steps of a Toeplitz strategy (its sensitivities are computed from the coefficients).
MAX_STEPS = 1_000_000
#: The most bytes a strategy file may have.
KINDS = ("identity", "toeplitz", "sqrt", "blt", "tree", "file")
#: The most buffers of a BLT strategy.
MAX_BUFFERS = 64


@dataclass(frozen=True)
class Strategy:
    """A strategy over ``n`` steps: Toeplitz by its coefficients (``coef``), or dense by its Gram matrix."""

    label: str
    n: int
    coef: np.ndarray | None = None  # lower-triangular Toeplitz: C[i, j] = coef[i - j]
    gram_dense: np.ndarray | None = None  # CᵀC where C is given densely
    bands: int | None = None  # nonzero diagonals of a square lower-triangular C (None: not banded)
    nonnegative: bool = False  # every entry of C >= 0 (so every entry of CᵀC >= 0)
    dense: np.ndarray | None = None  # C itself where given densely (a file): MMCC needs its rows

    @property
    def toeplitz(self) -> bool:
        return self.coef is not None

    def column_norms(self) -> np.ndarray:
        """‖C e_j‖ for every step j."""
        if self.coef is not None:  # column j holds c_0..c_{min(len, n - j) - 1}
            cs = np.cumsum(self.coef**2)
            lengths = np.minimum(self.n - np.arange(self.n), self.coef.size)
            return np.sqrt(cs[lengths - 1])
        return np.sqrt(np.maximum(np.diag(self.gram_dense), 0.0))

    def gram(self) -> np.ndarray:
        """CᵀC (n × n); refused beyond :data:`MAX_DENSE_STEPS` steps."""
        if self.gram_dense is not None:
            return self.gram_dense
        if self.n > MAX_DENSE_STEPS:
            raise InputError(
                f"--steps: {self.n} steps make a {self.n}×{self.n} Gram matrix, above the limit of "
                f"{MAX_DENSE_STEPS} steps for this question"
            )
        return _toeplitz_gram(self.coef, self.n)

    def monotone_toeplitz(self) -> bool:
        """Non-negative, non-increasing Toeplitz coefficients (McKenna et al. 2024, Thm 2 applies)."""
        c = self.coef
        return c is not None and bool(np.all(c >= 0)) and bool(np.all(np.diff(c) <= 0))


def _toeplitz_gram(coef: np.ndarray, n: int) -> np.ndarray:
    c = np.zeros(n)
    m = min(coef.size, n)
    c[:m] = coef[:m]
    i = np.arange(n)
    C = np.where(i[:, None] >= i[None, :], c[np.clip(i[:, None] - i[None, :], 0, n - 1)], 0.0)
    return C.T @ C


def sqrt_coefficients(n: int) -> np.ndarray:
    """``C(2k, k)/4^k`` for k = 0..n−1 (the square root of the prefix-sum matrix), by the stable recurrence
    ``c_k = c_{k−1}·(2k − 1)/(2k)``."""
    k = np.arange(1, n, dtype=float)
    return np.concatenate([[1.0], np.cumprod((2 * k - 1) / (2 * k))])


def tree_gram(n: int) -> tuple[np.ndarray, int]:
    """The Gram matrix of the binary-tree strategy over n steps and its height h (2^h >= n): the released nodes
    are the complete dyadic intervals [a·2^l, (a + 1)·2^l) within the n steps (the online tree of DP-FTRL), so
    ``G_ij`` counts the levels l with ``i >> l == j >> l`` and ``((i >> l) + 1)·2^l <= n``; a leaf lies in
    ``⌊log₂ n⌋ + 1`` of them at most (Kairouz et al. 2021, Appendix D)."""
    h = max(0, (n - 1).bit_length())
    i = np.arange(n)
    g = np.zeros((n, n), dtype=np.int16)
    for level in range(h + 1):
        a = i >> level
        complete = ((a + 1) << level) <= n
        g += (a[:, None] == a[None, :]) & complete[:, None]
    return g.astype(float), h


def _parse(text: str) -> tuple[str, dict]:
    kind, _, rest = text.partition(":")
    kind = {"banded": "toeplitz"}.get(kind.strip(), kind.strip())
    params = {}
    if rest:
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            if not eq:
                raise InputError(f"--strategy {text!r}: {part!r} is not KEY=VALUE")
            params[key.strip()] = value.strip()
    return kind, params


def _coef(text: str, value: str) -> np.ndarray:
    try:
        c = np.array([float(v) for v in value.split("|")], dtype=float)
    except ValueError:
        raise InputError(f"--strategy {text!r}: coef must be numbers separated by |, got {value!r}") from None
    if c.size == 0 or not np.all(np.isfinite(c)):
        raise InputError(f"--strategy {text!r}: coef must be finite numbers")
    return _nonzero_diagonal(text, c)


def _nonzero_diagonal(text: str, c: np.ndarray) -> np.ndarray:
    """The coefficients with c_0 != 0 checked and trailing zeros dropped."""
    if c[0] == 0:
        raise InputError(
            f"--strategy {text!r}: coef's first entry (the diagonal) must not be 0 (C invertible)"
        )
    while c.size > 1 and c[-1] == 0:
        c = c[:-1]
    return c


def blt_coefficients(theta: np.ndarray, omega: np.ndarray, n: int) -> np.ndarray:
    """The Toeplitz coefficients ``c_0 = 1, c_k = Σ_i ω_i θ_i^(k−1)`` (k = 1..n−1) of a BLT (Dvijotham et al.
    2024, arXiv:2404.16706, §3), one buffer at a time (memory O(n))."""
    c = np.zeros(n)
    c[0] = 1.0
    powers = np.arange(max(n - 1, 0), dtype=float)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for t, w in zip(theta, omega):
            c[1:] += w * np.power(t, powers) if t != 0 else w * (powers == 0)
    return c


def _blt(text: str, params: dict, n: int) -> np.ndarray:
    keys = {"theta": "theta", "buf_decay": "theta", "omega": "omega", "output_scale": "omega"}
    _allowed(text, params, tuple(keys))
    got = {}
    for k, v in params.items():
        if keys[k] in got:
            raise InputError(f"--strategy {text!r}: {keys[k]} given twice (under two names)")
        try:
            got[keys[k]] = np.array([float(x) for x in v.split("|")], dtype=float)
        except ValueError:
            raise InputError(f"--strategy {text!r}: {k} must be numbers separated by |, got {v!r}") from None
    for k in ("theta", "omega"):
        if k not in got:
            raise InputError(
                f"--strategy {text!r}: give theta=θ1|θ2|... and omega=ω1|ω2|... (one per buffer)"
            )
        if not np.all(np.isfinite(got[k])):
            raise InputError(f"--strategy {text!r}: {k} must be finite numbers")
    theta, omega = got["theta"], got["omega"]
    if theta.size != omega.size:
        raise InputError(
            f"--strategy {text!r}: theta has {theta.size} values and omega {omega.size}: one of each per buffer"
        )
    if theta.size > MAX_BUFFERS:
        raise InputError(f"--strategy {text!r}: at most {MAX_BUFFERS} buffers, got {theta.size}")
    if np.any(np.abs(theta) > 1):
        raise InputError(
            f"--strategy {text!r}: every theta must lie in [-1, 1] (a buffer decay; |θ| > 1 makes C's entries "
            f"grow without bound), got {theta[np.abs(theta) > 1][0]:g}"
        )
    c = blt_coefficients(theta, omega, n)
    if not np.all(np.isfinite(c)):
        raise InputError(f"--strategy {text!r}: the coefficients overflow")
    while c.size > 1 and c[-1] == 0:
        c = c[:-1]
    return c


def _whole(text: str, key: str, value: str, lo: int = 1) -> int:
    try:
        v = int(value)
    except ValueError:
        raise InputError(f"--strategy {text!r}: {key} must be a whole number, got {value!r}") from None
    if v < lo:
        raise InputError(f"--strategy {text!r}: {key} must be >= {lo}, got {v}")
    return v


def _allowed(text: str, params: dict, keys: tuple[str, ...]) -> None:
    for k in params:
        if k not in keys:
            raise InputError(
                f"--strategy {text!r}: unknown key {k!r}"
                + (f" (keys: {', '.join(keys)})" if keys else " (no keys)")
            )


def strategy(text: str, n: int) -> Strategy:
    """The strategy of a ``--strategy`` value over ``n`` steps (module docstring)."""
    kind, params = _parse(text)
    if not 1 <= n <= MAX_STEPS:
        raise InputError(f"--steps: must be a whole number in [1, {MAX_STEPS}], got {n}")
    if kind == "identity":
        _allowed(text, params, ())
        return Strategy("identity", n, coef=np.ones(1), bands=1, nonnegative=True)
    if kind == "toeplitz":
        _allowed(text, params, ("coef", "path"))
        if ("coef" in params) == ("path" in params):
            raise InputError(
                f"--strategy {text!r}: give coef=c0|c1|... (the Toeplitz coefficients) or path=FILE (a file of them)"
            )
        c = (
            _coef(text, params["coef"])
            if "coef" in params
            else _nonzero_diagonal(text, read_coefficients(params["path"]))
        )
        c = c[:n]
        return Strategy(text, n, coef=c, bands=int(c.size), nonnegative=bool(np.all(c >= 0)))
    if kind == "sqrt":
        _allowed(text, params, ("bands",))
        b = _whole(text, "bands", params["bands"]) if "bands" in params else n
        c = sqrt_coefficients(min(b, n))
        return Strategy(text, n, coef=c, bands=int(c.size), nonnegative=True)
    if kind == "blt":
        c = _blt(text, params, n)
        return Strategy(text, n, coef=c, bands=int(c.size), nonnegative=bool(np.all(c >= 0)))
    if kind == "tree":
        _allowed(text, params, ())
        if n > MAX_DENSE_STEPS:
            raise InputError(f"--steps: the tree strategy is computed for at most {MAX_DENSE_STEPS} steps")
        g, _ = tree_gram(n)
        return Strategy("tree", n, gram_dense=g, bands=None, nonnegative=True)
    if kind == "file":
        _allowed(text, params, ("path",))
        if "path" not in params:
            raise InputError(f"--strategy {text!r}: give path=FILE (a CSV file or a .npy file)")
        C = read_matrix(params["path"])
        if C.shape[0] != n:
            raise InputError(f"--strategy {text!r}: the matrix is {C.shape[0]}×{C.shape[0]}, --steps is {n}")
        nz = np.nonzero(C)
        bands = int(np.max(nz[0] - nz[1])) + 1 if nz[0].size else 1
        return Strategy(text, n, gram_dense=C.T @ C, bands=bands, nonnegative=bool(np.all(C >= 0)), dense=C)
    raise InputError(f"--strategy {text!r}: unknown strategy {kind!r} (one of {', '.join(KINDS)})")


__all__ = ["MAX_DENSE_STEPS", "Strategy", "read_matrix", "sqrt_coefficients", "strategy", "tree_gram"]
