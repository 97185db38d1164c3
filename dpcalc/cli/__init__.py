"""The ``dpcalc`` command line: a click group whose subcommands load lazily.

Only click is imported here: ``dpcalc --help`` and shell completion never load numpy, scipy or
rich.  Each subcommand lives in ``dpcalc/cli/<name>.py`` and is imported only when it runs (or when
its help is asked for); that module declares its options with click alone and imports its command's work
(a module of :mod:`dpcalc.commands`: numpy, the engine) once, inside its callback.  Errors leave as one ``Error: ...`` line on stderr with the exit statuses of
:class:`dpcalc.exitcodes.ExitCode`; no traceback reaches a user (set ``DPCALC_DEBUG=1`` to see one).
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from dpcalc import __version__, execution, interrupt
from dpcalc.errors import InputError, UncertifiedError
from dpcalc.exitcodes import ExitCode
from dpcalc.wrap import for_terminal

#: command name -> (module, one-line help shown by ``dpcalc --help`` without importing the module)
COMMANDS: dict[str, tuple[str, str]] = {
    "convert": ("dpcalc.cli.convert", "Convert between Rényi DP and (ε, δ)-DP (and back)."),
    "compose": ("dpcalc.cli.compose", "Compose many mechanisms into one (ε, δ) guarantee."),
    "sgd-epsilon": (
        "dpcalc.cli.sgd_epsilon",
        "DP-SGD accounting: ε of a run, or noise/steps for a target ε.",
    ),
    "iterate": ("dpcalc.cli.iterate", "Privacy amplification by iteration (hidden intermediate iterates)."),
    "langevin": ("dpcalc.cli.langevin", "Privacy dynamics of noisy gradient descent (Langevin)."),
    "odometer": ("dpcalc.cli.odometer", "Adaptive budgets: privacy filters, odometers and a CI ledger."),
    "audit": ("dpcalc.cli.audit", "Empirical lower bound on ε from an attack, beside the claimed ε."),
    "matrix": (
        "dpcalc.cli.matrix",
        "Correlated noise: ε of matrix-factorization training (DP-FTRL, BandMF).",
    ),
}

NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class DpcalcGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        try:
            module = importlib.import_module(entry[0])
        except ModuleNotFoundError as exc:  # a command not built yet
            if exc.name != entry[0]:
                raise
            return _missing_command(name, entry[1])
        return module.command

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None:
            _refuse_repeats(cmd, rest)
        return name, cmd, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help from COMMANDS: listing the commands must not import them.
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """Run the command; turn every error into one stderr line and an exit status (Ctrl-C: 130,
        quietly; the ``dpcalc`` program, :func:`dpcalc.__main__.run`, sets that up before this module loads)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            with interrupt.raising():  # Ctrl-C: KeyboardInterrupt inside the command, so cleanup runs
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except NoArgsIsHelp as exc:  # bare `dpcalc`: the help, not an error
            click.echo(exc.ctx.get_help() if exc.ctx else "")
            sys.exit(ExitCode.OK)
        except (click.exceptions.Abort, KeyboardInterrupt):  # Ctrl-C: the shell's convention
            _say_how_far()
            sys.exit(130)
        except click.ClickException as exc:
            _hint_spelling(exc)
            _print_error(exc.format_message(), verdict=exc.exit_code == ExitCode.BUDGET_EXCEEDED)
            sys.exit(exc.exit_code)
        except InputError as exc:
            _print_error(str(exc))
            sys.exit(ExitCode.USAGE)
        except UncertifiedError as exc:
            _print_error(str(exc))
            sys.exit(ExitCode.ERROR)
        except BrokenPipeError:
            _quiet_broken_pipe()
            sys.exit(ExitCode.OK)
        except Exception as exc:  # never a traceback for a user
            if os.environ.get("DPCALC_DEBUG"):
                raise
            _print_error(f"internal error: {type(exc).__name__}: {exc} (set DPCALC_DEBUG=1 for a traceback)")
            sys.exit(ExitCode.ERROR)
        sys.exit(rv if isinstance(rv, int) else ExitCode.OK)


