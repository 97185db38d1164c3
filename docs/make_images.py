"""Regenerate the guide's pictures (docs/guide/pictures.md) by running real dpcalc commands with ``--plot``.

    python docs/make_images.py            # rewrite docs/img/*.png
    python docs/make_images.py OUTDIR     # write them to OUTDIR instead (the test does this)
    python docs/make_images.py --tour     # rewrite the pictures of docs/guide/pictures.md

Each picture is one ``dpcalc ... --plot OUTDIR/NAME.png`` command line, run in-process (the same
click entry point as the installed ``dpcalc``); docs/guide/pictures.md shows the same command lines,
and ``tests/test_plot_images.py`` checks that the two agree and that every command draws its picture.
A picture may need setup commands first (the odometer's ledger is filled event by event); they run in
a scratch directory, which is also the working directory of the plotting command.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "img"
LANGEVIN = "--sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 --dataset-size 5000"
# one epoch of the fine-tuning run of Lécuyer 2021 (arXiv:2103.01379): 98 steps
FINETUNE_EPOCH = "subsampled-gaussian:q=0.01024,sigma=1,count=98"


@dataclass(frozen=True)
class Image:
    name: str  # file name under docs/img
    command: str  # the dpcalc command line, without --plot
    about: str  # one line for the guide's page of pictures
    setup: tuple[str, ...] = ()  # command lines run before it, in the same scratch directory

    def plot_command(self, outdir: str = "docs/img") -> str:
        return f"{self.command} --plot {outdir}/{self.name}"


IMAGES = (
    Image(
        "convert-methods.png",
        "dpcalc convert --alpha 10 --rdp 0.01:4:x1.1 --delta 1e-5 --method all",
        "The four RDP → (ε, δ) conversions at α = 10 and δ = 1e-5, by RDP level ζ (the comparison in Asoodeh"
        " et al.'s talk): the optimal conversion is never above the closed forms, and Mironov's is well above"
        " them at every ζ.",
    ),
    Image(
        "compose-methods.png",
        "dpcalc compose laplace:scale=10,count=100 --delta 1e-10:1e-2:x10 --method all",
        "100 Laplace releases: ε by δ for every composition theorem that applies (the exact Gaussian"
        " profile does not, and the picture says so).",
    ),
    Image(
        "sgd-epsilon.png",
        "dpcalc sgd-epsilon --sigma 4 --sample-rate 0.04 --steps 100:100000:x1.5 --delta 1e-5 --method all",
        "DP-SGD with q = 0.04 and σ = 4: ε by steps: the exact RDP accountant, the tight PLD accountant"
        " just below it, and the Abadi et al. closed form, which is outside its own conditions here"
        " (q ≥ 1/(16σ)) and well above.",
    ),
    Image(
        "iterate-steps.png",
        "dpcalc iterate --sigma 3 --lipschitz 1 --lr 0.1 --steps 10:100000:x10 --delta 1e-5",
        "Hidden iterates: the amplification-by-iteration bounds fall with the number of steps T while"
        " releasing every iterate stays flat.",
    ),
    Image(
        "langevin-dynamics.png",
        f"dpcalc langevin {LANGEVIN} --steps 1:1000:1 --alpha 30",
        "Chourasia, Ye and Shokri's figure: the privacy dynamics bound converges, composition grows"
        " linearly, and the lower bound shows the analysis is tight within a factor 4; the dotted line is"
        " the crossing K* ≈ 159 beyond which releasing only the last model is cheaper.",
    ),
    Image(
        "tradeoff.png",
        "dpcalc sgd-epsilon --sigma 1.1 --sample-rate 0.004267 --steps 1000 --fpr 1e-6:0.5:x4 --method all",
        "What ε means for an attacker: the largest true-positive rate of any membership test against its"
        " false-positive rate, for 1000 steps of DP-SGD (q = 0.004267, σ = 1.1): the certified PLD bracket"
        " (shaded), the RDP bound above it, the central-limit μ-GDP approximation (not a bound) and random"
        " guessing.",
    ),
    Image(
        "odometer.png",
        "dpcalc odometer --ledger finetune.ledger",
        "Lécuyer's Figure 2(b): a ledger with one entry per epoch of the fine-tuning run (q = 0.01024,"
        " σ = 1, 98 steps per epoch); the running odometer ε, valid whenever training stops, against plain"
        " RDP, valid only for a schedule fixed in advance.",
        setup=tuple(
            f"dpcalc odometer --ledger finetune.ledger --add {FINETUNE_EPOCH} --delta 1e-6 -q"
            for _ in range(50)
        ),
    ),
)


def run(command: str, cwd: str) -> None:
    """Run one ``dpcalc ...`` command line in-process in ``cwd``; raise if it does not exit 0."""
    from click.testing import CliRunner

    from dpcalc.cli import main

    words = shlex.split(command)
    assert words[0] == "dpcalc", command
    old = os.getcwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(main, words[1:], prog_name="dpcalc")
    finally:
        os.chdir(old)
    if res.exit_code != 0:
        raise SystemExit(f"{command!r} exited {res.exit_code}: {res.stderr.strip()}")


def make(outdir: Path, names=None) -> list[Path]:
    """Draw every picture (or those in ``names``) into ``outdir``; return their paths."""
    outdir = Path(outdir).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for image in IMAGES:
        if names and image.name not in names:
            continue
        with tempfile.TemporaryDirectory(prefix="dpcalc-img-") as scratch:
            for command in image.setup:
                run(command, scratch)
            run(image.plot_command(str(outdir)), scratch)
        written.append(outdir / image.name)
    return written


INTRO = """\
Every command whose result is a curve or a comparison also draws it: add `--plot FILE` (`.png`, `.svg`
or `.pdf`, by the extension). This needs the `plot` extra, `pip install 'dpcalc[plot]'`; without it the
command exits 2 with that install line. The table or CSV is printed as usual. The first swept option
is the x axis, other swept options split the lines, and the fixed parameters go in the subtitle. Axes
whose values span decades are drawn on log scales, lower bounds are dashed, bounds whose conditions
fail are hollow and dotted, and a method that gives no number is named, never drawn at 0. A comparison
at a single setting (`--method all` at one δ, say) is a dot chart, one dot per method. The file is
written atomically, so an error never leaves half an image.

The pictures below are made by `python docs/make_images.py` from exactly these commands.
"""


def tour_markdown() -> str:
    """The pictures of docs/guide/pictures.md: each picture with the command lines that make it."""
    parts = [INTRO]
    for image in IMAGES:
        lines = [image.about, "", "```sh"]
        if image.setup:  # identical setup lines: shown as a loop
            assert len(set(image.setup)) == 1
            lines += [f"for epoch in $(seq {len(image.setup)}); do", f"  {image.setup[0]}", "done"]
        lines += [
            image.plot_command(),
            "```",
            "",
            f"![{image.name[:-4].replace('-', ' ')}](../img/{image.name})",
        ]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


BEGIN, END = "<!-- plots:begin -->\n", "\n<!-- plots:end -->"


def splice_readme(text: str) -> str:
    """The page ``text`` with its pictures (between the plots markers) replaced by :func:`tour_markdown`."""
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + tour_markdown().rstrip("\n") + END + tail


def main(argv: list[str]) -> int:
    if argv[:1] == ["--tour"]:
        readme = ROOT / "docs" / "guide" / "pictures.md"
        readme.write_text(splice_readme(readme.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    outdir = Path(argv[0]) if argv else DEFAULT_OUT
    for path in make(outdir, set(argv[1:]) or None):
        print(path)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
