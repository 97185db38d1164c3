"""DpEvents in and out: dp-accounting's and jax_privacy's description of a run, as JSON (docs/math.md §2.16).

Every ``dp_accounting.DpEvent`` has a named-tuple form (``to_named_tuple()``: the class name, the module and the
fields, nested events as nested tuples).  Its JSON form here is that named tuple as an object, recursively::

    {"module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent", "count": 1000,
     "event": {"class_name": "PoissonSampledDpEvent", "sampling_probability": 0.01,
               "event": {"class_name": "GaussianDpEvent", "noise_multiplier": 1.1}}}

(``module_name`` optional on input).  :func:`specs_of_event` turns such an object into MECHANISM specs — an
event dpcalc cannot account for is refused in one line naming its class and its place in the tree
(``event.events[2].event``) — and :func:`event_of_specs` writes the event of a composition of specs (and of a
DP-SGD run) so that the same run can be checked in dp-accounting.

Correspondence (dpcalc kind ⇄ DpEvent):

* ``gaussian:sigma=S,sensitivity=D`` ⇄ ``GaussianDpEvent(noise_multiplier=S/D)``;
* ``laplace:scale=B,sensitivity=D`` ⇄ ``LaplaceDpEvent(noise_multiplier=B/D)``;
* ``discrete-laplace:scale=B,sensitivity=D`` ⇄ ``DiscreteLaplaceDpEvent(noise_parameter=1/B, sensitivity=D)``;
* ``randomized-response:epsilon=E`` ⇄ ``RandomizedResponseDpEvent(noise_parameter=p, num_buckets=k)``: k-ary
  randomized response (the truth with probability 1 − p, else a uniform bucket) is ε-DP with
  ε = log(1 + k(1 − p)/p), and its pair is dominated by binary randomized response of that ε (exact for k = 2);
* Poisson subsampling ``q=Q`` of a kind ⇄ ``PoissonSampledDpEvent(Q, event)`` (the subsampled Gaussian:
  ``subsampled-gaussian:sigma=S,q=Q``); ``sampling=fixed-size`` ⇄ ``SampledWithoutReplacementDpEvent`` (q = B/N);
* ``subsampled-gaussian:…,sampling=truncated-poisson,dataset_size=N,max_batch_size=B`` ⇄
  ``TruncatedSubsampledGaussianDpEvent``;
* ``mixture-gaussian`` ⇄ ``MixtureOfGaussiansDpEvent``; ``zcdp:rho=R`` ⇄ ``ZCDpEvent(R, xi=0)``;
* ``tree-aggregation:sigma=S,steps=T,epochs=E`` ⇄ ``SelfComposedDpEvent(SingleEpochTreeAggregationDpEvent(S, T),
  E)`` (a list of step counts, each record in one of the trees: the largest tree, whose depth bounds them all);
* ``count=K`` ⇄ ``SelfComposedDpEvent(event, K)``; several specs ⇄ ``ComposedDpEvent``; ``NoOpDpEvent`` is
  nothing.

Refused: ``NonPrivateDpEvent`` (no guarantee), ``UnsupportedDpEvent``, ``SampledWithReplacementDpEvent``,
``RepeatAndSelectDpEvent`` (use ``--tuning-runs``), ``ZCDpEvent`` with ξ ≠ 0, sampling of a composition (one
sample for many mechanisms is not their composition of samples), and unknown classes.
"""

from __future__ import annotations

import math

from dpcalc.errors import InputError
from dpcalc.input.spec import MechanismSpec, parse_mechanism
from dpcalc.input.text import load_json, read_bounded

#: The most bytes of a DpEvent file, and the deepest nesting read.
MAX_BYTES = 10_000_000
MAX_DEPTH = 64
#: The deepest JSON a DpEvent of :data:`MAX_DEPTH` events can be: an object and an array (a ComposedDpEvent's
#: ``events``) per event, and an array of numbers in the innermost one.
MAX_JSON_LEVELS = 2 * (MAX_DEPTH + 1) + 1
MAX_SPECS = 10_000
MODULE = "dp_accounting.dp_event"


