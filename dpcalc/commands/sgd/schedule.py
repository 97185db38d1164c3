"""``dpcalc sgd-epsilon --schedule FILE``: a DP-SGD run in phases — a warm-up at another batch size, a fine-tuning
stage with less noise, a resumed job — with the running ε after each phase (docs/math.md §3.12).

FILE is a CSV file, one phase a line, with a header naming its columns:

* ``noise_multiplier`` (alias ``sigma``);
* ``sample_rate``, or ``batch_size`` with ``dataset_size`` (a column, or ``--dataset-size``);
* ``steps``, or ``epochs`` (⌈E/q⌉ = ⌈E·N/B⌉ steps, as the command counts them);
* optionally ``sampling``: ``poisson``, ``fixed-size`` or ``truncated-poisson`` (default: ``--sampling``,
  itself poisson by default), and ``max_batch_size`` for truncated Poisson (which needs the dataset size too);

one phase's ``noise_multiplier`` may be ``?`` (JSON: ``null``): with ``--target-epsilon``, the smallest noise
multiplier of that phase for which the whole run's ε at δ is within the target (per accountant: a monotone
search on the schedule's own final ε, the answer computed and within the target, σ/(1 + 1e-4) computed and
above it; one phase: ``sgd-epsilon --target-epsilon``'s own calibration);

or a JSON file: an Opacus accountant's history, ``[[noise_multiplier, sample_rate, steps], ...]``, or an object
with such a ``history`` (Opacus's ``state_dict()`` as JSON, or :class:`dpcalc.api.Accountant`'s state).

Every phase is DP-SGD with its sampler; phases compose (Mironov 2017, Prop. 1 for the Rényi curves, each phase's
the sampler's own, :func:`dpcalc.engine.dpsgd.accounting.rdp_total`; the PLD of the composition for pld,
:func:`dpcalc.engine.composition.pld.compose_pld`, Poisson phases only).  A schedule of one phase is
answered exactly as ``sgd-epsilon`` without ``--schedule``.  Rows: one per phase and accountant, ε after that
phase (the running ε, non-decreasing).
"""

from __future__ import annotations

import io
import math

import numpy as np

from dpcalc.api.accountant import Accountant
from dpcalc.api.dpsgd import sgd_noise_multiplier
from dpcalc.commands import schema
from dpcalc.engine.composition.pld import calibrate_compose_pld
from dpcalc.engine.conversion.of_curve import eps_of_curve
from dpcalc.engine.dpsgd.accounting import check_setting, rdp_total
from dpcalc.engine.orders import DEFAULT_ORDERS
from dpcalc.engine.pld.search import boundary
from dpcalc.errors import InputError
from dpcalc.input.text import csv_records, load_json, read_bounded
from dpcalc.result import PlotSpec, Result

#: The most bytes of a schedule file; the most phases (rdp); the most phases the pld accountant composes
#: (one composition of every prefix: about a second each).
MAX_BYTES = 10_000_000
MAX_PHASES = 10_000
MAX_PLD_PHASES = 50
#: The relative step of the noise search (as sgd-epsilon's), and its range.
SIGMA_RTOL = 1e-4
SIGMA_RANGE = (1e-3, 1e6)
#: What a phase's noise cell holds when its noise is to be found.
FREE = "?"
#: The samplers a phase may use: those whose Rényi curve of a run is steps × a per-step curve.
SAMPLERS = ("poisson", "fixed-size", "truncated-poisson")
COLUMNS = tuple(name for name, _ in schema.SCHEDULE_SCHEMAS["sgd-epsilon"])
_ALIASES = {"sigma": "noise_multiplier", "noise-multiplier": "noise_multiplier", "sample-rate": "sample_rate"}


def _name(path: str) -> str:
    return f"--schedule {path!r}"


def schedule_text(path: str) -> str:
    """The schedule's text (``-``: standard input), read by the one reader of whole text inputs
    (:func:`dpcalc.input.text.read_bounded`: bounded, UTF-8, a closed standard input refused)."""
    return read_bounded(path, _name(path), MAX_BYTES)


