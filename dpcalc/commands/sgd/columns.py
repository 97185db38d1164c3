"""The output columns of ``dpcalc sgd-epsilon``'s rows (docs/math.md §3): the answers of each accountant
(:mod:`dpcalc.engine.dpsgd`, and the PLD accountant, docs/math.md §7) on a chunk of combinations, as the columns of
:data:`ALL_COLUMNS` (the documented schema, :mod:`dpcalc.commands.schema`), with each row's note (why a row has no
answer; δ = 0, docs/math.md §2.7)."""

from __future__ import annotations

import math

import numpy as np

from dpcalc.commands import noise_std, schema
from dpcalc.commands.sgd.group import group_caption
from dpcalc.commands.sgd.rows import SIGMA_RTOL

METHOD_LABEL = {
    "rdp": "rdp",
    "pld": "pld",
    "abadi": "abadi-asymptotic",
    "bassily": "bassily-reference",
    "shuffle": "shuffle-gaussian",  # the shuffle sampler's own row (dpcalc.engine.samplers.shuffle)
    "mc": "balls-in-bins-mc",  # dpcalc.engine.dpsgd.balls_in_bins_mc
    "rdp-group": "rdp-group",  # --group-size: the generic routes (dpcalc.commands.sgd.group)
    "dp-group": "dp-group",
    "last-iterate": "last-iterate-heuristic",  # --release last-iterate: an estimate, never a bound
}


#: The note of every row of an accountant (pld rows carry their own: a refusal's reason).
_NOTE = {
    "abadi": "asymptotic closed form: not a guarantee where valid is false",
    "bassily": "reference formula: not a guarantee where valid is false",
    "last-iterate": (
        "heuristic, NOT a bound: Steinke et al. 2025 (arXiv:2410.06186), exact for linear losses when only the "
        "last model is released; the paper gives counterexamples, and it is not monotone in the steps (fewer "
        "steps can leak more)"
    ),
}

#: Every column sgd-epsilon prints, in order (the documented schema of dpcalc.commands.schema).
ALL_COLUMNS = tuple(schema.names("sgd-epsilon"))