def read_event(source: str, text: str | None = None, stdin=None) -> dict:
    """The JSON object of a DpEvent from a file, or ``-`` for standard input (``stdin``: a stream standing
    for it), its size and nesting bounded (``text`` given: already read).  Every fault is one
    :class:`InputError` naming ``--dp-event SOURCE`` (a closed standard input, too many bytes, nesting
    deeper than :data:`MAX_DEPTH` events, not JSON)."""
    name = f"--dp-event {source!r}"
    if text is None:
        text = read_bounded(source, name, MAX_BYTES, stdin)
    if len(text) > MAX_BYTES:
        raise InputError(f"{name}: more than {MAX_BYTES} bytes")
    obj = load_json(
        text,
        name,
        MAX_JSON_LEVELS,
        f"nested deeper than {MAX_DEPTH} events (JSON deeper than {MAX_JSON_LEVELS} levels)",
    )
    if not isinstance(obj, dict):
        raise InputError(f"{name}: must be a JSON object (a DpEvent's named-tuple form)")
    return obj


def _num(ev: dict, field: str, where: str, *, lo: float = 0.0, lo_open: bool = True, whole: bool = False):
    cls = ev.get("class_name")
    if field not in ev:
        raise InputError(f"{where} ({cls}): missing field {field!r}")
    v = ev[field]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(f"{where} ({cls}): {field} must be a finite number, got {v!r}")
    if v < lo or (lo_open and v == lo):
        raise InputError(f"{where} ({cls}): {field} must be {'>' if lo_open else '>='} {lo:g}, got {v!r}")
    if whole and float(v) != int(v):
        raise InputError(f"{where} ({cls}): {field} must be a whole number, got {v!r}")
    return int(v) if whole else float(v)


def _event(ev, where: str) -> dict:
    if not isinstance(ev, dict) or "class_name" not in ev:
        raise InputError(f"{where}: must be a DpEvent object with a class_name")
    return ev