def _read(path: str, text: str | None) -> str:
    return text if text is not None else schedule_text(path)


def _number(path, where, name, value, *, whole=False, lo=0.0, hi=None):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"--schedule {path!r}, {where}: {name} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(v) or not v > lo or (hi is not None and v > hi):
        bound = f"in ({lo:g}, {hi:g}]" if hi is not None else f"> {lo:g}"
        raise InputError(
            f"--schedule {path!r}, {where}: {name} must be a finite number {bound}, got {value!r}"
        )
    if whole and v != math.floor(v):
        raise InputError(f"--schedule {path!r}, {where}: {name} must be a whole number, got {value!r}")
    return v


def read_schedule(path: str, text: str | None = None, dataset_size=None, sampling: str = "poisson"):
    """``(phases, settings)`` of a schedule file (module docstring), every fault named by the file and its line
    (or phase): the phases ``(noise_multiplier, sample_rate, steps)`` (a noise multiplier to be found is
    ``None``), and for each its ``(sampling, dataset_size, max_batch_size, where)`` (``sampling``: the default
    for a phase that does not name one)."""
    body = _read(path, text)
    if len(body) > MAX_BYTES:
        raise InputError(f"--schedule {path!r}: more than {MAX_BYTES} bytes")
    stripped = body.lstrip()
    if stripped.startswith(("[", "{")):
        phases = _json_phases(path, stripped)
        n = None if dataset_size is None else float(dataset_size)
        return phases, [(sampling, n, None, f"phase {i}") for i in range(1, len(phases) + 1)]
    return _csv_phases(path, body, dataset_size, sampling)


def _json_phases(path, body):
    obj = load_json(body, _name(path))
    history = obj.get("history") if isinstance(obj, dict) else obj
    if not isinstance(history, list) or not history:
        raise InputError(
            f"--schedule {path!r}: a JSON schedule is a list of [noise_multiplier, sample_rate, steps] "
            "(an Opacus history) or an object with such a history"
        )
    if len(history) > MAX_PHASES:
        raise InputError(f"--schedule {path!r}: {len(history)} phases, above the limit of {MAX_PHASES}")
    out = []
    for i, phase in enumerate(history, start=1):
        where = f"phase {i}"
        if not isinstance(phase, (list, tuple)) or len(phase) != 3:
            raise InputError(f"--schedule {path!r}, {where}: must be [noise_multiplier, sample_rate, steps]")
        s = None if phase[0] in (None, FREE) else _number(path, where, "noise_multiplier", phase[0])
        q = _number(path, where, "sample_rate", phase[1], hi=1.0)
        t = _number(path, where, "steps", phase[2], whole=True)
        out.append((s, q, int(t)))
    return out


