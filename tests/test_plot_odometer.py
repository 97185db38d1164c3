"""--plot for odometer: the figure of Lécuyer 2021 (arXiv:2103.01379, Fig. 2b: odometer vs plain RDP), from
EVENTS and from a ledger."""

import pytest

pytest.importorskip("matplotlib")

EVENTS = "sample_rate,noise_multiplier,steps\n" + "0.01024,1,98\n" * 5


def _is_png(path):
    data = path.read_bytes()
    return data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_events_plot_and_output_unchanged(invoke, tmp_path):
    png = tmp_path / "o.png"
    plain = invoke(["odometer", "-", "--delta", "1e-6", "-f", "csv"], input=EVENTS)
    drawn = invoke(["odometer", "-", "--delta", "1e-6", "-f", "csv", "--plot", str(png)], input=EVENTS)
    assert drawn.exit_code == 0, drawn.stderr
    assert drawn.stdout == plain.stdout
    assert _is_png(png)


def test_filter_plot(invoke, tmp_path):
    svg = tmp_path / "f.svg"
    r = invoke(["odometer", "-", "--delta", "1e-6", "--filter", "3", "--plot", str(svg)], input=EVENTS)
    assert r.exit_code == 0, r.stderr
    import xml.etree.ElementTree as ET

    assert ET.parse(svg).getroot().tag.endswith("svg")


def test_ledger_report_plot(invoke, tmp_path):
    ledger = tmp_path / "l.ledger"
    for _ in range(3):
        r = invoke(
            ["odometer", "--ledger", str(ledger), "--add", "gaussian:sigma=20", "--delta", "1e-6", "-q"]
        )
        assert r.exit_code == 0, r.stderr
    png = tmp_path / "l.png"
    r = invoke(["odometer", "--ledger", str(ledger), "--delta", "1e-6", "--plot", str(png)])
    assert r.exit_code == 0, r.stderr
    assert _is_png(png)


def test_plot_with_follow_is_refused(invoke, tmp_path):
    events = tmp_path / "e.csv"
    events.write_text(EVENTS)
    r = invoke(["odometer", str(events), "--follow", "--delta", "1e-6", "--plot", str(tmp_path / "x.png")])
    assert r.exit_code == 2 and "--follow" in r.stderr and r.stdout == ""
