"""Gradient accumulation in sgd-epsilon (jax_privacy#288, PRs #267, #287): --physical-batch-size B
--accumulation-steps A is the logical batch B·A, q = B·A/N, and --steps / --epochs count optimizer steps."""

from __future__ import annotations

import csv
import io
import math

import pytest
from click.testing import CliRunner

from dpcalc.cli import main

#: the jax_privacy#288 / PR #287 setting: physical batch 10, accumulation 8, N = 1000, σ = 1, δ = 1e-5
COMMON = ["sgd-epsilon", "--sigma", "1", "--dataset-size", "1000", "--delta", "1e-5"]
ACCUM = ["--physical-batch-size", "10", "--accumulation-steps", "8"]


def _run(args):
    return CliRunner().invoke(main, args)


def _rows(result):
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.parametrize(
    "length,accountant",
    [
        (["--steps", "100"], "rdp"),
        (["--epochs", "2"], "rdp"),
        (["--steps", "10:100:30"], "all"),
        (["--epochs", "0.5,2"], "rdp"),
    ],
)
def test_same_csv_as_the_logical_batch(length, accountant):
    extra = [*length, "--method", accountant, "-f", "csv"]
    with_accum = _run([*COMMON, *ACCUM, *extra])
    logical = _run([*COMMON, "--batch-size", "80", *extra])
    assert with_accum.exit_code == 0 and logical.exit_code == 0
    assert with_accum.stdout == logical.stdout


def test_readme_setting_by_hand():
    (row,) = _rows(_run([*COMMON, *ACCUM, "--steps", "100", "-f", "csv"]))
    assert float(row["sample_rate"]) == 10 * 8 / 1000 == 0.08
    assert int(row["batch_size"]) == 80
    assert int(row["steps"]) == 100  # optimizer steps, not the 800 micro-batches


def test_epochs_give_optimizer_steps():
    (row,) = _rows(_run([*COMMON, *ACCUM, "--epochs", "2", "-f", "csv"]))
    assert int(row["steps"]) == math.ceil(2 * 1000 / 80) == 25
    assert float(row["sample_rate"]) == 0.08


def test_caption_says_what_was_assumed():
    r = _run([*COMMON, *ACCUM, "--steps", "100", "-f", "table"])
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "logical batch = physical 10 × accumulation 8 = 80" in text
    assert "sample_rate = 80/1000" in text
    assert "steps = optimizer steps (one noise addition each)" in text


def test_no_caption_clause_without_accumulation():
    r = _run([*COMMON, "--batch-size", "80", "--steps", "100", "-f", "table"])
    assert r.exit_code == 0 and "logical batch" not in r.stdout


@pytest.mark.parametrize(
    "args,options",
    [
        ([*ACCUM, "--batch-size", "80"], ("--physical-batch-size", "--accumulation-steps", "--batch-size")),
        (
            [*ACCUM, "--sample-rate", "0.08"],
            ("--physical-batch-size", "--accumulation-steps", "--sample-rate"),
        ),
        (["--accumulation-steps", "8"], ("--accumulation-steps", "--physical-batch-size")),
        (["--physical-batch-size", "10"], ("--physical-batch-size", "--accumulation-steps")),
        (["--physical-batch-size", "0", "--accumulation-steps", "8"], ("--physical-batch-size",)),
        (["--physical-batch-size", "10", "--accumulation-steps", "0"], ("--accumulation-steps",)),
    ],
)
def test_bad_combinations_exit_2_naming_the_options(args, options):
    r = _run([*COMMON, *args, "--steps", "100", "-f", "csv"])
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error:")
    for option in options:
        assert option in r.stderr


def test_needs_dataset_size():
    r = _run(["sgd-epsilon", "--sigma", "1", "--delta", "1e-5", *ACCUM, "--steps", "100", "-f", "csv"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "--dataset-size" in r.stderr
