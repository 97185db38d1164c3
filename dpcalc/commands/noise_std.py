"""``--noise-std S --clip-norm C``: the noise multiplier σ = S/C given as the two numbers training code sets (issue
42), named in the captions of the commands that take it (``sgd-epsilon``, ``matrix``, ``audit``'s claim).

S is the standard deviation of the Gaussian noise added to the *sum* of the clipped per-example gradients and C the
clipping norm, so σ = S/C under every neighbouring relation (the accountants count replace-one's sensitivity 2C
themselves).  The command line turns the pair into σ (:func:`dpcalc.cli.run_options.noise_multiplier`); the
parameters carry the pair as it was given, ``((S, ...), C)``, for the caption only: the accountants see σ alone.
Pure Python (no numpy).
"""

from __future__ import annotations

#: The most values of a --noise-std sweep the caption lists one by one (more: the first two, the last, the count).
SHOWN = 5


def caption(noise_std) -> str:
    """The caption's words for ``noise_std`` = ``((S, ...), C)`` (None: ``""``), e.g. ``"; noise_multiplier = noise
    std / clip norm = 2.4 / 2 (S on the sum of clipped gradients)"``; a sweep of S reads ``S / 2 for S = 2.4, 3.6``."""
    if noise_std is None:
        return ""
    stds, clip = noise_std
    c = number(clip)
    if len(stds) == 1:
        ratio = f"{number(stds[0])} / {c}"
    elif len(stds) <= SHOWN:
        ratio = f"S / {c} for S = {', '.join(number(s) for s in stds)}"
    else:
        ratio = f"S / {c} for S = {number(stds[0])}, {number(stds[1])}, …, {number(stds[-1])} ({len(stds)} values)"
    return f"; noise_multiplier = noise std / clip norm = {ratio} (S on the sum of clipped gradients)"


def number(x: float) -> str:
    """``x`` as typed back: the shortest text that reads as the same float, without a trailing ``.0``."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text
