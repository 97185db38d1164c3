"""``--plot FILE`` on every command: each kind of picture renders to PNG, SVG and PDF, draws exactly
the numbers the command prints, and fails cleanly (install hint, no half-written file)."""

from __future__ import annotations

import csv
import errno
import io
import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpcalc.cli import main

matplotlib = pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]

LANGEVIN = (
    "langevin --sigma 0.02 --sensitivity 4 --lr 0.02 --strong-convexity 1 --smoothness 1 --dataset-size 5000"
)
#: One command per kind of picture: line charts with series, groups, lower bounds and reference lines,
#: dot charts (one point per method, some methods without a number), log and linear axes.
KINDS = {
    "convert-rdp-sweep": "convert --alpha 10 --rdp 0.01:4:x1.5 --delta 1e-5 --method all",
    "convert-alpha-groups": "convert --alpha 2:64:2 --rdp 0.5,1 --delta 1e-5",
    "convert-epsilon-sweep": "convert --alpha 10 --rdp 0.5 --epsilon 0:4:0.25 --method all",
    "convert-dots": "convert --alpha 10 --rdp 0.5 --delta 1e-5 --method all",
    "convert-curve-dots": f"convert --curve {ROOT / 'docs' / 'examples' / 'curve.csv'} --delta 1e-5 --method all",
    "convert-from-dp": "convert --from dp --alpha 1.5:64:x1.5 --epsilon 1 --delta 1e-5 --method all",
    "compose-delta-sweep": "compose laplace:scale=10,count=100 --delta 1e-10:1e-2:x100 --method all",
    "compose-dots": "compose gaussian:sigma=10,count=100 --delta 1e-5 --method all",
    "compose-dots-first-missing": "compose laplace:scale=10,count=100 --delta 1e-5 --method all",
    "compose-best": "compose gaussian:sigma=10,count=100 laplace:scale=10 --delta 1e-10:1e-2:x100",
    "compose-calibrate": "compose gaussian:count=10 --epsilon 0.1:8:x2 --delta 1e-5,1e-8 --method all",
    "sgd-epsilon-steps": "sgd-epsilon --sigma 4 --sample-rate 0.04 --steps 1000:5000:1000 --delta 1e-5 "
    "--method all",
    "iterate-steps": "iterate --sigma 3 --lipschitz 1 --lr 0.1 --steps 10:100000:x10 --delta 1e-5",
    "iterate-alpha": "iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --alpha 1.5:6:0.5",
    "iterate-dots": "iterate --sigma 5 --lipschitz 1 --lr 0.05 --steps 100 --delta 1e-5",
    "langevin-steps": f"{LANGEVIN} --steps 1:300:1 --alpha 30",
    "langevin-delta": f"{LANGEVIN} --steps 10:100000:x10 --delta 1e-5",
    "langevin-dots": f"{LANGEVIN} --steps 100 --alpha 30",
}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def invoke(args: list[str]):
    return CliRunner().invoke(main, args)


def rows(stdout: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(stdout)))


def num(text: str) -> float:
    return float(text) if text not in ("", None) else math.nan


@pytest.fixture
def figures(monkeypatch):
    """Keep every figure that --plot saves, to look at what was drawn."""
    from dpcalc.plot import draw as plot

    saved = []
    real = plot._save_atomically

    def keep(fig, path):
        saved.append(fig)
        real(fig, path)

    monkeypatch.setattr(plot, "_save_atomically", keep)
    return saved


def check_png(path) -> None:
    import matplotlib.image

    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    image = matplotlib.image.imread(path)
    assert image.shape[0] >= 400 and image.shape[1] >= 700  # 7 x 4.5 in at 120 dpi
    assert image[..., :3].std() > 0.05  # not a blank canvas


