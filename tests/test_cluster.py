"""A real dask.distributed cluster (issue 40): a ``LocalCluster`` of two worker processes on the loopback
interface, started once for this module.  Rows from ``--jobs 1``, ``--jobs 2`` and ``--scheduler`` are the
same bytes, for a sweep and for Monte Carlo with one seed; a worker killed in the middle of a run has its
pieces computed again (Dask's retries) and the output does not change."""

import logging
import os
import signal
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")

import numpy as np  # noqa: E402

from dpcalc import api  # noqa: E402
from dpcalc.api import spread  # noqa: E402
from dpcalc.commands.sgd.epsilon import sgd_epsilon  # noqa: E402
from dpcalc.commands.sgd.params import SgdEpsilonParams  # noqa: E402
from dpcalc.execution import cluster as dpcalc_cluster  # noqa: E402

#: A sweep of several chunks (about a second of work: pieces of about 0.25 s, never depending on the processes).
SWEEP = ["sgd-epsilon", "--sample-rate", "0.01", "--noise-multiplier", "0.5:5:0.02", "--steps", "1000"]
SWEEP += ["--delta", "1e-5", "-f", "csv"]
#: Balls-in-bins Monte Carlo, a few batches per direction.
MC = ["sgd-epsilon", "--sigma", "1", "--sample-rate", "0.05", "--steps", "100", "--delta", "1e-4"]
MC += ["--sampling", "balls-in-bins", "--method", "mc", "--mc-samples", "30000", "--seed", "7", "-f", "json"]


@pytest.fixture(scope="module")
def address():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    try:
        yield cluster.scheduler_address, cluster
    finally:
        dpcalc_cluster.close_owned()
        cluster.close()


@pytest.mark.parametrize("args", [SWEEP, MC], ids=["sweep", "monte-carlo"])
def test_the_same_rows_on_one_process_two_and_a_cluster(invoke, address, args):
    one = invoke([*args, "--jobs", "1"])
    two = invoke([*args, "--jobs", "2"])
    on_cluster = invoke([*args, "--scheduler", address[0]])
    assert one.exit_code == two.exit_code == on_cluster.exit_code == 0
    assert one.stdout.count("\n") > 1
    assert one.stdout == two.stdout == on_cluster.stdout


def test_the_scheduler_from_dasks_own_variable(invoke, address, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", address[0])
    assert invoke(MC).stdout == invoke([*MC, "--scheduler", address[0]]).stdout


def test_a_library_caller_passes_a_client_or_an_address(address, monkeypatch):
    params = SgdEpsilonParams(
        delta=[1e-5], sigma=[0.6, 0.9, 1.3], sample_rate=[0.01, 0.02], steps=[100, 1000]
    )
    local = sgd_epsilon(params, jobs=1)
    with distributed.Client(address[0], set_as_default=False) as client:
        assert sgd_epsilon(params, scheduler=client).columns == local.columns
    assert sgd_epsilon(params, scheduler=address[0]).columns == local.columns
    monkeypatch.setattr(spread, "PIECE", 64)  # pieces of 64 values (4,096 in use): the same cut, cheaper
    q = np.linspace(0.001, 0.05, 3 * spread.PIECE + 10)  # four pieces, on the cluster's two workers
    assert np.array_equal(
        api.sgd_epsilon(q, 1.1, 1000, 1e-5, scheduler=address[0]).value,
        api.sgd_epsilon(q, 1.1, 1000, 1e-5, jobs=1).value,
    )


def _worker_pids(client):
    return [pid for pid in client.run(os.getpid).values()]


def test_a_worker_killed_in_the_middle_changes_nothing(address):
    params = SgdEpsilonParams(
        delta=[1e-5], sigma=[0.5 + 0.01 * i for i in range(300)], sample_rate=[0.01], steps=[1000]
    )
    expected = sgd_epsilon(params, jobs=1)
    cluster = address[1]
    got = {}

    def run():
        got["result"] = sgd_epsilon(params, scheduler=address[0])

    with distributed.Client(address[0], set_as_default=False) as client:
        victim = _worker_pids(client)[0]
        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 30
        while not any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(victim, signal.SIGKILL)  # mid-run: its pieces are lost with it
        worker.join(timeout=120)
        assert not worker.is_alive()
        client.wait_for_workers(2, timeout=60)  # the nanny starts a new one, for the next test
        assert victim not in _worker_pids(client)
    assert got["result"].columns == expected.columns
    assert len(cluster.workers) == 2