def _csv_phases(path, body, dataset_size, sampling):
    records = [
        (n, r)
        for n, r in csv_records(io.StringIO(body, newline=""), _name(path))
        if r and not (len(r) == 1 and not r[0].strip()) and not r[0].lstrip().startswith("#")
    ]
    rows = [r for _, r in records]
    if len(rows) < 2:
        raise InputError(f"--schedule {path!r}: needs a header line and at least one phase")
    header = [_ALIASES.get(h.strip(), h.strip()) for h in rows[0]]
    at_header = f"line {records[0][0]}"
    known = {
        "noise_multiplier",
        "sample_rate",
        "batch_size",
        "dataset_size",
        "steps",
        "epochs",
        "sampling",
        "max_batch_size",
    }
    for h in header:
        if h not in known:
            raise InputError(
                f"--schedule {path!r}, {at_header}: unknown column {h!r} (columns: {', '.join(sorted(known))})"
            )
    if "noise_multiplier" not in header:
        raise InputError(f"--schedule {path!r}, {at_header}: needs a noise_multiplier column")
    if ("sample_rate" in header) == ("batch_size" in header):
        raise InputError(
            f"--schedule {path!r}, {at_header}: needs a sample_rate column, or batch_size (with dataset_size)"
        )
    if ("steps" in header) == ("epochs" in header):
        raise InputError(f"--schedule {path!r}, {at_header}: needs a steps column or an epochs column")
    if len(rows) - 1 > MAX_PHASES:
        raise InputError(f"--schedule {path!r}: {len(rows) - 1} phases, above the limit of {MAX_PHASES}")
    out, settings = [], []
    for line, row in records[1:]:
        where = f"line {line}"
        if len(row) != len(header):
            raise InputError(f"--schedule {path!r}, {where}: {len(row)} fields, the header has {len(header)}")
        v = dict(zip(header, (x.strip() for x in row)))
        kind = v.get("sampling") or sampling
        if kind not in SAMPLERS:
            raise InputError(
                f"--schedule {path!r}, {where}: sampling {kind!r}: phases compose here for "
                f"{', '.join(SAMPLERS)} (samplers with a Rényi curve per step)"
            )
        s = (
            None
            if v["noise_multiplier"] == FREE
            else _number(path, where, "noise_multiplier", v["noise_multiplier"])
        )
        if "sample_rate" in v:
            q = _number(path, where, "sample_rate", v["sample_rate"], hi=1.0)
            n = b = None
        else:
            n_text = v.get("dataset_size") or (None if dataset_size is None else str(dataset_size))
            if n_text is None:
                raise InputError(
                    f"--schedule {path!r}, {where}: batch_size needs dataset_size (a column or --dataset-size)"
                )
            n = _number(path, where, "dataset_size", n_text, whole=True)
            b = _number(path, where, "batch_size", v["batch_size"], whole=True)
            if b > n:
                raise InputError(
                    f"--schedule {path!r}, {where}: batch_size {b:g} is larger than dataset_size {n:g}"
                )
            q = b / n
        if "steps" in v:
            t = _number(path, where, "steps", v["steps"], whole=True)
        else:
            e = _number(path, where, "epochs", v["epochs"])
            t = max(math.ceil(e * n / b) if b is not None else math.ceil(e / q), 1)
        if t > 2**53:
            raise InputError(f"--schedule {path!r}, {where}: more than 2^53 steps")
        if n is None and (v.get("dataset_size") or dataset_size is not None):
            n = _number(path, where, "dataset_size", v.get("dataset_size") or str(dataset_size), whole=True)
        bmax = v.get("max_batch_size") or None
        bmax = None if bmax is None else _number(path, where, "max_batch_size", bmax, whole=True)
        if kind == "truncated-poisson" and (n is None or bmax is None):
            raise InputError(
                f"--schedule {path!r}, {where}: sampling truncated-poisson needs dataset_size and max_batch_size"
            )
        out.append((s, q, int(t)))
        settings.append((kind, n, bmax, where))
    return out, settings


