"""A Rényi-DP curve read from a file: the ``--rdp-curve`` CSV of another command, as a mechanism.

Spec ``rdp-curve:file=PATH`` (a relative ``PATH`` is relative to the current directory; not ``-``:
standard input may be the EVENTS of the odometer).  The file is a CSV with the columns ``alpha,rdp`` (one row per order; other columns, such
as the configuration columns ``--rdp-curve`` prints, are allowed but must keep one value: one curve
per file), read once, when the spec is parsed, by :func:`dpcalc.input.curves.file_curve` (the input floor:
the engine reads no file), as ``dpcalc convert --curve`` reads it; this module takes the orders and values
it read.

The curve at an order α (``count=K`` multiplies it, as for every kind):

* at an order of the file, the file's value;
* between two orders of the file, the value at the next larger order of the file; below the smallest
  order, the value at the smallest order.  Both are upper bounds because the Rényi divergence
  D_α(P‖Q) is non-decreasing in α (van Erven & Harremoës 2014, "Rényi divergence and
  Kullback–Leibler divergence", IEEE Trans. Inf. Theory 60(7), Thm 3), so ζ(α) ≤ ζ(β) for β ≥ α;
* above the largest order, ``inf`` (nothing bounds the curve there).

No privacy loss distribution and no per-release (ε, δ): a curve does not determine them.

``sha256=HEX`` (optional) pins the file's contents: a different file is refused.  The spec's label — what
``odometer --ledger --add`` records — names the file by its absolute path with its SHA-256, so a ledger's
account never silently changes with the file: a moved or edited curve makes the ledger fail to replay.
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism, check_alphas


def rdp_step(orders, values, alphas) -> np.ndarray:
    """The curve ``values`` at ``orders`` (sorted, distinct) extended to ``alphas`` from above: the value
    at the smallest order >= α, ``inf`` above the largest order (see the module docstring)."""
    a = check_alphas(alphas)
    o = np.asarray(orders, dtype=float)
    v = np.append(np.asarray(values, dtype=float), np.inf)
    return v[np.searchsorted(o, a, side="left")]  # index len(o) (beyond the last order): inf


class RdpCurve(Mechanism):
    kind = "rdp-curve"
    keys = (Key("file", "path"), Key("sha256", "path", default=""))
    label_keys = ("file", "sha256")
    order = 55

    def complete(self, params, given, fail):
        # the file was read by the spec's parser (dpcalc.input.curves.file_curve): its orders, values and digest
        if "orders" not in params or "values" not in params:
            fail("the curve's file was not read (parse the spec with dpcalc.input.spec)")
        return params

    def rdp(self, params, alphas):
        return rdp_step(params["orders"], params["values"], alphas)

    def per_release(self, params):
        return None, f"{self.kind} has no per-release (epsilon, delta); a Rényi curve does not give one"

    def max_loss(self, params):
        return None, f"a Rényi curve at finite orders does not bound the privacy loss ({self.kind})"


MECHANISM = RdpCurve()