#: Spellings of one idea across the commands: an option one command names the other way gets click's "Did you
#: mean" hint at the name that command takes (sgd-epsilon's accountant was --accountant; every command says
#: --method, and sgd-epsilon still takes --accountant, hidden).
_SPELLINGS = {"--accountant": "--method", "--method": "--accountant"}


def _hint_spelling(exc: click.ClickException) -> None:
    """Where ``exc`` is click's "No such option" for a spelling of :data:`_SPELLINGS` without a close match, point
    at the other spelling if the command takes it (difflib finds no likeness between these names)."""
    if not isinstance(exc, click.exceptions.NoSuchOption) or exc.possibilities:
        return
    other = _SPELLINGS.get(exc.option_name)
    command = exc.ctx.command if exc.ctx is not None else None
    if other is None or command is None:
        return
    if any(other in p.opts for p in command.params if isinstance(p, click.Option)):
        exc.possibilities = [other]  # click words it: "No such option '--x'. Did you mean '--y'?"


def _refuse_repeats(cmd: click.Command, args: list[str]) -> None:
    """A single-value option given twice is an error (click would silently keep the last one)."""
    single = {}
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.multiple and not param.count:
            for opt in param.opts + param.secondary_opts:
                single[opt] = param
    seen: dict[str, str] = {}
    for arg in args:
        if arg == "--":
            break
        opt = arg.split("=", 1)[0] if arg.startswith("--") else arg
        param = single.get(opt)
        if param is None:
            continue
        if param.name in seen:
            also = f" (as {seen[param.name]} and {opt})" if seen[param.name] != opt else ""
            raise click.UsageError(
                f"{opt} given twice{also}: give it once, with a list or a range for several values "
                "(e.g. 10,20 or 1:10:1)"
            )
        seen[param.name] = opt


def _say_how_far() -> None:
    """After Ctrl-C in long work: how far it got (the rows already printed are kept), one line on stderr."""
    job = execution.last_job()
    execution.finish()
    if job is not None and job.total > 1:
        click.echo(f"dpcalc: interrupted after {job.done:,.0f} of {job.total:,.0f} {job.unit}", err=True)


def _print_error(message: str, verdict: bool = False) -> None:
    """``Error: MESSAGE`` on stderr, one line.  A ``verdict`` (a failed budget or audit, exit 3, after the
    rows) is for the person reading the table: on a terminal it wraps to the width between words, as
    the notes do; into a pipe or a file it stays one line."""
    one_line = f"Error: {' '.join(str(message).split())}"
    if verdict:
        one_line = for_terminal(one_line, sys.stderr)
    click.echo(one_line, err=True)


def _quiet_broken_pipe() -> None:
    """``dpcalc ... | head``: the reader went away; exit quietly (no traceback, no error)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _missing_command(name: str, help_: str) -> click.Command:
    def callback(**_):
        raise click.ClickException(f"'{name}' is not available in this version of dpcalc")

    return click.Command(name, callback=callback, help=help_ + "\n\n(Not available in this version.)")


@click.group(cls=DpcalcGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="dpcalc")
def main() -> None:
    """dpcalc — a differential-privacy calculator.

    Answers the questions people who train and release models under differential privacy ask
    every day, with the tightest sound bounds known: what ε a DP-SGD run costs, how much noise a
    target ε needs, what a Rényi-DP curve means as (ε, δ), what a composition of releases costs,
    and how much budget adaptive jobs have spent.

    Every numeric option takes a value, a list (1,2,4), an arithmetic range (START:STOP:STEP) or a
    geometric range (START:STOP:xFACTOR); several swept options give one row per combination.
    Output is a table on a terminal and CSV in a pipe (-f/--format chooses).
    """