def sgd_schedule(
    phases, delta, accountant, neighbors, conversion, eps_error, path="", target=None, settings=None
) -> Result:
    """One row per phase and accountant: the phase and ε after it (the running ε) at each δ.  With
    ``target``: the noise of the phase that left it out (``None``), found per accountant (module docstring).
    ``settings``: each phase's ``(sampling, dataset_size, max_batch_size, where)`` (:func:`read_schedule`;
    None: all Poisson)."""
    settings = _checked_settings(phases, settings, neighbors, path)
    names = ["rdp", "pld"] if accountant == "all" else [accountant]
    if any(n not in ("rdp", "pld") for n in names):
        raise InputError(f"--method {accountant}: a schedule is answered by rdp and pld (or all)")
    if "pld" in names and len(phases) > MAX_PLD_PHASES:
        raise InputError(
            f"--schedule {path!r}: {len(phases)} phases, above the limit of {MAX_PLD_PHASES} for the pld accountant "
            "(one composition per phase); use --method rdp"
        )
    other = next((st for st in settings if st[0] != "poisson"), None)
    if "pld" in names and other is not None:
        raise InputError(
            f"--schedule {path!r}, {other[3]}: sampling {other[0]}: the pld accountant composes Poisson phases "
            "here; use --method rdp"
        )
    if "pld" in names and len(phases) > 1 and neighbors != "add-remove":
        raise InputError(
            "--schedule with --neighbors replace-one: phases compose by rdp only here; use --method rdp"
        )
    deltas = np.atleast_1d(np.asarray(delta, float))
    free = _free_phase(phases, path, target, deltas)
    out: dict[str, list] = {c: [] for c in COLUMNS}
    total = np.cumsum([t for _, _, t in phases])
    for name in names:
        run, note = phases, ""
        if free is not None:
            sigma = _solve_sigma(
                name, phases, free, float(deltas[0]), target, neighbors, conversion, eps_error, settings
            )
            if sigma is None:
                note = f"no noise multiplier up to {SIGMA_RANGE[1]:g} meets ε ≤ {target:g}"
                sigma = math.inf
            else:
                note = f"noise multiplier found: the least with ε ≤ {target:g} after the last phase"
            run = [(sigma if i == free else s, q, t) for i, (s, q, t) in enumerate(phases)]
        unsolved = free is not None and not math.isfinite(run[free][0])
        for d in deltas:
            if name == "rdp" and not unsolved:
                values = _rdp_running(run, d, neighbors, conversion, settings)
            elif name == "rdp":  # the phases before the free one, then no finite ε
                head = _rdp_running(run[:free], d, neighbors, conversion, settings[:free]) if free else []
                values = [*head, *[math.inf] * (len(run) - free)]
            for i, (s, q, t) in enumerate(run):
                if unsolved and i >= free:
                    eps, lower, est = math.inf, None, None  # no bound, and no lower bound claimed
                elif name == "rdp":
                    eps, lower, est = values[i], None, None
                else:
                    b = _pld_bracket(run[: i + 1], float(d), neighbors, eps_error)
                    eps, lower, est = b.value, b.lower, b.estimate
                row = {
                    "phase": i + 1,
                    "accountant": name,
                    "noise_multiplier": s,
                    "sample_rate": q,
                    "steps": t,
                    "total_steps": int(total[i]),
                    "delta": float(d),
                    "epsilon": float(eps),
                    "epsilon_lower": None if lower is None else float(lower),
                    "epsilon_estimate": None if est is None else float(est),
                    "note": note if i == free else "",
                }
                for c in COLUMNS:
                    out[c].append(row[c])
    caption = (
        f"schedule: {len(phases)} phases, {_samplers(settings)}, neighbours: {neighbors}; epsilon: after the phase (the "
        "running ε of the phases so far, a certified upper bound)"
        + ("; pld: [epsilon_lower, epsilon] the certified bracket" if "pld" in names else "")
        + (f"; rdp: conversion {conversion}" if "rdp" in names else "")
    )
    res = Result(
        out,
        headline="epsilon",
        title="DP-SGD schedule: the running ε",
        caption=caption,
        found=("noise_multiplier",) if free is not None else (),  # the free phase's: rounded up in a table
    )
    if len(phases) > 1:
        res.plot = PlotSpec(
            x="total_steps",
            y="epsilon",
            series="accountant",
            group=("delta",) if deltas.size > 1 else (),
            band=("epsilon_lower", "epsilon") if "pld" in names else None,
            xlabel="steps so far",
            ylabel="ε (nats) after the phase",
            title="DP-SGD schedule: the running ε",
        )
    return res


def _checked_settings(phases, settings, neighbors, path) -> list:
    """Each phase's sampler setting (all Poisson when not given), every sampler checked against the
    neighbouring relation (the refusal names the phase's line)."""
    if settings is None:
        return [("poisson", None, None, f"phase {i}") for i in range(1, len(phases) + 1)]
    seen = set()
    for kind, _, _, where in settings:
        if kind not in seen:
            seen.add(kind)
            try:
                check_setting(kind, neighbors)
            except InputError as exc:
                raise InputError(f"--schedule {path!r}, {where}: {exc}") from None
    return list(settings)