def result_columns(question, way, g, cols, given_k=True) -> dict:
    """The output columns (:data:`ALL_COLUMNS`) of one accountant's answers ``cols`` to ``question`` on the
    combinations ``g``, by the route ``way`` (:func:`dpcalc.commands.sgd.group.route`: its accountant, group
    size and note); ``given_k``: whether --group-size was given, else the group_size column is empty."""
    p, solve, sampler = question.params, question.solve, question.sampler
    name, columns = way.accountant, ALL_COLUMNS
    n = g["q"].size
    out: dict[str, list] = {k: [] for k in columns}
    theorem = way.note if way.note is not None else sampler.note(name, p.neighbors, _NOTE.get(name, ""))
    e = cols["eps"]
    steps = np.asarray(cols["steps"], float).reshape(-1)
    q = np.asarray(cols["q"], float).reshape(-1) if "q" in cols else g["q"]
    batch = None
    if "b" in g:
        batch = g["b"].astype(int).tolist()
    elif solve == "q" and "n" in g:
        batch = [None if not b > 0 else int(b) for b in np.round(q * g["n"])]
    values = {
        "method": [METHOD_LABEL[name]] * n,
        "accountant": [name] * n,
        "conversion": [
            p.conversion
            if name in ("rdp", "rdp-group", "dp-group")
            else ("classic" if name == "abadi" else "")
        ]
        * n,
        "sampling": [p.sampling] * n,
        "neighbors": [p.neighbors] * n,
        "group_size": [way.k if given_k else None] * n,
        "sample_rate": _numbers(q),
        "batch_size": batch,
        "dataset_size": g["n"].astype(int).tolist() if "n" in g else None,
        "max_batch_size": g["bmax"].astype(int).tolist() if "bmax" in g else None,
        "noise_multiplier": np.asarray(cols["noise_multiplier"], float).reshape(-1).tolist(),
        "steps": _whole(steps),
        "epochs": g["epochs"].tolist()
        if "epochs" in g
        else (
            _numbers(sampler.whole_epochs_within(steps, g["q"], g.get("n"), g.get("b")))
            if solve == "steps"
            else None
        ),
        "delta": g["delta"].tolist() if "delta" in g else None,
        "target_epsilon": g["target"].tolist() if solve is not None else None,
        "epsilon": np.asarray(e.epsilon, float).reshape(-1).tolist(),
        "epsilon_lower": cols["lower"].tolist() if "lower" in cols else [None] * n,
        "epsilon_estimate": cols["estimate"].tolist() if "estimate" in cols else [None] * n,
        "confidence": [p.confidence] * n if name == "mc" else None,
        "samples": [p.mc_samples] * n if name == "mc" else None,
        "alpha": _numbers(e.alpha),
        "valid": np.asarray(e.valid, dtype=bool).reshape(-1).tolist(),
        "note": _notes(theorem, cols.get("note"), n),
    }
    if "eps" in g:  # δ at ε (--epsilon): the accountant's values are δ's, the ε given is a column
        values["delta"], values["epsilon"] = values["epsilon"], g["eps"].tolist()
        values["delta_lower"], values["epsilon_lower"] = values["epsilon_lower"], None
        values["delta_estimate"], values["epsilon_estimate"] = values["epsilon_estimate"], None
    else:
        values["delta_lower"] = values["delta_estimate"] = None
    zero = g["delta"] == 0 if "delta" in g else np.zeros(n, bool)  # ε = inf there (docs/math.md §2.7)
    values["note"] = [
        _ZERO_NOTE + ("; " + note if note else "") if z and not note.startswith("does not apply") else note
        for z, note in zip(zero, values["note"])
    ]
    if solve is not None:  # an inverse question nothing answers: say why in the row
        values["note"] = _unsolved_notes(solve, "n" in g, values)
    # a row the accountant could not compute is no statement at all: neither valid nor invalid; nor a heuristic's
    values["valid"] = [
        None if note.startswith("does not apply") or name == "last-iterate" else v
        for v, note in zip(values["valid"], values["note"])
    ]
    for k in columns:
        out[k] += values[k] if values[k] is not None else [None] * n
    return out


def caption(question, g) -> str:
    """The caption of ``question``'s rows (``g``: the swept inputs): the setting, what the columns of each
    accountant mean, what was solved for."""
    p, names, solve, sampler = question.params, question.accountants, question.solve, question.sampler
    relation = sampler.relation_caption(p.neighbors)
    caption = f"sampling: {p.sampling}; neighbours: {p.neighbors} ({relation})"
    caption += noise_std.caption(p.noise_std)  # --noise-std/--clip-norm: σ = S/C
    if "rdp" in names:
        caption += f"; conversion: {p.conversion}"
    caption += sampler.caption
    x = "delta" if question.at_eps else "epsilon"  # what the rows bound: δ at ε with --epsilon
    if "pld" in names and sampler.pld_upper_only:
        caption += (
            f"; pld: {x} is a certified upper bound (no lower end or estimate: {sampler.pld_upper_why})"
        )
    elif "pld" in names:
        caption += f"; pld: [{x}_lower, {x}] is the certified bracket, {x}_estimate lies inside it"
    if question.at_eps:
        caption += "; delta: δ at the epsilon given"
    if "last-iterate" in names:
        caption += "; last-iterate-heuristic: an estimate (Steinke et al. 2025), not a bound"
    if p.tuning is not None:
        caption += f"; tuning: {p.tuning.label()}, the best of K runs released (rdp only)"
    if p.accumulation is not None:
        caption += _accumulation_caption(p.accumulation, p.dataset_size)
    if question.person:
        caption += group_caption(p.group_size, names, sampler, p.neighbors)
    if "epochs" in g and not sampler.whole_epochs:
        caption += "; steps = ceil(epochs / sample_rate)"
    if solve == "sigma":
        caption += f"; noise_multiplier: the smallest (within a factor {1 + SIGMA_RTOL:g}) with ε <= target"
    elif solve == "steps":
        caption += "; steps: the largest with ε <= target (epochs: the whole epochs within them)"
    elif solve == "q" and "n" in g:
        caption += "; batch_size: the largest with ε <= target (sample_rate = batch_size / dataset_size)"
    elif solve == "q":
        caption += f"; sample_rate: the largest (within a factor {1 + SIGMA_RTOL:g}) with ε <= target"
    return caption


