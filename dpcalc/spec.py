"""The MECHANISM spec of ``compose`` and ``odometer``: ``KIND:key=value,...`` (pure Python, no numpy).

Grammar (../shared/docs/cli.md, ``compose``)::

    MECHANISM := KIND [":" PAIR ("," PAIR)*]
    PAIR      := KEY "=" VALUE

Kinds and keys (``count`` is allowed everywhere, default 1, a whole number in [1, 10^12]):

===================== ============================================ ==========================
kind                  keys                                         aliases
===================== ============================================ ==========================
gaussian              sigma (> 0), sensitivity (> 0, default 1)    kind ``gauss``; ``sens``
laplace               scale (> 0), sensitivity (> 0, default 1)    ``b``; ``sens``
randomized-response   epsilon (> 0) or p (in (1/2, 1)), not both   kind ``rr``; ``eps``
subsampled-gaussian   q (in (0, 1]), sigma (> 0),                  kind ``sgm``;
                      sampling (poisson | fixed-size, default       ``sample_rate``,
                      poisson)                                      ``noise_multiplier``
zcdp                  rho (>= 0)
dp                    epsilon (>= 0), delta (in [0, 1), default 0)  ``eps``
===================== ============================================ ==========================

Every error is an :class:`~dpcalc.errors.InputError` whose message starts with the whole spec and
names the token at fault, e.g. ``mechanism 'gausian:sigma=1': unknown kind 'gausian' (expected one
of gaussian, laplace, ...; did you mean 'gaussian'?)``.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

from dpcalc.errors import InputError

#: The largest ``count`` accepted.
MAX_COUNT = 10**12


@dataclass(frozen=True)
class _Key:
    name: str
    check: str  # 'pos' (finite > 0), 'nonneg' (finite >= 0), 'q' (0, 1], 'p' (1/2, 1), 'delta' [0, 1), 'sampling'
    default: object = None  # None: required (unless part of a one-of group)


_DOMAINS = {
    "pos": "a finite number > 0",
    "nonneg": "a finite number >= 0",
    "q": "a number in (0, 1]",
    "p": "a number in (1/2, 1)",
    "delta": "a number in [0, 1)",
}

SAMPLINGS = ("poisson", "fixed-size")

#: Kind -> its keys (besides ``count``), in canonical order.
KINDS: dict[str, tuple[_Key, ...]] = {
    "gaussian": (_Key("sigma", "pos"), _Key("sensitivity", "pos", 1.0)),
    "laplace": (_Key("scale", "pos"), _Key("sensitivity", "pos", 1.0)),
    "randomized-response": (_Key("epsilon", "pos"), _Key("p", "p")),
    "subsampled-gaussian": (_Key("q", "q"), _Key("sigma", "pos"), _Key("sampling", "sampling", "poisson")),
    "zcdp": (_Key("rho", "nonneg"),),
    "dp": (_Key("epsilon", "nonneg"), _Key("delta", "delta", 0.0)),
}

KIND_ALIASES = {"gauss": "gaussian", "rr": "randomized-response", "sgm": "subsampled-gaussian"}

KEY_ALIASES = {
    "gaussian": {"sens": "sensitivity"},
    "laplace": {"sens": "sensitivity", "b": "scale"},
    "randomized-response": {"eps": "epsilon"},
    "subsampled-gaussian": {
        "sample_rate": "q",
        "sample-rate": "q",
        "noise_multiplier": "sigma",
        "noise-multiplier": "sigma",
    },
    "zcdp": {},
    "dp": {"eps": "epsilon"},
}

#: Keys of which exactly one must be given, per kind.
_ONE_OF = {"randomized-response": ("epsilon", "p")}


@dataclass(frozen=True)
class MechanismSpec:
    """A parsed MECHANISM: ``kind`` (canonical name), ``params`` (canonical keys, defaults filled in,
    floats except ``sampling``), ``count`` (releases composed) and the original ``text``.

    For ``randomized-response`` both ``epsilon`` and ``p = e^ε/(1+e^ε)`` are filled in.
    """

    kind: str
    params: dict = field(hash=False)
    count: int = 1
    text: str = ""

    def label(self) -> str:
        """The canonical spec text, e.g. ``gaussian:sigma=1.1,sensitivity=1.0,count=100``."""
        keys = [k.name for k in KINDS[self.kind]]
        if self.kind == "randomized-response":
            keys = ["epsilon"]
        parts = [
            f"{k}={self.params[k]!r}" if not isinstance(self.params[k], str) else f"{k}={self.params[k]}"
            for k in keys
        ]
        parts.append(f"count={self.count}")
        return f"{self.kind}:" + ",".join(parts)


def _fail(text: str, msg: str):
    raise InputError(f"mechanism {text!r}: {msg}")


def _number(text: str, key: str, raw: str) -> float:
    try:
        v = float(raw.replace("_", ""))
    except ValueError:
        _fail(text, f"bad value {key}={raw!r} (not a number)")
    if math.isnan(v):
        _fail(text, f"bad value {key}={raw!r} (not a number)")
    return v


def _check(text: str, key: _Key, raw: str):
    if key.check == "sampling":
        v = raw.strip().lower()
        if v not in SAMPLINGS:
            _fail(text, f"bad value {key.name}={raw!r} (expected one of {', '.join(SAMPLINGS)})")
        return v
    v = _number(text, key.name, raw)
    ok = {
        "pos": math.isfinite(v) and v > 0,
        "nonneg": math.isfinite(v) and v >= 0,
        "q": 0 < v <= 1,
        "p": 0.5 < v < 1,
        "delta": 0 <= v < 1,
    }[key.check]
    if not ok:
        _fail(text, f"bad value {key.name}={raw!r} (must be {_DOMAINS[key.check]})")
    return v


def _count(text: str, raw: str) -> int:
    s = raw.strip().replace("_", "")
    try:
        n = int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            f = math.nan
        if not (math.isfinite(f) and f.is_integer()):
            _fail(text, f"bad value count={raw!r} (count must be a positive whole number)")
        n = int(f)
    if not 1 <= n <= MAX_COUNT:
        _fail(text, f"bad value count={raw!r} (count must be a whole number in [1, 10^12])")
    return n


def _kind(text: str, raw: str) -> str:
    kind = raw.strip().lower()
    kind = KIND_ALIASES.get(kind, kind)
    if kind not in KINDS:
        hint = difflib.get_close_matches(kind, list(KINDS) + list(KIND_ALIASES), n=1)
        extra = f"; did you mean {KIND_ALIASES.get(hint[0], hint[0])!r}?" if hint else ""
        _fail(text, f"unknown kind {raw.strip()!r} (expected one of {', '.join(KINDS)}{extra})")
    return kind


def parse_mechanism(text: str, omit: tuple[str, ...] = ()) -> MechanismSpec:
    """Parse one MECHANISM spec (see the module docstring); errors name the token at fault.

    ``omit``: keys that may be left out because the caller solves for them (e.g. ``("sigma",)`` when
    ``compose`` calibrates a Gaussian); they are then ``None`` in ``params``.
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError("mechanism: empty spec (expected KIND:key=value,..., e.g. gaussian:sigma=1)")
    text = text.strip()
    head, sep, body = text.partition(":")
    kind = _kind(text, head)
    keys = {k.name: k for k in KINDS[kind]}
    aliases = KEY_ALIASES[kind]
    given: dict[str, str] = {}
    count = 1
    count_seen = False
    if sep and not body.strip():
        _fail(text, "nothing after ':' (expected key=value,...)")
    for token in body.split(",") if sep else []:
        tok = token.strip()
        if not tok:
            _fail(text, "empty key=value pair (a stray ',')")
        name, eq, raw = tok.partition("=")
        name = name.strip().lower()
        if not eq:
            _fail(text, f"bad token {tok!r} (expected key=value)")
        if not raw.strip():
            _fail(text, f"bad value {name}= (empty)")
        if name == "count":
            if count_seen:
                _fail(text, "key 'count' given twice")
            count, count_seen = _count(text, raw), True
            continue
        canon = aliases.get(name, name)
        if canon not in keys:
            expected = ", ".join([*keys, "count"])
            hint = difflib.get_close_matches(name, [*keys, *aliases, "count"], n=1)
            extra = f"; did you mean {aliases.get(hint[0], hint[0])!r}?" if hint else ""
            _fail(text, f"unknown key {name!r} for kind {kind} (expected {expected}{extra})")
        if canon in given:
            _fail(text, f"key {canon!r} given twice")
        given[canon] = raw.strip()
    params: dict = {}
    one_of = _ONE_OF.get(kind, ())
    if one_of:
        present = [k for k in one_of if k in given]
        if not present:
            _fail(text, f"missing key: give one of {' or '.join(one_of)}")
        if len(present) > 1:
            _fail(text, f"keys {' and '.join(present)} both given (give exactly one)")
    for name, key in keys.items():
        if name in given:
            params[name] = _check(text, key, given[name])
        elif name in one_of:
            continue
        elif name in omit:
            params[name] = None
        elif key.default is None:
            _fail(
                text,
                f"missing key {name!r} (kind {kind} needs {', '.join(k for k in keys if keys[k].default is None)})",
            )
        else:
            params[name] = key.default
    if kind == "randomized-response":
        if "p" in params:
            p = params["p"]
            params["epsilon"] = math.log(p) - math.log1p(-p)
        else:
            e = params["epsilon"]
            params["p"] = 1.0 / (1.0 + math.exp(-e))
            if not params["p"] < 1.0:
                _fail(text, f"bad value epsilon={given['epsilon']!r} (too large: p rounds to 1)")
        params = {"epsilon": params["epsilon"], "p": params["p"]}
    return MechanismSpec(kind=kind, params=params, count=count, text=text)


def parse_mechanisms(texts, omit: tuple[str, ...] = ()) -> list[MechanismSpec]:
    """Parse several specs (in order); the first error raised names its spec."""
    specs = [parse_mechanism(t, omit) for t in texts]
    if not specs:
        raise InputError("MECHANISM: give at least one mechanism, e.g. gaussian:sigma=1,count=10")
    return specs
