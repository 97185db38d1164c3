"""The subsampled Gaussian mechanism: a Gaussian on a random subsample (docs/math.md §3.2, §3.3).

Spec ``subsampled-gaussian:q=Q,sigma=S[,sampling=poisson|fixed-size]`` (kind alias ``sgm``;
``sample_rate``, ``noise_multiplier``), or ``…,sampling=truncated-poisson,dataset_size=N,max_batch_size=B``
(Poisson batches cut at B: the revealed mixture of :mod:`dpcalc.engine.mechanisms.sgm.truncated_poisson`, add/remove,
docs/math.md §3.7).  Rényi DP: exact for Poisson sampling under add/remove-one
neighbours (Mironov, Talwar & Zhang 2019, arXiv:1908.10530, §3.3), the Wang–Balle–Kasiviswanathan bound
for fixed-size sampling without replacement under replace-one neighbours (arXiv:1808.00087), both in
:mod:`dpcalc.engine.mechanisms.sgm`.  Privacy loss (Poisson only): the two directions of the pair differ and
both are composed (Zhu, Dong & Wang 2022, arXiv:2106.08567).
"""

from __future__ import annotations

import numpy as np

from dpcalc.engine.mechanisms.base import Key, Mechanism
from dpcalc.engine.mechanisms.gaussian_loss import gaussian_loss
from dpcalc.engine.mechanisms.gaussian_loss import sgm_loss as loss_model
from dpcalc.engine.mechanisms.sgm import rdp_poisson, rdp_without_replacement
from dpcalc.engine.mechanisms.sgm.truncated_poisson import loss_directions, rdp_truncated_poisson
from dpcalc.errors import InputError

#: The samplings a spec may name.
SAMPLINGS = ("poisson", "fixed-size", "truncated-poisson")


class SubsampledGaussian(Mechanism):
    noise = ("sigma", 1)
    kind = "subsampled-gaussian"
    aliases = ("sgm",)
    keys = (
        Key("q", "q", aliases=("sample_rate", "sample-rate")),
        Key("sigma", "pos", aliases=("noise_multiplier", "noise-multiplier")),
        Key("sampling", "choice", "poisson", choices=SAMPLINGS),
        Key("dataset_size", "pos", aliases=("n", "dataset-size"), optional=True),
        Key("max_batch_size", "pos", aliases=("max-batch-size",), optional=True),
    )

    def complete(self, params, given, fail):
        cut = [k for k in ("dataset_size", "max_batch_size") if params.get(k) is not None]
        if params["sampling"] != "truncated-poisson":
            if cut:
                fail(f"key {cut[0]!r} applies to sampling=truncated-poisson only")
            return params
        if len(cut) < 2:
            fail(
                "sampling=truncated-poisson needs dataset_size=N (counting the example) and max_batch_size=B"
            )
        for k in cut:
            if params[k] != int(params[k]):
                fail(f"bad value {k}={params[k]!r} (must be a whole number)")
        return params

    order = 40

    def rdp(self, params, alphas):
        if params["sampling"] == "truncated-poisson":
            out = rdp_truncated_poisson(
                params["q"],
                params["sigma"],
                alphas.reshape(-1),
                params["dataset_size"],
                params["max_batch_size"],
            )
            return np.asarray(out, dtype=float).reshape(alphas.shape)
        fn = rdp_poisson if params["sampling"] == "poisson" else rdp_without_replacement
        return np.asarray(fn(params["q"], params["sigma"], alphas), dtype=float).reshape(alphas.shape)

    def pld_dominated(self, params):
        if params.get("sampling") == "truncated-poisson":
            return "the revealed mixture of arXiv:2508.15089 (docs/math.md §3.7), above truncated Poisson batches"
        return None

    def pld_pair(self, params):
        if params.get("sampling") == "truncated-poisson":
            q, s, n, b = (float(params[k]) for k in ("q", "sigma", "dataset_size", "max_batch_size"))
            remove, add = loss_directions(q, s, n, b, "add-remove")
            return remove[0], add[0]
        if params.get("sampling", "poisson") != "poisson":
            raise InputError(
                "PLD accounting supports Poisson sampling only (sampling=poisson); use the RDP accountant"
            )
        q, s = float(params["q"]), float(params["sigma"])
        if q == 1.0:
            return gaussian_loss(s, 1.0), None
        return loss_model(q, s, "remove"), loss_model(q, s, "add")

    def relation(self, params):
        # truncated Poisson is analysed under add/remove neighbours, as Poisson sampling is
        return "poisson" if params["sampling"] == "truncated-poisson" else params["sampling"]

    def max_loss(self, params):
        return None, "the subsampled Gaussian's privacy loss is unbounded"


MECHANISM = SubsampledGaussian()
