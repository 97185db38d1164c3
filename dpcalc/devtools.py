"""Generate the shell completions and man pages from the click definitions.

    python -m dpcalc.devtools regen    # write completions/* and man/*.1
    python -m dpcalc.devtools check    # exit 1 if any generated file is stale

Each command module may define ``MAN_EXAMPLES`` (a list of ``(description, command line)``) and
``MAN_NOTES`` (text: which bound, which paper, which neighbouring relation).  ``tests/test_generated.py``
regenerates everything and compares, so the files in the repository never drift from the code.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click
from click.shell_completion import get_completion_class

from dpcalc import __version__
from dpcalc.cli import COMMANDS, main
from dpcalc.commands.attack_schema import RISK_SCHEMAS, TRADEOFF_SCHEMAS
from dpcalc.commands.schema import ADAPTIVE_SCHEMAS, CURVE_SCHEMAS, SCHEDULE_SCHEMAS, SCHEMAS
from dpcalc.engine.mechanisms.base import SUBSAMPLING_KEYS
from dpcalc.engine.mechanisms.catalogue import CATALOGUE
from dpcalc.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
DATE = "2026-11"  # fixed, so regeneration is reproducible

COMPLETIONS = {
    "bash": "completions/dpcalc.bash",
    "zsh": "completions/_dpcalc",
    "fish": "completions/dpcalc.fish",
}

#: The column sections of a man page: each question's schema, its heading and what it says first.
COLUMN_SECTIONS = (
    (
        SCHEMAS,
        "OUTPUT COLUMNS",
        "Every CSV, TSV and JSON row has these columns, in this order, whatever the inputs; a column that does not "
        "apply to a row is empty (null in JSON).",
    ),
    (
        CURVE_SCHEMAS,
        "RDP CURVE COLUMNS",
        "With --rdp-curve, every CSV, TSV and JSON row has these columns instead, in this order: one row per order "
        "of --alphas, per configuration of the swept inputs and per method.  The CSV of one curve is read as it is "
        "by dpcalc convert --curve -.",
    ),
    (
        SCHEDULE_SCHEMAS,
        "SCHEDULE COLUMNS",
        "With --schedule FILE, every CSV, TSV and JSON row has these columns instead, in this order: one row per "
        "phase, accountant and δ, ε after the phase.",
    ),
    (
        ADAPTIVE_SCHEMAS,
        "GDP AND DP COLUMNS",
        "With --method gdp or --method dp, every CSV, TSV and JSON row has these columns instead, in this order: "
        "one row per step (a MECHANISM with count=K is K steps); a column that does not apply is empty.",
    ),
    (
        RISK_SCHEMAS,
        "RISK COLUMNS",
        "With --advantage or --prior (and sgd-epsilon's --target-advantage and --target-tpr), every CSV, TSV and "
        "JSON row has these columns instead, in this order: one row per method, configuration and prior.",
    ),
    (
        TRADEOFF_SCHEMAS,
        "TRADE-OFF COLUMNS",
        "With --fpr, every CSV, TSV and JSON row has these columns instead, in this order: one row per "
        "false-positive rate, per configuration of the swept inputs and per method; -q and --max-tpr read "
        "tpr_upper.",
    ),
)

#: The budget checks a command may have (exit status 3), in the order the EXIT STATUS section names them.
BUDGET_OPTIONS = ("--max-epsilon", "--max-delta", "--max-tpr", "--max-advantage")
#: What the program's own page (dpcalc.1) says for status 3 and 1: every command's cases together.
_ALL_BUDGETS = "--max-epsilon, --max-delta, --max-tpr or --max-advantage, where the command has it"


def exit_statuses(name: str | None, cmd: click.Command | None = None) -> list[tuple[int, str]]:
    """The EXIT STATUS section of a man page, per command (``name=None``: the program's page), as the
    README's exit status table says them: 0, 1, 2, 3 and 130.  ``cmd``: the command (its budget
    options, the ``--max-*`` checks it has, are named for status 3)."""
    budgets = _ALL_BUDGETS
    if cmd is not None:
        opts = {o for p in cmd.params if isinstance(p, click.Option) and not p.hidden for o in p.opts}
        have = [o for o in BUDGET_OPTIONS if o in opts]
        budgets = ", ".join(have[:-1]) + (" or " if len(have) > 1 else "") + have[-1] if have else ""
    failures = ["a result that cannot be certified", "standard output that cannot be written"]
    if name in (None, "odometer"):
        failures[:0] = [
            "a damaged ledger",
            "a ledger locked by another process for 30 s",
            "a ledger that does not extend a pinned head",
            "a read or write of the ledger that fails, as on a full disk",
        ]
    bad = (
        "Bad usage or bad input: one line Error: ... on standard error naming the option or input line at "
        "fault; nothing on standard output. A file named on the command line that is missing or cannot be "
        "read (no such file, permission denied, a directory, bytes that are not UTF-8) is bad input"
    )
    if name in (None, "odometer"):
        bad += ", and so is a --ledger file that is not a dpcalc ledger (it is left as it was)"
    checks = []
    if budgets:
        checks.append(f"a budget check ({budgets}) failed; the rows were still printed on standard output")
    if name in (None, "audit"):
        checks.append("audit proved more than --claimed-epsilon (the rows were still printed)")
    if name in (None, "odometer"):
        which = "odometer --ledger --add" if name is None else "--ledger --add"
        checks.append(f"with {which}, the event was refused and not recorded (with -q nothing is printed)")
    out = [
        (int(ExitCode.OK), "Success; every requested budget check passed."),
        (
            int(ExitCode.ERROR),
            f"A runtime failure the input did not cause ({', '.join(failures)}): one line Error: ... on "
            "standard error.",
        ),
        (int(ExitCode.USAGE), bad + "."),
    ]
    if checks:
        text = "; or ".join(checks)
        out.append((int(ExitCode.BUDGET_EXCEEDED), text[0].upper() + text[1:] + "."))
    out.append(
        (
            int(ExitCode.INTERRUPTED),
            "Interrupted (Ctrl-C), quietly, at any moment from start-up on, in every mode (odometer --follow "
            "included); the rows already printed stay printed.",
        )
    )
    return out


def completion_script(shell: str) -> str:
    cls = get_completion_class(shell)
    return cls(main, {}, "dpcalc", "_DPCALC_COMPLETE").source().rstrip("\n") + "\n"


# -- roff --------------------------------------------------------------------------------------
def esc(text: str) -> str:
    """Escape text for roff: backslashes, hyphens in words that look like options, leading dots."""
    text = text.replace("\\", "\\e").replace("\b", "")
    text = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)
    out = []
    for line in text.split("\n"):
        line = line.replace("-", "\\-")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def _paragraphs(text: str) -> list[str]:
    paras, cur = [], []
    for line in (text or "").strip().split("\n"):
        if line.strip():
            cur.append(line.strip())
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return paras


def _option_lines(cmd: click.Command, ctx: click.Context) -> list[str]:
    lines = []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_ = record
        lines += [".TP", f"\\fB{esc(names)}\\fR", esc(help_)]
    return lines


def man_page(name: str | None) -> str:
    """The roff text of ``dpcalc.1`` (``name=None``) or ``dpcalc-NAME.1``."""
    if name is None:
        cmd, title, module = main, "dpcalc", None
    else:
        module = importlib.import_module(COMMANDS[name][0])
        cmd, title = module.command, f"dpcalc-{name}"
    # the contexts a real run builds (the group's settings, e.g. -h, reach its subcommands)
    root = click.Context(main, info_name="dpcalc", **main.context_settings)
    ctx = root if name is None else click.Context(cmd, parent=root, info_name=title.replace("-", " ", 1))
    short = COMMANDS[name][1] if name else "a differential-privacy calculator"
    lines = [
        f'.TH {title.upper()} 1 "{DATE}" "dpcalc {__version__}" "dpcalc manual"',
        ".SH NAME",
        f"{esc(title)} \\- {esc(short)}",
        ".SH SYNOPSIS",
        f"\\fB{esc('dpcalc' + (' ' + name if name else ''))}\\fR "
        + esc(" ".join(cmd.collect_usage_pieces(ctx))),
        ".SH DESCRIPTION",
    ]
    for para in _paragraphs(cmd.help or ""):
        lines += [esc(para), ".PP"]
    if lines[-1] == ".PP":
        lines.pop()
    if name is None:
        lines.append(".SH COMMANDS")
        for sub, (_, help_) in COMMANDS.items():
            lines += [".TP", f"\\fBdpcalc\\-{esc(sub)}\\fR(1)", esc(help_)]
    lines.append(".SH OPTIONS")
    lines += _option_lines(cmd, ctx)

    for schemas, heading, intro in COLUMN_SECTIONS:
        if name in schemas:
            lines += [f".SH {heading}", intro]
            for col, meaning in schemas[name]:
                lines += [".TP", f"\\fB{esc(col)}\\fR", esc(meaning)]
    lines.append(".SH EXIT STATUS")
    for code, text in exit_statuses(name, None if name is None else cmd):
        lines += [".TP", f"\\fB{code}\\fR", esc(text)]
    examples = (
        getattr(module, "MAN_EXAMPLES", None)
        if module
        else [
            (
                "What ε does a DP-SGD run cost?",
                "dpcalc sgd-epsilon --noise-multiplier 1.1 --sample-rate 0.004 --epochs 60 --delta 1e-5",
            ),
            ("Convert an RDP guarantee to (ε, δ):", "dpcalc convert --alpha 10 --rdp 0.5 --delta 1e-5"),
            ("Install shell completion for bash:", 'eval "$(_DPCALC_COMPLETE=bash_source dpcalc)"'),
        ]
    )
    if examples:
        lines.append(".SH EXAMPLES")
        for desc, cmdline in examples:
            lines += [".PP", esc(desc), ".PP", ".RS 4", ".nf", f"\\fB{esc(cmdline)}\\fR", ".fi", ".RE"]
    notes = (
        getattr(module, "MAN_NOTES", None)
        if module
        else (
            "Values: every numeric option takes V, a list V1,V2,..., an arithmetic range START:STOP:STEP "
            "(STOP included when on the grid) or a geometric range START:STOP:xFACTOR; several swept options "
            "give one row per combination.\n\nOutput: a table on a terminal, CSV otherwise (-f chooses). CSV "
            'writes floats at full precision and inf as inf; JSON writes the string "inf" for inf and null only where '
            "a value does not apply. Tables round bounds to "
            "the safe side. Warnings and verdicts go to standard error.\n\nBudgets and -q: a configuration "
            "is the set of rows that share every input and differ only by method, accountant or conversion. "
            "--max-epsilon, --max-delta and --max-tpr judge each configuration by its tightest certified row "
            "(the smallest certified upper bound: a run one method certifies within the budget passes, "
            "whatever a looser method says), and -q prints that value, one line per configuration (labelled "
            "by the swept inputs that vary when there are several). Rows that are not certified bounds "
            "(estimates, asymptotic and reference formulas, valid=false, lower bounds, Monte Carlo rows) are "
            "never judged and never printed by -q. A configuration no certified row can judge is an error "
            "(status 2), never a pass."
        )
    )
    if notes:
        lines.append(".SH NOTES")
        for para in _paragraphs(notes):
            lines += [esc(para), ".PP"]
        if lines[-1] == ".PP":
            lines.pop()
    lines.append(".SH SEE ALSO")
    others = [f"\\fBdpcalc\\-{esc(s)}\\fR(1)" for s in COMMANDS if s != name]
    if name:
        others.insert(0, "\\fBdpcalc\\fR(1)")
    lines.append(",\n".join(others))
    # the guide: the command's page, or the README's contents that list every page
    guide = f"\\fI{esc(f'docs/guide/{name}.md')}\\fR" if name else "\\fIREADME.md\\fR and \\fIdocs/guide/\\fR"
    lines += [".PP", f"{guide} in the dpcalc repository"]
    return "\n".join(lines) + "\n"


def available_commands() -> list[str]:
    """Commands whose module exists (a command not yet built has no page)."""
    names = []
    for name, (module, _) in COMMANDS.items():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        names.append(name)
    return names


def kinds_table() -> str:
    """``dpcalc/cli/_kinds.py``: the spec kinds, their keys (with ``q``/``sampling`` where a kind takes
    them, and ``count``), aliases and fixed choices, for shell completion without the engine."""
    kinds, aliases, choices = {}, {}, {}
    for kind, mech in CATALOGUE.items():
        keys = list(mech.keys)
        if "q" not in {k.name for k in keys}:
            keys += list(SUBSAMPLING_KEYS)
        kinds[kind] = tuple(k.name for k in keys) + ("count",)
        aliases.update({a: kind for a in mech.aliases})
        choices.update({k.name: k.choices for k in keys if k.choices})

    def q(text):  # a string as ruff formats it
        return '"' + text + '"'

    def tup(values):
        return "(" + ", ".join(q(v) for v in values) + ("," if len(values) == 1 else "") + ")"

    lines = [
        '"""Spec kinds for shell completion: generated by ``python -m dpcalc.devtools regen`` from the',
        'mechanism catalogue (do not edit; tests/test_generated.py checks it)."""',
        "",
        "KINDS = {",
        *(f"    {q(k)}: {tup(v)}," for k, v in kinds.items()),
        "}",
        "ALIASES = {",
        *(f"    {q(k)}: {q(v)}," for k, v in aliases.items()),
        "}",
        "CHOICES = {",
        *(f"    {q(k)}: {tup(v)}," for k, v in choices.items()),
        "}",
    ]
    return "\n".join(lines) + "\n"


def expected_files() -> dict[str, str]:
    files = {rel: completion_script(shell) for shell, rel in COMPLETIONS.items()}
    files["dpcalc/cli/_kinds.py"] = kinds_table()
    files["man/dpcalc.1"] = man_page(None)
    for name in available_commands():
        files[f"man/dpcalc-{name}.1"] = man_page(name)
    return files


def regen() -> list[str]:
    written = []
    for rel, text in expected_files().items():
        path = ROOT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(rel)
    return written


def stale() -> list[str]:
    return [
        rel
        for rel, text in expected_files().items()
        if not (ROOT / rel).exists() or (ROOT / rel).read_text() != text
    ]


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "check"
    if what == "regen":
        for rel in regen():
            print(f"wrote {rel}")
    elif what == "check":
        bad = stale()
        for rel in bad:
            print(f"stale: {rel} (run python -m dpcalc.devtools regen)", file=sys.stderr)
        sys.exit(1 if bad else 0)
    else:
        print("usage: python -m dpcalc.devtools regen|check", file=sys.stderr)
        sys.exit(2)
