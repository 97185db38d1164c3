"""The MECHANISM spec of ``compose`` and ``odometer``: ``KIND:key=value,...`` (the parser; the grammar of each kind comes from the catalogue).

Grammar::

    MECHANISM := KIND [":" PAIR ("," PAIR)*]
    PAIR      := KEY "=" VALUE

The kinds, their keys (domains, defaults, aliases) and which keys are alternatives are declared by
the mechanism modules of :mod:`dpcalc.engine.mechanisms` and read here through
:data:`dpcalc.engine.mechanisms.catalogue.CATALOGUE`, so a new mechanism needs no edit here.
``count`` is allowed everywhere (default 1, a whole number in [1, 10^12]).

Every error is an :class:`~dpcalc.errors.InputError` whose message starts with the whole spec and
names the token at fault, e.g. ``mechanism 'gausian:sigma=1': unknown kind 'gausian' (expected one
of gaussian, laplace, ...; did you mean 'gaussian'?)``.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field

from dpcalc.engine.mechanisms.base import DOMAINS, SUBSAMPLING_KEYS
from dpcalc.engine.mechanisms.catalogue import CATALOGUE, KIND_ALIASES
from dpcalc.errors import InputError
from dpcalc.input.curves import file_curve
from dpcalc.input.text import read_lines

#: The largest ``count`` accepted.
MAX_COUNT = 10**12


def __getattr__(name):  # KINDS: kind -> its keys, read from the catalogue when asked for (it may grow)
    if name == "KINDS":
        return {kind: mech.keys for kind, mech in CATALOGUE.items()}
    raise AttributeError(name)


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
        mech = CATALOGUE[self.kind]
        keys = list(mech.label_keys or (k.name for k in mech.keys))
        keys += [k for k in ("q", "sampling") if k in self.params and k not in keys]  # subsampled
        parts = [
            f"{k}={self.params[k]!r}" if not isinstance(self.params[k], str) else f"{k}={self.params[k]}"
            for k in keys
            if k in self.params  # an optional key left out is not in params
        ]
        parts.append(f"count={self.count}")
        return f"{self.kind}:" + ",".join(parts)


#: The kinds whose spec names a file, and the reader of its parameters (the file read once, at parse time).
FILES = {"rdp-curve": file_curve}


def _subsampling_keys(keys: dict) -> dict:
    """The generic ``q``/``sampling`` keys, for a kind that does not declare its own ``q``."""
    if "q" in keys:
        return {}
    return {k.name: k for k in SUBSAMPLING_KEYS}


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


def _number_list(text: str, key: str, raw: str) -> str:
    """A ``|``-separated list of finite numbers, as canonical text (``0.0|1.0``); errors name the entry."""
    out = []
    for i, entry in enumerate(raw.split("|"), start=1):
        e = entry.strip()
        try:
            v = float(e.replace("_", ""))
        except ValueError:
            _fail(text, f"bad value {key}={raw!r} (entry {i}, {e!r}, is not a number)")
        if not math.isfinite(v):
            _fail(text, f"bad value {key}={raw!r} (entry {i}, {e!r}, is not a finite number)")
        out.append(repr(v))
    return "|".join(out)


def _check(text: str, key, raw: str):
    if key.check == "list":  # numbers separated by '|', kept as canonical text; the kind checks the entries
        return _number_list(text, key.name, raw)
    if key.check == "path":  # a file name: kept as written (case and all); the kind reads it
        return raw.strip()
    if key.check == "choice":
        v = raw.strip().lower()
        if v not in key.choices:
            _fail(text, f"bad value {key.name}={raw!r} (expected one of {', '.join(key.choices)})")
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
        _fail(text, f"bad value {key.name}={raw!r} (must be {DOMAINS[key.check]})")
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
    kinds, kind_aliases = CATALOGUE, KIND_ALIASES
    kind = raw.strip().lower()
    kind = kind_aliases.get(kind, kind)
    if kind not in kinds:
        hint = difflib.get_close_matches(kind, list(kinds) + list(kind_aliases), n=1)
        extra = f"; did you mean {kind_aliases.get(hint[0], hint[0])!r}?" if hint else ""
        _fail(text, f"unknown kind {raw.strip()!r} (expected one of {', '.join(kinds)}{extra})")
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
    mech = CATALOGUE[kind]
    keys = {k.name: k for k in mech.keys}
    sub = _subsampling_keys(keys)
    aliases = {a: k.name for k in (*mech.keys, *sub.values()) for a in k.aliases}
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
        if canon not in keys and canon not in sub:
            expected = ", ".join([*keys, "count"])
            hint = difflib.get_close_matches(name, [*keys, *sub, *aliases, "count"], n=1)
            extra = f"; did you mean {aliases.get(hint[0], hint[0])!r}?" if hint else ""
            _fail(text, f"unknown key {name!r} for kind {kind} (expected {expected}{extra})")
        if canon in given:
            _fail(text, f"key {canon!r} given twice")
        given[canon] = raw.strip()
    params: dict = {}
    one_of = mech.one_of
    if one_of:
        present = [k for k in one_of if k in given]
        if not present and one_of[0] not in omit:  # (left out for calibration: the caller solves for it)
            _fail(text, f"missing key: give one of {' or '.join(one_of)}")
        if len(present) > 1:
            _fail(text, f"keys {' and '.join(present)} both given (give exactly one)")
    for name, key in keys.items():
        if name in given:
            params[name] = _check(text, key, given[name])
        elif name in one_of and (present or name not in omit):
            continue
        elif key.optional:  # left out: absent from params (and from the label)
            continue
        elif name in omit:
            params[name] = None
        elif key.default is None:
            _fail(
                text,
                f"missing key {name!r} (kind {kind} needs "
                f"{', '.join(k for k in keys if keys[k].default is None and not keys[k].optional)})",
            )
        else:
            params[name] = key.default
    if kind in FILES:  # a spec that names a file: read here, on the input floor (the engine reads no file)
        params = FILES[kind](params, lambda msg: _fail(text, msg))
    params = mech.complete(params, given, lambda msg: _fail(text, msg))
    if "sampling" in given and "q" not in given and sub:
        _fail(text, "key 'sampling' needs q=Q (the sampling rate in (0, 1])")
    if "q" in given and sub:  # subsampling of any kind (docs/math.md §2.11)
        params = {**params, "q": _check(text, sub["q"], given["q"])}
        params["sampling"] = _check(text, sub["sampling"], given.get("sampling", "poisson"))
    return MechanismSpec(kind=kind, params=params, count=count, text=text)


def parse_mechanisms(texts, omit: tuple[str, ...] = ()) -> list[MechanismSpec]:
    """Parse several specs (in order); the first error raised names its spec."""
    specs = [parse_mechanism(t, omit) for t in texts]
    if not specs:
        raise InputError("MECHANISM: give at least one mechanism, e.g. gaussian:sigma=1,count=10")
    return specs


def expand_sources(texts, stdin=None) -> list[str]:
    """The spec texts of the command line, with ``@FILE`` and ``-`` (standard input) replaced by the
    specs they hold: one per line, blank lines and ``#`` comments (whole lines or trailing) ignored.
    Errors name the file and line."""
    out: list[str] = []
    for text in texts:
        if text != "-" and not text.startswith("@"):
            out.append(text)
            continue
        path = text[1:] if text.startswith("@") else "-"
        name = "MECHANISM -" if path == "-" else f"MECHANISM @{path}"
        if not path:
            raise InputError("MECHANISM @: give a file after @ (e.g. @specs.txt), or - for standard input")
        for number, line in enumerate(read_lines(path, name, stdin), start=1):
            spec = line.split("#", 1)[0].strip()
            if not spec:
                continue
            try:
                parse_mechanism(spec)
            except InputError as exc:
                where = "stdin" if path == "-" else path
                raise InputError(f"{where} line {number}: {exc}") from None
            out.append(spec)
    return out


def merge_identical(specs: list[MechanismSpec]) -> list[MechanismSpec]:
    """Specs that describe the same mechanism, merged into one with the counts summed (first order kept),
    so that 10,000 listed ``gaussian:sigma=3`` cost what ``gaussian:sigma=3,count=10000`` costs."""
    merged: dict[tuple, MechanismSpec] = {}
    for s in specs:
        key = (s.kind, tuple(sorted(s.params.items(), key=lambda kv: kv[0])))
        if key in merged:
            first = merged[key]
            count = first.count + s.count
            if count > MAX_COUNT:
                raise InputError(
                    f"mechanism {s.text!r}: the specs identical to it add up to count {count}, above 10^12"
                )
            merged[key] = MechanismSpec(first.kind, first.params, count, first.text)
        else:
            merged[key] = s
    return list(merged.values())