def specs_of_event(ev: dict, where: str = "event", depth: int = 0) -> list[tuple[str, int]]:
    """``[(spec text without count, count)]`` of a DpEvent's JSON object (module docstring)."""
    if depth > MAX_DEPTH:
        shown = where if len(where) <= 60 else f"{where[:24]}...{where[-24:]}"
        raise InputError(f"nested deeper than {MAX_DEPTH} events (at {shown}, depth {depth})")
    ev = _event(ev, where)
    cls = ev["class_name"]
    if cls == "NoOpDpEvent":
        return []
    if cls == "SelfComposedDpEvent":
        count = _num(ev, "count", where, lo=0, lo_open=False, whole=True)
        inner = specs_of_event(_event(ev.get("event"), f"{where}.event"), f"{where}.event", depth + 1)
        return [(s, c * count) for s, c in inner if c * count > 0]
    if cls == "ComposedDpEvent":
        events = ev.get("events")
        if not isinstance(events, list):
            raise InputError(f"{where} (ComposedDpEvent): events must be a list")
        out: list[tuple[str, int]] = []
        for i, e in enumerate(events):
            out += specs_of_event(e, f"{where}.events[{i}]", depth + 1)
            if len(out) > MAX_SPECS:
                raise InputError(f"{where}: more than {MAX_SPECS} mechanisms")
        return out
    if cls in ("PoissonSampledDpEvent", "SampledWithoutReplacementDpEvent"):
        if cls == "PoissonSampledDpEvent":
            q = _num(ev, "sampling_probability", where, lo=0, lo_open=False)
            if q > 1:
                raise InputError(f"{where} ({cls}): sampling_probability must be <= 1, got {q!r}")
            extra = ""
        else:
            n = _num(ev, "source_dataset_size", where, whole=True)
            b = _num(ev, "sample_size", where, lo=0, lo_open=False, whole=True)
            if b > n:
                raise InputError(f"{where} ({cls}): sample_size {b} is larger than source_dataset_size {n}")
            q, extra = b / n, ",sampling=fixed-size"
        inner = specs_of_event(_event(ev.get("event"), f"{where}.event"), f"{where}.event", depth + 1)
        if q == 0 or not inner:
            return []
        if len(inner) != 1 or inner[0][1] != 1:
            raise InputError(
                f"{where} ({cls}): sampling one subsample for a composition of mechanisms is not their composition "
                "of subsamples; dpcalc accounts for a sampled single mechanism only"
            )
        spec = inner[0][0]
        if "q=" in spec:
            raise InputError(f"{where} ({cls}): a sampled event inside a sampled event")
        if spec.startswith("gaussian:") and ",sensitivity=" not in spec:
            return [(spec.replace("gaussian:", "subsampled-gaussian:", 1) + f",q={q!r}" + extra, 1)]
        return [(spec + f",q={q!r}" + extra, 1)]
    if cls == "GaussianDpEvent":
        s = _num(ev, "noise_multiplier", where, lo=0, lo_open=False)
        if s == 0:
            raise InputError(f"{where} (GaussianDpEvent): noise_multiplier 0 gives no privacy guarantee")
        return [(f"gaussian:sigma={s!r}", 1)]
    if cls == "LaplaceDpEvent":
        b = _num(ev, "noise_multiplier", where)
        return [(f"laplace:scale={b!r}", 1)]
    if cls == "DiscreteLaplaceDpEvent":
        a = _num(ev, "noise_parameter", where)
        d = _num(ev, "sensitivity", where, whole=True)
        return [(f"discrete-laplace:scale={1.0 / a!r},sensitivity={d}", 1)]
    if cls == "RandomizedResponseDpEvent":
        p = _num(ev, "noise_parameter", where, lo=0, lo_open=False)
        k = _num(ev, "num_buckets", where, whole=True)
        if p > 1:
            raise InputError(f"{where} ({cls}): noise_parameter must be in [0, 1], got {p!r}")
        if k == 1 or p == 1:
            return []  # one bucket, or always uniform: the output says nothing about the input
        if p == 0:
            raise InputError(f"{where} ({cls}): noise_parameter 0 gives no privacy guarantee (ε = inf)")
        eps = math.log1p(k * (1 - p) / p) * (1 + 2**-50)  # rounded up
        return [(f"randomized-response:epsilon={eps!r}", 1)]
    if cls == "MixtureOfGaussiansDpEvent":
        s = _num(ev, "standard_deviation", where)
        sens, probs = ev.get("sensitivities"), ev.get("sampling_probs")
        for name, vals in (("sensitivities", sens), ("sampling_probs", probs)):
            if (
                not isinstance(vals, list)
                or not vals
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
            ):
                raise InputError(f"{where} ({cls}): {name} must be a non-empty list of numbers")
        text = "|".join(repr(float(v)) for v in sens), "|".join(repr(float(v)) for v in probs)
        return [(f"mixture-gaussian:sigma={s!r},sensitivities={text[0]},probs={text[1]}", 1)]
    if cls == "ZCDpEvent":
        rho = _num(ev, "rho", where, lo=0, lo_open=False)
        xi = ev.get("xi", 0.0)
        if xi != 0:
            raise InputError(f"{where} (ZCDpEvent): xi = {xi!r}: only ξ = 0 (ρ-zCDP) is accounted for here")
        return [(f"zcdp:rho={rho!r}", 1)]
    if cls == "SingleEpochTreeAggregationDpEvent":
        s = _num(ev, "noise_multiplier", where)
        steps = ev.get("step_counts")
        counts = steps if isinstance(steps, list) else [steps]
        for t in counts:
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not t >= 1 or float(t) != int(t):
                raise InputError(f"{where} ({cls}): step_counts must be whole numbers >= 1, got {steps!r}")
        return [(f"tree-aggregation:sigma={s!r},steps={int(max(counts))}", 1)]
    if cls == "TruncatedSubsampledGaussianDpEvent":
        n = _num(ev, "dataset_size", where, whole=True)
        q = _num(ev, "sampling_probability", where)
        b = _num(ev, "truncated_batch_size", where, whole=True)
        s = _num(ev, "noise_multiplier", where)
        spec = f"subsampled-gaussian:sigma={s!r},q={q!r},sampling=truncated-poisson,dataset_size={n},max_batch_size={b}"
        return [(spec, 1)]
    why = {
        "NonPrivateDpEvent": "a non-private event: no finite guarantee",
        "UnsupportedDpEvent": "an event its own library could not describe",
        "SampledWithReplacementDpEvent": "sampling with replacement is not accounted for here",
        "RepeatAndSelectDpEvent": "repeat-and-select: give the run's specs with --tuning-runs instead",
    }.get(cls, "an unknown DpEvent class")
    raise InputError(f"{where} ({cls}): {why}")