def _samplers(settings) -> str:
    kinds = list(dict.fromkeys(st[0] for st in settings))
    return ("sampling: " + ", ".join(kinds)) if kinds != ["poisson"] else "Poisson sampling"


def _free_phase(phases, path, target, deltas) -> int | None:
    """The index of the phase whose noise is to be found (``None`` if none), the options checked."""
    free = [i for i, (s, _, _) in enumerate(phases) if s is None]
    if len(free) > 1:
        raise InputError(
            f"--schedule {path!r}: phases {free[0] + 1} and {free[1] + 1} both leave their noise multiplier "
            f"out ({FREE}); one phase's noise is found at a time"
        )
    if free and target is None:
        raise InputError(
            f"--schedule {path!r}: phase {free[0] + 1} leaves its noise multiplier out ({FREE}): "
            "give --target-epsilon to find it"
        )
    if target is not None and not free:
        raise InputError(
            f"--target-epsilon with --schedule: write {FREE} as the noise multiplier of the phase whose noise "
            "to find"
        )
    if free and deltas.size != 1:
        raise InputError("--target-epsilon with --schedule: give a single --delta")
    return free[0] if free else None


def _solve_sigma(
    name, phases, free, delta, target, neighbors, conversion, eps_error, settings
) -> float | None:
    """The least noise multiplier of phase ``free`` with the run's final ε at most ``target`` by accountant
    ``name`` (``None``: none in :data:`SIGMA_RANGE`).  One phase under add/remove: sgd-epsilon's own
    calibration; several (pld): the calibration of the composition of the phases' PLDs, whose every check is
    the composition the table computes (:func:`~dpcalc.engine.composition.pld.calibrate_compose_pld`); else a
    monotone search (:func:`~dpcalc.engine.pld.search.boundary`) on the schedule's final ε."""

    def fill(sigma):
        return [(sigma if i == free else s, q, t) for i, (s, q, t) in enumerate(phases)]

    others = [p for i, p in enumerate(phases) if i != free]
    rest = [st for i, st in enumerate(settings) if i != free]
    if others and _final(name, others, delta, neighbors, conversion, eps_error, rest) > target:
        return None  # the other phases alone are above the target (no noise in this one can help)

    if len(phases) == 1 and neighbors == "add-remove" and settings[0][0] == "poisson":
        (_, q, t) = phases[0]
        kw = {"conversion": conversion} if name == "rdp" else {"eps_error": eps_error}
        sigma = sgd_noise_multiplier(q, t, delta, target, accountant=name, rtol=SIGMA_RTOL, **kw).value
    elif name == "pld" and neighbors == "add-remove":
        sigma, *_ = calibrate_compose_pld(
            lambda x: [
                ("subsampled-gaussian", {"q": float(q), "sigma": float(s)}, int(t)) for s, q, t in fill(x)
            ],
            delta,
            target,
            rtol=SIGMA_RTOL,
            eps_error=eps_error,
            lo=SIGMA_RANGE[0],
            hi=SIGMA_RANGE[1],
        )
    else:

        def search(conv, start, step):
            test = lambda x: (_final(name, fill(x), delta, neighbors, conv, eps_error, settings), None)  # noqa: E731
            return boundary(
                test,
                target,
                start,
                ok_above=True,
                lo=SIGMA_RANGE[0],
                hi=SIGMA_RANGE[1],
                rtol=SIGMA_RTOL,
                first_step=step,
            )

        start, step = 1.0, 1.1
        if name == "rdp" and conversion == "optimal":
            # steered by Balle et al.'s conversion (a closed form, never below the optimal one: its answer
            # meets the target here too), then searched from there by the conversion the table prints
            rough = search("balle", 1.0, 1.1)
            if rough.x is not None:
                start, step = rough.x, 1.02
        sigma = search(conversion, start, step).x
    sigma = None if sigma is None else float(sigma)
    return sigma if sigma is not None and math.isfinite(sigma) else None