def check_svg(path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(list(root.iter("{http://www.w3.org/2000/svg}path"))) > 20


@pytest.mark.parametrize("ext", ["png", "svg"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_renders(kind, ext, tmp_path):
    args = KINDS[kind].split() + ["-f", "csv"]
    target = tmp_path / f"{kind}.{ext}"
    res = invoke([*args, "--plot", str(target)])
    assert res.exit_code == 0, res.stderr
    (check_png if ext == "png" else check_svg)(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temporary file left
    if ext == "png":  # drawing does not change what is printed
        assert res.stdout == invoke(args).stdout


def test_pdf(tmp_path):
    target = tmp_path / "c.pdf"
    res = invoke([*KINDS["convert-rdp-sweep"].split(), "--plot", str(target)])
    assert res.exit_code == 0, res.stderr
    data = target.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")


def test_pictures_are_reproducible(tmp_path):
    """No timestamps or random ids: the same command draws the same bytes (clean git diffs)."""
    for ext in ("png", "svg", "pdf"):
        a, b = tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"
        for target in (a, b):
            assert invoke([*KINDS["convert-dots"].split(), "--plot", str(target)]).exit_code == 0
        assert a.read_bytes() == b.read_bytes(), ext


def _data_lines(ax) -> dict[str, tuple[list, list]]:
    return {
        line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


def test_lines_are_the_printed_numbers(tmp_path, figures):
    res = invoke([*KINDS["convert-rdp-sweep"].split(), "-f", "csv", "--plot", str(tmp_path / "c.png")])
    assert res.exit_code == 0, res.stderr
    (ax,) = figures[0].axes
    drawn = _data_lines(ax)
    assert sorted(drawn) == ["asoodeh", "balle", "mironov", "optimal"]
    for method, (xs, ys) in drawn.items():
        mine = [r for r in rows(res.stdout) if r["method"] == method]
        assert xs == [float(r["rdp"]) for r in mine]
        assert ys == [float(r["epsilon"]) for r in mine]
    assert ax.get_xscale() == "log"  # ζ = 0.01 .. 4, geometric


def test_swept_parameters_split_lines(tmp_path, figures):
    res = invoke([*KINDS["convert-alpha-groups"].split(), "-f", "csv", "--plot", str(tmp_path / "c.png")])
    assert res.exit_code == 0, res.stderr
    drawn = _data_lines(figures[0].axes[0])
    assert sorted(drawn) == ["ζ = 0.5", "ζ = 1"]
    for label, rdp in (("ζ = 0.5", "0.5"), ("ζ = 1", "1.0")):
        xs, ys = drawn[label]
        mine = [r for r in rows(res.stdout) if r["rdp"] == rdp]
        assert xs == [float(r["alpha"]) for r in mine] and len(xs) == 32
        assert ys == [float(r["epsilon"]) for r in mine]


def test_langevin_draws_the_lower_bound_and_the_crossing(tmp_path, figures):
    res = invoke([*KINDS["langevin-steps"].split(), "-f", "csv", "--plot", str(tmp_path / "l.png")])
    assert res.exit_code == 0, res.stderr
    (ax,) = figures[0].axes
    table = rows(res.stdout)
    by_label = {line.get_label(): line for line in ax.get_lines()}
    lower = by_label["lower bound, ℓ = ‖θ−x‖²/2"]
    assert lower.get_linestyle() == "--"
    assert list(lower.get_ydata()) == [float(r["rdp_lower"]) for r in table if r["method"] == "lower"]
    dyn = by_label["dynamics (last model only)"]
    assert list(dyn.get_ydata()) == [float(r["rdp"]) for r in table if r["method"] == "dynamics"]
    crossing = [v for label, v in by_label.items() if label.startswith("crossing K*")]
    assert len(crossing) == 1
    assert crossing[0].get_xdata()[0] == pytest.approx(float(table[0]["crossing_steps"]), rel=0, abs=0)
    assert ax.get_xscale() == "linear"  # K = 1..300, evenly spaced


def test_log_axes_where_values_span_decades(tmp_path, figures):
    res = invoke([*KINDS["langevin-delta"].split(), "--plot", str(tmp_path / "l.png")])
    assert res.exit_code == 0, res.stderr
    ax = figures[0].axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")


@pytest.mark.parametrize("kind", ["compose-dots", "compose-dots-first-missing"])
def test_dot_chart_one_point_per_method(kind, tmp_path, figures):
    res = invoke([*KINDS[kind].split(), "-f", "csv", "--plot", str(tmp_path / "c.svg")])
    assert res.exit_code == 0, res.stderr
    (ax,) = figures[0].axes
    table = rows(res.stdout)
    assert [t.get_text() for t in ax.get_yticklabels()] == [r["method"] for r in table]
    dots = {int(line.get_ydata()[0]): line.get_xdata()[0] for line in ax.get_lines()}
    for i, r in enumerate(table):
        if r["epsilon"]:
            assert dots[i] == float(r["epsilon"])
        else:
            assert i not in dots
    texts = [t.get_text() for t in ax.texts]
    assert sum("no number" in t for t in texts) == sum(1 for r in table if not r["epsilon"]) > 0
    # each dot is labelled with the printed bound rounded up at 6 digits, never below it
    labels = [t.get_text() for t in ax.texts if "no number" not in t.get_text()]
    assert [float(x) for x in labels] == [
        pytest.approx(float(r["epsilon"]), rel=1e-5) for r in table if r["epsilon"]
    ]
    assert all(float(x) >= float(r["epsilon"]) for x, r in zip(labels, [r for r in table if r["epsilon"]]))


def test_band_and_reference_lines(tmp_path, figures):
    """PlotSpec features no command uses yet: a shaded [lower, upper] band and horizontal lines."""
    from dpcalc.plot.draw import draw
    from dpcalc.result import PlotSpec, Result

    steps = [1, 2, 4, 8, 16]
    result = Result(
        {
            "method": ["pld"] * 5,
            "steps": steps,
            "epsilon_lower": [0.5 * s for s in steps],
            "epsilon": [0.6 * s for s in steps],
        },
        plot=PlotSpec(
            x="steps",
            y="epsilon",
            y_extra=("epsilon_lower",),
            series="method",
            band=("epsilon_lower", "epsilon"),
            hlines=((5.0, "budget"),),
            title="bracket",
        ),
    )
    draw(result, str(tmp_path / "b.png"))
    check_png(tmp_path / "b.png")
    (ax,) = figures[0].axes
    (band,) = ax.collections
    ys = sorted({round(float(y), 9) for _, y in band.get_paths()[0].vertices})
    assert min(ys) == 0.5 and max(ys) == pytest.approx(9.6)
    budget = [line for line in ax.get_lines() if line.get_label() == "budget"]
    assert list(budget[0].get_ydata()) == [5.0, 5.0]


def test_single_row_is_refused(tmp_path):
    res = invoke(
        ["convert", "--alpha", "10", "--rdp", "0.5", "--delta", "1e-5", "--plot", str(tmp_path / "x.png")]
    )
    assert res.exit_code == 2
    assert "single row" in res.stderr and res.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_without_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    res = invoke([*KINDS["convert-dots"].split(), "--plot", str(tmp_path / "x.png")])
    assert res.exit_code == 2
    assert "pip install 'dpcalc[plot]'" in res.stderr
    assert res.stderr.count("\n") == 1 and res.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("existing", [False, True])
def test_failed_write_leaves_no_file(tmp_path, monkeypatch, existing):
    import matplotlib.figure

    def broken(self, fname, **kwargs):
        with open(fname, "wb") as fh:
            fh.write(PNG_MAGIC + b"half an image")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken)
    target = tmp_path / "x.png"
    if existing:
        target.write_bytes(b"the old picture")
    res = invoke([*KINDS["convert-dots"].split(), "--plot", str(target)])
    assert res.exit_code == 1
    assert "cannot write" in res.stderr and "No space left on device" in res.stderr
    assert res.stdout == ""
    assert [p.name for p in tmp_path.iterdir()] == (["x.png"] if existing else [])
    if existing:
        assert target.read_bytes() == b"the old picture"


def test_missing_directory(tmp_path):
    res = invoke([*KINDS["convert-dots"].split(), "--plot", str(tmp_path / "no" / "such" / "x.png")])
    assert res.exit_code == 2  # bad input, as a read-only file is
    assert res.stderr.startswith("Error: --plot: cannot write")


def test_matplotlib_loads_only_with_plot(tmp_path):
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from dpcalc.cli import main\n"
        "args = sys.argv[1:]\n"
        "res = CliRunner().invoke(main, args)\n"
        "assert res.exit_code == 0, res.stderr\n"
        "print('matplotlib' in sys.modules)\n"
    )
    args = KINDS["convert-dots"].split()
    plain = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60)
    drawn = subprocess.run(
        [sys.executable, "-c", probe, *args, "--plot", str(tmp_path / "x.png")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (plain.stdout.strip(), drawn.stdout.strip()) == ("False", "True"), plain.stderr + drawn.stderr


def test_rows_outside_their_conditions_are_drawn_apart(tmp_path, figures):
    """A ``valid`` column: false rows are a separate hollow, dotted line labelled as not a bound."""
    from dpcalc.plot.draw import draw
    from dpcalc.result import PlotSpec, Result

    result = Result(
        {
            "method": ["rdp"] * 3 + ["abadi"] * 3,
            "steps": [10, 20, 30] * 2,
            "epsilon": [1.0, 1.5, 2.0, 1.2, 1.8, 2.6],
            "valid": [True, True, True, True, False, False],
        },
        plot=PlotSpec(x="steps", y="epsilon", series="method", valid="valid"),
    )
    draw(result, str(tmp_path / "v.svg"))
    check_svg(tmp_path / "v.svg")
    lines = {line.get_label(): line for line in figures[0].axes[0].get_lines()}
    assert sorted(lines) == ["abadi", "abadi (its conditions fail: not a bound)", "rdp"]
    bad = lines["abadi (its conditions fail: not a bound)"]
    assert list(bad.get_xdata()) == [20.0, 30.0] and list(bad.get_ydata()) == [1.8, 2.6]
    assert bad.get_linestyle() == ":" and bad.get_markerfacecolor() == "white"
    assert list(lines["abadi"].get_xdata()) == [10.0]


def test_an_unwritable_plot_target_is_bad_input_whether_file_or_directory(invoke, tmp_path):
    res = invoke(
        [
            "convert",
            "--alpha",
            "2,4",
            "--rdp",
            "0.1",
            "--delta",
            "1e-5",
            "--plot",
            str(tmp_path / "missing" / "x.png"),
        ]
    )
    assert res.exit_code == 2 and res.stderr.startswith("Error: --plot: cannot write")


def test_quiet_silences_notes(invoke):
    args = [
        "langevin",
        "--sigma",
        "0.1",
        "--sensitivity",
        "0.01",
        "--lr",
        "0.1",
        "--strong-convexity",
        "0.5",
        "--smoothness",
        "1",
        "--dataset-size",
        "1000",
        "--steps",
        "100",
        "--alpha",
        "2",
    ]
    assert "Note:" in invoke(args).stderr and invoke([*args, "-q"]).stderr == ""
