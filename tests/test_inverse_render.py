"""Every inverse question (a target ε solved for the noise, the steps, the sample rate, the batch size, a
noise scale or a per-release ε) renders as a table and as a --plot, with no internal error."""

import pytest

pytest.importorskip("matplotlib")

SGD = "sgd-epsilon --delta 1e-5 --target-epsilon {t}"
#: (the question, the headline column the table must show)
QUESTIONS = [
    (SGD + " --sample-rate 0.01 --steps 1000 --accountant all", "noise_multiplier"),
    (SGD + " --sample-rate 0.01 --sigma 1.1 --accountant all", "steps"),
    (SGD + " --sigma 1.1 --steps 1000 --accountant all", "sample_rate"),
    (SGD + " --sigma 1.1 --dataset-size 60000 --epochs 60 --accountant all", "batch_size"),
    (
        SGD + " --sigma 1.1 --dataset-size 60000 --epochs 60 --sampling fixed-size --accountant all",
        "batch_size",
    ),
    ("compose gaussian:count=10 --epsilon {t} --delta 1e-5 --method all", "sigma"),
    ("compose gaussian:count=10 laplace:scale=10 --epsilon {t} --delta 1e-5 --method all", "sigma"),
    ("compose laplace:count=10 --epsilon {t} --delta 1e-5 --method all", "scale"),
    ("compose randomized-response:count=10 --epsilon {t} --delta 1e-5 --method all", "release_epsilon"),
]
IDS = [q.split(" --delta")[0].split(" --epsilon")[0] + " " + h for q, h in QUESTIONS]


def _args(question, targets):
    return question.format(t=targets).split()


@pytest.mark.parametrize(("question", "headline"), QUESTIONS, ids=IDS)
@pytest.mark.parametrize("targets", ["3", "1,3"], ids=["one target", "swept target"])
def test_an_inverse_question_renders_as_a_table(invoke, question, headline, targets):
    r = invoke([*_args(question, targets), "-f", "table"])
    assert r.exit_code == 0, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert headline in r.stdout


@pytest.mark.parametrize(("question", "headline"), QUESTIONS, ids=IDS)
def test_an_inverse_question_of_several_rows_draws_a_plot(invoke, tmp_path, question, headline):
    path = tmp_path / "inverse.png"
    args = _args(question, "1,3")
    r = invoke([*args, "-f", "table", "--plot", str(path)])
    assert r.exit_code == 0, r.stderr
    assert path.stat().st_size > 1000
    dots = tmp_path / "dots.svg"  # one target: a dot per method, where there are several methods
    r = invoke([*_args(question, "3"), "-f", "csv", "--plot", str(dots)])
    if "--method all" in question or "--accountant all" in question:
        assert r.exit_code == 0, r.stderr
        assert dots.stat().st_size > 1000
    else:  # a single row: a one-line refusal, never an internal error
        assert r.exit_code == 2 and "single row" in r.stderr and "internal error" not in r.stderr


def test_the_readme_tour_question_on_a_terminal_format():
    """The issue's crash: --target-epsilon solving for the batch size with --accountant all, -f table."""
    from click.testing import CliRunner

    from dpcalc.cli import main

    args = "sgd-epsilon --target-epsilon 3 --sigma 1.1 --dataset-size 60000 --epochs 60 --delta 1e-5 --accountant all"
    r = CliRunner().invoke(main, [*args.split(), "-f", "table"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert "batch_size" in r.stdout and "abadi-asymptotic" in r.stdout
