"""The man pages' EXIT STATUS sections say what the README's exit status table says (issue 39): the same
statuses (0, 1, 2, 3 and 130) on every page, the same cases under each, per command."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "man").glob("dpcalc*.1"))


def readme_table() -> dict[int, str]:
    """``{status: meaning}`` of the README's table headed ``| exit status | meaning |``."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| exit status | meaning |")
    out = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        status, meaning = (cell.strip() for cell in line.strip("|").split("|", 1))
        out[int(status)] = meaning.replace("`", "").replace("\\|", "|")
    return out


def unroff(text: str) -> str:
    text = re.sub(r"\\\[u([0-9A-F]{4})\]", lambda m: chr(int(m.group(1), 16)), text)
    return text.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")


def man_exit_statuses(page: Path) -> dict[int, str]:
    text = page.read_text(encoding="utf-8")
    section = text.split(".SH EXIT STATUS\n", 1)[1].split("\n.SH ", 1)[0]
    items = re.findall(r"\.TP\n\\fB(\d+)\\fR\n(.*)", section)
    return {int(code): unroff(meaning) for code, meaning in items}


def _parenthesis(text: str) -> list[str]:
    """The items listed in the first parenthesis of ``text`` (comma-separated)."""
    inner = text.split("(", 1)[1].split(")", 1)[0]
    return [item.strip() for item in inner.split(", ") if item.strip()]


README = readme_table()


def test_the_readme_table_lists_0_1_2_3_and_130():
    assert sorted(README) == [0, 1, 2, 3, 130]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_man_page_says_what_the_readme_says(page):
    man = man_exit_statuses(page)
    assert sorted(man) == sorted(README), page.name
    # each status opens with the README's own words
    assert man[0].lower().startswith(README[0].lower())
    for status in (1, 2):
        head = re.split(r"[(:]", README[status], maxsplit=1)[0].strip().lower()
        assert man[status].lower().startswith(head), (status, man[status])
    assert "ctrl-c" in man[130].lower() and "ctrl-c" in README[130].lower()
    # status 1: every failure a page names is one the README names
    for item in _parenthesis(man[1]):
        assert item in README[1], (page.name, item)
    # status 2: a missing or unreadable file named by the user is bad input, in both
    for words in ("missing or cannot be read", "no such file", "permission denied"):
        assert words in man[2] and words in README[2], words
    # status 3: every check a page names is one the README names
    for option in re.findall(r"--[a-z-]+", man[3]):
        assert option in README[3], (page.name, option)


def test_each_command_page_names_its_own_cases():
    pages = {p.name: man_exit_statuses(p) for p in PAGES}
    odometer = pages["dpcalc-odometer.1"]
    assert "damaged ledger" in odometer[1] and "damaged ledger" not in pages["dpcalc-convert.1"][1]
    assert "not a dpcalc ledger" in odometer[2] and "not a dpcalc ledger" in README[2]
    assert "--ledger --add" in odometer[3] and "with -q nothing is printed" in odometer[3]
    assert "--claimed-epsilon" in pages["dpcalc-audit.1"][3]
    assert "--max-advantage" in pages["dpcalc-compose.1"][3]
    assert "--max-advantage" not in pages["dpcalc-iterate.1"][3]  # iterate has no such check
    assert "unreadable" not in " ".join(m[1] for m in pages.values())  # an unreadable file is status 2