def _final(name, run, delta, neighbors, conversion, eps_error, settings) -> float:
    """The run's ε after its last phase by accountant ``name`` (what the table's last row prints)."""
    if name == "rdp":
        return _rdp_running(run, delta, neighbors, conversion, settings)[-1]
    return _pld_bracket(run, delta, neighbors, eps_error).value


def _pld_bracket(run, delta, neighbors, eps_error):
    """The pld accountant's bracket of the phases ``run`` at ``delta`` (:class:`~dpcalc.api.Accountant`: one
    phase is sgd-epsilon's own computation, several the composition of their PLDs)."""
    acc = Accountant("pld", neighbors=neighbors, eps_error=eps_error)
    for s, q, t in run:
        acc.step(noise_multiplier=s, sample_rate=q, steps=t)
    return acc.get_bracket(delta)


def _rdp_running(phases, delta, neighbors, conversion, settings) -> list[float]:
    """ε after each phase by RDP: the prefix sums of the phases' curves (each its sampler's), converted (one
    Poisson phase: the one-shot function's own arithmetic, :class:`~dpcalc.api.Accountant`)."""
    if any(st[0] != "poisson" for st in settings):
        return _rdp_running_samplers(phases, delta, neighbors, conversion, settings)
    if len(phases) == 1:
        acc = Accountant("rdp", neighbors=neighbors, conversion=conversion)
        acc.step(noise_multiplier=phases[0][0], sample_rate=phases[0][1], steps=phases[0][2])
        return [acc.get_epsilon(float(delta))]
    sigma, q, t = (np.array(c, dtype=float) for c in zip(*phases))
    orders = np.asarray(DEFAULT_ORDERS, float)
    with np.errstate(over="ignore", invalid="ignore"):
        curves = rdp_total(q, sigma, t, orders, neighbors=neighbors)
        running = np.cumsum(curves, axis=0)
    b = eps_of_curve(orders, running, np.full(len(phases), float(delta)), conversion)
    return [float(v) for v in np.asarray(b.value).reshape(-1)]


def _rdp_running_samplers(phases, delta, neighbors, conversion, settings) -> list[float]:
    """As :func:`_rdp_running` with phases of several samplers: each sampler's phases' curves at once
    (:func:`~dpcalc.engine.dpsgd.accounting.rdp_total`, the curve ``sgd-epsilon --sampling`` converts)."""
    orders = np.asarray(DEFAULT_ORDERS, float)
    sigma, q, t = (np.array(c, dtype=float) for c in zip(*phases))
    curves = np.empty((len(phases), orders.size))
    kinds = np.array([st[0] for st in settings])
    with np.errstate(over="ignore", invalid="ignore"):
        for kind in dict.fromkeys(kinds):
            at = np.flatnonzero(kinds == kind)
            n = np.array([settings[i][1] for i in at], dtype=float) if kind != "poisson" else None
            bmax = (
                np.array([settings[i][2] for i in at], dtype=float) if kind == "truncated-poisson" else None
            )
            if kind == "fixed-size" and np.isnan(n).any():
                n = None  # the dataset size is not needed for fixed-size's curve
            curves[at] = rdp_total(
                q[at],
                sigma[at],
                t[at],
                orders,
                sampling=kind,
                neighbors=neighbors,
                dataset_size=n,
                max_batch_size=bmax,
            )
        running = np.cumsum(curves, axis=0)
    if len(phases) == 1:
        return [float(np.asarray(eps_of_curve(orders, running[0], float(delta), conversion).value))]
    b = eps_of_curve(orders, running, np.full(len(phases), float(delta)), conversion)
    return [float(v) for v in np.asarray(b.value).reshape(-1)]
