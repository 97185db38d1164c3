"""sgd-epsilon's question is decided once (:mod:`dpcalc.commands.sgd.question`) and read by everything after it:
a static trace of the command's parameters (``python tests/trace_params.py FILE:FUNCTION:PARAM``) enters no module
of ``dpcalc/commands/`` more than three times, and the tracer itself counts what it claims to."""

from __future__ import annotations

import textwrap

import trace_params as tp

from dpcalc.commands.sgd import question as sgd_question
from dpcalc.commands.sgd.epsilon import sgd_epsilon
from dpcalc.commands.sgd.params import SgdEpsilonParams

START = "dpcalc/commands/sgd/epsilon.py:sgd_epsilon:params"


def test_sgd_epsilon_enters_no_command_module_more_than_three_times():
    events = tp.trace(START)
    entered = tp.entries(events, "dpcalc.commands")
    assert entered["dpcalc.commands.sgd.question"] == 1  # decided once
    # the trace reaches the rows of both questions, the searches and the person's route (it is not cut short)
    for module in ("rows", "delta", "searched", "group", "mc", "columns", "work"):
        assert entered[f"dpcalc.commands.sgd.{module}"] >= 1, module
    worst = entered.most_common(1)[0]
    assert worst[1] <= 3, worst


def _package(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        path = tmp_path / "dpcalc" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_the_tracer_counts_entries_stays_and_follows_derived_names(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": """
                from dpcalc import b
                from dpcalc.b import g

                def start(p, other):
                    x = p + 1
                    b.f(x)
                    b.f(other)  # not traced: other is not derived from p
                    y = [z for z in x]
                    g(q=y)
                    helper(p)
                    b.f(lambda: p)

                def helper(p):
                    b.f(p)
            """,
            "b.py": """
                def f(v):
                    return v

                def g(q):
                    return f(q)
            """,
        },
    )
    events = tp.trace("dpcalc/a.py:start:p", root)
    # b is entered by f(x), g(q=y), helper's f(p) and the lambda's f: four times; a once
    assert tp.entries(events)["dpcalc.b"] == 4
    assert tp.entries(events)["dpcalc.a"] == 1
    # a is stayed in again after each return from b that it calls on from (helper's call runs on from the third)
    assert tp.visits(events)["dpcalc.a"] == 4
    assert tp.visits(events)["dpcalc.b"] == 4


def test_the_question_is_asked_once_per_run(monkeypatch):
    calls = []
    real = sgd_question.ask

    def counting(params):
        calls.append(params)
        return real(params)

    monkeypatch.setattr("dpcalc.commands.sgd.epsilon.ask", counting)
    sgd_epsilon(
        SgdEpsilonParams(
            delta=[1e-5],
            sigma=[1.0, 2.0],
            sample_rate=[0.01],
            steps=[100],
            accountant="rdp",
            group_size=[1, 2],
        )
    )
    assert len(calls) == 1
