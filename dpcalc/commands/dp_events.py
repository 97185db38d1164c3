"""``compose --dp-event FILE`` and ``--write-dp-event``: a composition read from, or written as, a DpEvent of
dp-accounting / jax_privacy (:mod:`dpcalc.input.dpevent`, docs/math.md §2.16)."""

from __future__ import annotations

import json

import numpy as np

from dpcalc.commands.sgd.question import ask
from dpcalc.errors import InputError
from dpcalc.input.dpevent import event_of_specs, read_event, specs_of_event_object
from dpcalc.input.spec import expand_sources, merge_identical, parse_mechanisms


def event_specs(sources) -> tuple[str, ...]:
    """The MECHANISM texts of the DpEvent files ``sources`` (``-``: standard input, read once)."""
    return tuple(text for _, text in sourced_event_specs(sources))


def sourced_event_specs(sources) -> list[tuple[str, str]]:
    """``(source, MECHANISM text)`` for each spec of the DpEvent files ``sources``, in their order (a
    ComposedDpEvent's events one by one; ``-``: standard input, read once)."""
    out: list[tuple[str, str]] = []
    stdin_used = False
    for source in sources:
        if source == "-":
            if stdin_used:
                raise InputError("--dp-event -: standard input can be read once")
            stdin_used = True
        obj = read_event(source)  # "-": standard input (dpcalc.input.text: a closed one is refused)
        out += [(source, s.label()) for s in specs_of_event_object(obj, source)]
    return out


def write_event(texts) -> str:
    """The DpEvent JSON of the composition of the MECHANISM texts (identical specs merged)."""
    specs = merge_identical(parse_mechanisms(expand_sources(texts)))
    return json.dumps(event_of_specs(specs), indent=2)


def sgd_event(params) -> str:
    """The DpEvent JSON of one DP-SGD configuration of ``sgd-epsilon`` (Poisson or truncated Poisson sampling:
    the subsampled Gaussian composed over the steps; fixed-size: sampling without replacement)."""
    question = ask(params)
    p, sampler = question.params, question.sampler
    if question.solve is not None:
        raise InputError("--write-dp-event: give the noise, rate and length (not --target-epsilon)")
    if max(p.group_size) > 1:
        raise InputError("--write-dp-event: a person's run (--group-size) has no DpEvent of its own here")
    values = {
        "--noise-multiplier": p.sigma,
        "--sample-rate": p.sample_rate,
        "--batch-size": p.batch_size,
        "--dataset-size": p.dataset_size,
        "--steps": p.steps,
        "--epochs": p.epochs,
        "--max-batch-size": p.max_batch_size,
    }
    for option, v in values.items():
        if v is not None and len(v) != 1:
            raise InputError(f"--write-dp-event: {option} takes a single value here (one configuration)")
    one = {k: (None if v is None else v[0]) for k, v in values.items()}
    n, b = one["--dataset-size"], one["--batch-size"]
    q = one["--sample-rate"] if one["--sample-rate"] is not None else b / n
    steps = one["--steps"]
    if steps is None:
        steps = int(sampler.steps_of_epochs(np.array(one["--epochs"]), np.array(q), n, b))
    gauss = {
        "module_name": "dp_accounting.dp_event",
        "class_name": "GaussianDpEvent",
        "noise_multiplier": float(one["--noise-multiplier"]),
    }
    if sampler.name == "poisson":
        step = {"class_name": "PoissonSampledDpEvent", "sampling_probability": float(q), "event": gauss}
    elif sampler.name == "truncated-poisson":
        step = {
            "class_name": "TruncatedSubsampledGaussianDpEvent",
            "dataset_size": int(n),
            "sampling_probability": float(q),
            "truncated_batch_size": int(one["--max-batch-size"]),
            "noise_multiplier": float(one["--noise-multiplier"]),
        }
    elif sampler.name == "fixed-size" and n is not None and b is not None:
        step = {
            "class_name": "SampledWithoutReplacementDpEvent",
            "source_dataset_size": int(n),
            "sample_size": int(b),
            "event": gauss,
        }
    else:
        raise InputError(
            f"--write-dp-event: --sampling {sampler.name} has no DpEvent in dp-accounting"
            + (" (fixed-size needs --batch-size and --dataset-size)" if sampler.name == "fixed-size" else "")
        )
    step = {"module_name": "dp_accounting.dp_event", **step}
    event = {
        "module_name": "dp_accounting.dp_event",
        "class_name": "SelfComposedDpEvent",
        "event": step,
        "count": int(steps),
    }
    return json.dumps(event, indent=2)
