"""The lists the documentation shows are the program's own: the README's command table and the package
description name every command; compose --help, dpcalc-compose(1), the generated completion table and the
error example of the guide's compose page name every kind and alias the spec parser accepts, in the catalogue's order."""

import re

from click.testing import CliRunner

from dpcalc import readme
from dpcalc.cli import COMMANDS, _kinds, main
from dpcalc.engine.mechanisms.catalogue import CATALOGUE, KIND_ALIASES
from dpcalc.input import spec

KINDS = list(CATALOGUE)


def _readme_command_table() -> list[str]:
    lines = readme.README.read_text().split("\n")
    start = lines.index("| command | answers |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(re.match(r"\| `([a-z-]+)` \|", line).group(1))
    return rows


def test_readme_command_table_lists_every_command_once():
    assert _readme_command_table() == list(COMMANDS)


#: A word of the package description for each command (a new command needs its word here, and there).
DESCRIPTION_WORDS = {
    "convert": "RDP conversions",
    "compose": "composition",
    "sgd-epsilon": "DP-SGD accounting",
    "iterate": "iteration",
    "langevin": "Langevin",
    "odometer": "odometers",
    "audit": "auditing",
    "matrix": "matrix-factorization",
}


def test_pyproject_description_names_every_command():
    assert set(DESCRIPTION_WORDS) == set(COMMANDS)
    pyproject = (readme.ROOT / "pyproject.toml").read_text()  # (tomllib is Python >= 3.11)
    description = re.search(r'^description = "([^"]*)"$', pyproject, flags=re.M).group(1)
    missing = [c for c, word in DESCRIPTION_WORDS.items() if word not in description]
    assert not missing, f"the pyproject description does not name {missing}: {description}"


def test_generated_kinds_table_is_the_parsers():
    """dpcalc/cli/_kinds.py (what help and completion read without the engine) is the parser's registry."""
    assert list(_kinds.KINDS) == KINDS
    assert _kinds.ALIASES == KIND_ALIASES
    for alias, kind in _kinds.ALIASES.items():  # the parser reads each alias as its kind
        assert spec._kind(alias, alias) == kind
        assert spec._kind(alias.upper(), alias.upper()) == kind


def _unwrap(text: str) -> str:
    """Help text as one line: words a wrap split at a hyphen joined again."""
    return re.sub(r"\s+", " ", re.sub(r"-\n\s+", "-", text))


def _kinds_and_aliases(description: str) -> tuple[list[str], dict[str, str]]:
    """The kinds named as ``KIND:key=`` in the "The kinds:" paragraph (in order, once each) and the aliases
    of the "Kind aliases:" sentence (``A or B for KIND, ...``)."""
    kinds_text = description.split("The kinds:", 1)[1].split("Kind aliases:", 1)[0]
    kinds = []
    for k in re.findall(r"(?<![\w|=.-])([a-z][a-z-]*):[a-z]", kinds_text):
        if k not in kinds:
            kinds.append(k)
    aliases_text = description.split("Kind aliases:", 1)[1].split(".", 1)[0]
    aliases = {}
    for part in aliases_text.split(","):
        names, kind = part.strip().split(" for ")
        aliases.update({a: kind for a in names.split(" or ")})
    return kinds, aliases


def test_compose_help_lists_every_kind_and_alias():
    res = CliRunner(env={"COLUMNS": "80"}).invoke(main, ["compose", "--help"], prog_name="dpcalc")
    assert res.exit_code == 0
    kinds, aliases = _kinds_and_aliases(_unwrap(res.stdout.split("Options:", 1)[0]))
    assert kinds == KINDS
    assert aliases == KIND_ALIASES


def test_compose_man_page_lists_every_kind_and_alias():
    page = (readme.ROOT / "man" / "dpcalc-compose.1").read_text()
    description = page.split(".SH DESCRIPTION", 1)[1].split(".SH OPTIONS", 1)[0].replace("\\-", "-")
    kinds, aliases = _kinds_and_aliases(_unwrap(description))
    assert kinds == KINDS
    assert aliases == KIND_ALIASES


def test_readme_unknown_kind_example_lists_the_parsers_kinds():
    text = (readme.GUIDE / "compose.md").read_text()  # the guide's compose page
    shown = re.search(r"unknown kind 'gausian' \(expected one of ([a-z, -]+);", text).group(1).split(", ")
    assert shown == KINDS