def specs_of_event_object(ev: dict, source: str) -> list[MechanismSpec]:
    """The parsed specs of a DpEvent object (each with its count), errors naming ``source``."""
    out = []
    try:
        pairs = specs_of_event(ev)
    except InputError as exc:
        raise InputError(f"--dp-event {source!r}: {exc}") from None
    for text, count in pairs:
        out.append(parse_mechanism(f"{text},count={count}"))
    return out


# ------------------------------------------------------------------------------------------ writing


def _nt(cls: str, **fields) -> dict:
    return {"module_name": MODULE, "class_name": cls, **fields}


def event_of_spec(spec: MechanismSpec) -> dict:
    """The DpEvent of one spec (its count as SelfComposedDpEvent), or an :class:`InputError` naming the kind."""
    p, kind = spec.params, spec.kind
    q, sampling = p.get("q"), p.get("sampling", "poisson")
    if kind in ("gaussian", "subsampled-gaussian") and sampling != "truncated-poisson":
        ev = _nt("GaussianDpEvent", noise_multiplier=float(p["sigma"]) / float(p.get("sensitivity") or 1.0))
    elif kind == "subsampled-gaussian":
        ev = _nt(
            "TruncatedSubsampledGaussianDpEvent",
            dataset_size=int(p["dataset_size"]),
            sampling_probability=float(q),
            truncated_batch_size=int(p["max_batch_size"]),
            noise_multiplier=float(p["sigma"]),
        )
        q = None
    elif kind == "laplace":
        ev = _nt("LaplaceDpEvent", noise_multiplier=float(p["scale"]) / float(p.get("sensitivity") or 1.0))
    elif kind == "discrete-laplace":
        ev = _nt(
            "DiscreteLaplaceDpEvent",
            noise_parameter=1.0 / float(p["scale"]),
            sensitivity=int(p.get("sensitivity", 1)),
        )
    elif kind == "randomized-response":
        eps = (
            float(p["epsilon"])
            if p.get("epsilon") is not None
            else math.log(float(p["p"]) / (1 - float(p["p"])))
        )
        ev = _nt("RandomizedResponseDpEvent", noise_parameter=2.0 / (1.0 + math.exp(eps)), num_buckets=2)
    elif kind == "mixture-gaussian":
        from dpcalc.engine.mechanisms.mixture_gaussian import components  # lazy: numpy, for this kind only

        sens, probs = components(
            p
        )  # q (the group's sampling, or a subsample) is inside the mixture's weights
        ev = _nt(
            "MixtureOfGaussiansDpEvent",
            standard_deviation=float(p["sigma"]),
            sensitivities=sens,
            sampling_probs=probs,
        )
        q = None
    elif kind == "zcdp":
        ev = _nt("ZCDpEvent", rho=float(p["rho"]), xi=0.0)
    elif kind == "tree-aggregation":
        tree = _nt(
            "SingleEpochTreeAggregationDpEvent",
            noise_multiplier=float(p["sigma"]),
            step_counts=int(p["steps"]),
        )
        epochs = int(p.get("epochs", 1))
        ev = tree if epochs == 1 else _nt("SelfComposedDpEvent", event=tree, count=epochs)
    else:
        raise InputError(f"--write-dp-event: {spec.text!r}: kind {kind!r} has no DpEvent in dp-accounting")
    if q is not None and float(q) < 1.0:
        if sampling == "fixed-size":
            raise InputError(
                f"--write-dp-event: {spec.text!r}: fixed-size sampling needs the dataset and batch sizes "
                "(SampledWithoutReplacementDpEvent); give the spec with Poisson sampling or write the event by hand"
            )
        ev = _nt("PoissonSampledDpEvent", sampling_probability=float(q), event=ev)
    if spec.count != 1:
        ev = _nt("SelfComposedDpEvent", event=ev, count=int(spec.count))
    return ev


def event_of_specs(specs) -> dict:
    """The DpEvent of a composition: one spec's event, or a ComposedDpEvent of them."""
    events = [event_of_spec(s) for s in specs]
    return events[0] if len(events) == 1 else _nt("ComposedDpEvent", events=events)