def _accumulation_caption(accumulation: tuple[int, int], dataset_size) -> str:
    """What gradient accumulation was taken to mean: the logical batch, its sample rate, the steps."""
    physical, steps = accumulation
    logical = physical * steps
    n = f"{dataset_size[0]}" if dataset_size is not None and len(dataset_size) == 1 else "dataset_size"
    return (
        f"; logical batch = physical {physical} × accumulation {steps} = {logical}; sample_rate = {logical}/{n}; "
        "steps = optimizer steps (one noise addition each)"
    )


def _notes(theorem: str, notes, n: int) -> list:
    """The note column of one accountant's ``n`` rows: a row's own note (a refusal's reason) if it has
    one, else the theorem and neighbouring relation of the setting (or the accountant's note)."""
    if notes is None:
        return [theorem] * n
    return [note if note else theorem for note in notes]


_ZERO_NOTE = "δ = 0: the subsampled Gaussian's privacy loss is unbounded, no finite ε"

#: Why an inverse row has no answer, by the quantity solved for (with a dataset size for "q").
_UNSOLVED = {
    "sigma": "no solution: no noise multiplier in the range searched meets the target ε",
    "steps": "no solution: even one step exceeds the target ε",
    "q": "no solution: even the smallest sample rate searched exceeds the target ε",
    "b": "no solution: even a batch of one exceeds the target ε",
}


def _unsolved_notes(solve: str, by_batch: bool, values: dict) -> list:
    """The notes of an inverse question's rows, each row without an answer (no ε: σ = inf, 0 steps, a
    sample rate of 0) saying why first, unless its note already does (δ = 0, a tuned row's miss) or the
    accountant does not apply."""
    solved = {"sigma": "noise_multiplier", "steps": "steps", "q": "sample_rate"}[solve]
    why = _UNSOLVED["b" if solve == "q" and by_batch else solve]
    out = []
    for x, eps, note in zip(values[solved], values["epsilon"], values["note"]):
        missing = x is None or not math.isfinite(x) or (solve != "sigma" and x == 0)
        if (
            missing
            and not (eps is not None and math.isfinite(eps))
            and not note.startswith(("does not apply", _ZERO_NOTE))
            and "the target" not in note
        ):
            note = why + ("; " + note if note else "")
        out.append(note)
    return out


def _numbers(x) -> list:
    """Floats, None where nan (a value the row does not have)."""
    x = np.asarray(x, float).reshape(-1)
    return _none_where(x.tolist(), np.isnan(x))


def _whole(x) -> list:
    """Whole numbers (Python ints, as ``int(t)`` gives them), None where nan."""
    x = np.asarray(x, float).reshape(-1)
    nan = np.isnan(x)
    if np.all(nan | (np.abs(x) < 2.0**53)):  # exact in int64: the same ints as int(t), in one pass
        return _none_where(np.where(nan, 0.0, x).astype(np.int64).tolist(), nan)
    return [None if t else int(v) for v, t in zip(x.tolist(), nan.tolist())]


def _none_where(values: list, missing) -> list:
    """``values`` with None at the positions where ``missing`` (bool array) is true."""
    for i in np.flatnonzero(missing).tolist():
        values[i] = None
    return values
