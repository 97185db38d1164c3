"""An accountant for training loops: record DP-SGD steps as they happen, ask ε at δ at any point, save and load
its state as JSON (docs/math.md §3, §7).

The interface of Opacus's accountants (``step(noise_multiplier=..., sample_rate=...)``, ``get_epsilon(delta)``,
``history``, ``state_dict()`` / ``load_state_dict()``), with dpcalc's certified answers::

    from dpcalc.api import Accountant
    acc = Accountant()                       # the pld accountant: a certified bracket
    for batch in range(1000):
        ...                                  # one optimizer step: noise added once
        acc.step(noise_multiplier=1.1, sample_rate=0.01)
    acc.get_epsilon(1e-5)                    # the upper end of the certified bracket

The run is Poisson-sampled DP-SGD (each example in each step with probability ``sample_rate``); phases of
other noise or rate compose.  ``history`` is the run as phases ``(noise_multiplier, sample_rate, steps)``,
consecutive steps with the same settings merged (Opacus's form).  A run of one phase is answered exactly as
:func:`dpcalc.api.sgd_epsilon`; several phases by RDP composition (the curves add: Mironov 2017, Prop. 1) or
by the PLD of the composition (:func:`dpcalc.engine.composition.pld.compose_pld`, add/remove neighbours).

Concurrency: every method takes the accountant's lock, so steps recorded from several threads are all counted
and a question sees a consistent history (a snapshot taken under the lock; the answer is computed outside it,
and may take a second for a PLD).  Processes do not share an accountant: save its state and load it.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import numpy as np

from dpcalc.api.contract import MAX_WHOLE, Bound, choice, contract, real
from dpcalc.api.dpsgd import sgd_epsilon
from dpcalc.engine.composition.pld import compose_pld
from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.dpsgd.accounting import rdp_total
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.errors import InputError

#: The ``format`` of a saved state, and its version.
STATE_FORMAT = "dpcalc-accountant"
STATE_VERSION = 1
#: The most phases an accountant keeps (each a distinct setting in a row): a bounded state.
MAX_PHASES = 100_000


class Accountant:
    """Poisson-sampled DP-SGD, recorded step by step (module docstring).

    ``accountant``: ``"pld"`` (certified bracket; default) or ``"rdp"``; ``neighbors``: ``"add-remove"``
    (default) or ``"replace-one"``; ``conversion``: the RDP → (ε, δ) conversion of the rdp accountant;
    ``eps_error``: the width of the PLD bracket (None: the default)."""

    def __init__(
        self,
        accountant: str = "pld",
        *,
        neighbors: str = "add-remove",
        conversion: str = "optimal",
        eps_error: float | None = None,
    ):
        self.accountant = choice("accountant", accountant, ("pld", "rdp"))
        self.neighbors = choice("neighbors", neighbors, ("add-remove", "replace-one"))
        self.conversion = choice("conversion", conversion, ("optimal", "balle", "mironov"))
        self.eps_error = (
            None if eps_error is None else float(real("eps_error", eps_error, lo=0, lo_open=True))
        )
        self._phases: list[list[Any]] = []  # [noise_multiplier, sample_rate, steps]
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------ recording

    def step(self, *, noise_multiplier: float, sample_rate: float, steps: int = 1) -> None:
        """Record ``steps`` optimizer steps (noise added once each) at ``noise_multiplier`` and
        ``sample_rate``."""
        sigma = float(real("noise_multiplier", noise_multiplier, lo=0, lo_open=True))
        q = float(real("sample_rate", sample_rate, lo=0, hi=1, lo_open=True))
        t = int(real("steps", steps, lo=1, whole=True))
        with self._lock:
            if self._phases and self._phases[-1][0] == sigma and self._phases[-1][1] == q:
                total = self._phases[-1][2] + t
                if total > MAX_WHOLE:
                    raise InputError(f"steps: more than {MAX_WHOLE} steps in one phase")
                self._phases[-1][2] = total
                return
            if len(self._phases) >= MAX_PHASES:
                raise InputError(
                    f"step: more than {MAX_PHASES} phases (settings that change from step to step)"
                )
            self._phases.append([sigma, q, t])

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """The run as phases ``(noise_multiplier, sample_rate, steps)``, in order."""
        with self._lock:
            return [tuple(p) for p in self._phases]

    def __len__(self) -> int:
        """The steps recorded."""
        with self._lock:
            return sum(p[2] for p in self._phases)

    # ------------------------------------------------------------------------------------- answers

    @contract
    def get_bracket(self, delta: float) -> Bound:
        """ε at ``delta`` as a :class:`~dpcalc.api.Bound`: ``value`` the certified upper bound (with the pld
        accountant ``lower`` and ``estimate`` too; with rdp the order ``alpha``); 0 before any step."""
        delta = float(real("delta", delta, lo=0, hi=1, hi_open=True))
        phases = self.history
        if not phases:
            return Bound(
                0.0, 0.0 if self.accountant == "pld" else None, 0.0 if self.accountant == "pld" else None
            )
        if len(phases) == 1:
            ((sigma, q, t),) = phases
            b = sgd_epsilon(
                q,
                sigma,
                t,
                delta,
                accountant=self.accountant,
                conversion=self.conversion,
                neighbors=self.neighbors,
                eps_error=self.eps_error,
            )
            return Bound(*(None if v is None else float(v) for v in b))
        sigma, q, t = (np.array(c, dtype=float) for c in zip(*phases))
        if self.accountant == "rdp":
            orders = np.asarray(DEFAULT_ORDERS, float)
            with np.errstate(over="ignore", invalid="ignore"):
                curves = rdp_total(q, sigma, t, orders, neighbors=self.neighbors)
                total = np.sum(curves, axis=0)
            b = eps_of_curve(orders, total, delta, self.conversion)
            return Bound(float(b.value), alpha=float(b.alpha))
        if self.neighbors != "add-remove":
            raise InputError(
                "accountant: the pld accountant composes phases under add/remove neighbours only; use rdp"
            )
        specs = [
            ("subsampled-gaussian", {"q": float(qi), "sigma": float(si)}, int(ti))
            for si, qi, ti in zip(sigma, q, t)
        ]
        b = compose_pld(specs, delta=delta, eps_error=self.eps_error)
        return Bound(float(b.upper), float(b.lower), float(b.estimate))

    def get_epsilon(self, delta: float) -> float:
        """The certified upper bound on ε at ``delta`` of the steps recorded so far."""
        return float(self.get_bracket(delta).value)

    # ---------------------------------------------------------------------------------------- state

    def state_dict(self) -> dict:
        """The accountant as plain data (JSON-ready): its settings and its history."""
        with self._lock:
            history = [list(p) for p in self._phases]
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "accountant": self.accountant,
            "neighbors": self.neighbors,
            "conversion": self.conversion,
            "eps_error": self.eps_error,
            "history": history,
        }

    def load_state_dict(self, state: dict) -> None:
        """Replace this accountant's settings and history by ``state`` (as :meth:`state_dict` makes it),
        checked field by field before anything changes."""
        other = Accountant.from_state(state)
        with self._lock:
            self.accountant, self.neighbors = other.accountant, other.neighbors
            self.conversion, self.eps_error = other.conversion, other.eps_error
            self._phases = other._phases

    @classmethod
    def from_state(cls, state: dict) -> Accountant:
        """A new accountant from a saved state (every fault named: the field, the phase)."""
        if not isinstance(state, dict):
            raise InputError("state: must be a JSON object (as Accountant.state_dict() makes it)")
        if state.get("format") != STATE_FORMAT:
            raise InputError(f"state: format must be {STATE_FORMAT!r}, got {state.get('format')!r}")
        if state.get("version") != STATE_VERSION:
            raise InputError(f"state: version must be {STATE_VERSION}, got {state.get('version')!r}")
        unknown = set(state) - {
            "format",
            "version",
            "accountant",
            "neighbors",
            "conversion",
            "eps_error",
            "history",
        }
        if unknown:
            raise InputError(f"state: unknown field {sorted(unknown)[0]!r}")
        acc = cls(
            state.get("accountant", "pld"),
            neighbors=state.get("neighbors", "add-remove"),
            conversion=state.get("conversion", "optimal"),
            eps_error=state.get("eps_error"),
        )
        history = state.get("history", [])
        if not isinstance(history, list) or len(history) > MAX_PHASES:
            raise InputError(f"state: history must be a list of at most {MAX_PHASES} phases")
        for i, phase in enumerate(history, start=1):
            if not (isinstance(phase, (list, tuple)) and len(phase) == 3):
                raise InputError(f"state: history phase {i} must be [noise_multiplier, sample_rate, steps]")
            sigma, q, t = phase
            for name, v in (("noise_multiplier", sigma), ("sample_rate", q), ("steps", t)):
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise InputError(f"state: history phase {i}: {name} must be a finite number, got {v!r}")
            try:
                acc.step(noise_multiplier=sigma, sample_rate=q, steps=t)
            except InputError as exc:
                raise InputError(f"state: history phase {i}: {exc}") from None
        return acc

    def to_json(self) -> str:
        """:meth:`state_dict` as JSON text."""
        return json.dumps(self.state_dict())

    @classmethod
    def from_json(cls, text: str) -> Accountant:
        """An accountant from :meth:`to_json`'s text."""
        try:
            state = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise InputError(f"state: not JSON ({exc})") from None
        return cls.from_state(state)

    def __repr__(self) -> str:
        return f"Accountant({self.accountant!r}, neighbors={self.neighbors!r}, steps={len(self)}, phases={len(self.history)})"
