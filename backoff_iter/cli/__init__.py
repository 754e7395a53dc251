"""``python -m backoff_iter``: a thin front end to the library.

Choices and defaults come from the library (the strategies' signatures,
the simulators' defaults); the commands parse, print and draw.  One module
per command (``_show``, ``_plan``, ``_simulate``, ``_overload``), each with
``add(parser)`` for its options, ``prints(args)`` (whether it writes to
stdout) and ``run(args)``.

Exit status: 0 on success, 1 when the output or a picture cannot be
written, 2 on bad usage (one line naming the option), 130 on Ctrl-C.  A
reader that goes away (``| head``) ends the command quietly, with 0 (once
the picture asked for with ``--plot`` is drawn).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module

from backoff_iter import _checks
from backoff_iter._version import __version__

from ._common import (
    PROG,
    OutputError,
    ParseError,
    Parser,
    UsageError,
    clip_values,
    flush,
    option,
    say,
    settle_output,
)

__all__ = ["main"]

#: Each command's module, by the command's name: imported when that command
#: runs (all of them only for the list of commands in the top-level help).
COMMANDS = {"show": "_show", "plan": "_plan", "simulate": "_simulate", "overload": "_overload"}

DESCRIPTION = "Backoff schedules as iterables: show one, plan one, or simulate clients using them."


def exit_status(draws: bool = True) -> str:
    """The exit statuses, as a help's last lines say them: status 1 names a
    picture only for what *draws* one (the top level, a command with ``--plot``)."""
    unwritten = "the output or a picture" if draws else "the output"
    return (
        f"exit status: 0 success, 1 {unwritten} could not be written, 2 bad usage,"
        " 130 interrupted (Ctrl-C); a reader that goes away (| head) ends it quietly"
    )


def parser(only: str | None = None, prog: str = PROG) -> Parser:
    """The parser of every command; each command module adds its own options.

    *only*: the command that runs - the other commands are named (argparse
    lists them in its errors) but their modules are not imported.  *prog*:
    how the usage names the command line.
    """
    top = Parser(prog=prog, description=DESCRIPTION, epilog=exit_status())
    top.add_argument("--version", action="version", version=f"backoff_iter {__version__}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, module in COMMANDS.items():
        if only is not None and name != only:
            commands.add_parser(name)  # not the one that runs
            continue
        command = import_module(f".{module}", __name__)
        sub = commands.add_parser(name, help=command.SUMMARY, description=command.SUMMARY)
        sub.set_defaults(run=command.run, prints=command.prints, parser=sub)
        command.add(sub)
        # (argparse names no public way to ask a parser for an option it has)
        sub.epilog = exit_status(draws="--plot" in sub._option_string_actions)
    return top


def command_named(arguments: Sequence[str]) -> str | None:
    """The command *arguments* name: their first word that is not an option
    (the top level's options take no value); None if there is none, or if
    the top-level help is asked for first (it lists every command)."""
    for argument in arguments:
        if argument in ("-h", "--help"):
            return None
        if not argument.startswith("-"):
            return argument
    return None


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Run the command line; returns the exit status.  *prog* is how it was
    started, as its usage and messages name it (``backoff-iter`` for the script)."""
    try:
        return _main(argv, prog)
    finally:
        settle_output()  # (whatever the status: a gone reader is no status 120)


def _main(argv: Sequence[str] | None, prog: str) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    who = prog  # the command's own once parsed: "python -m backoff_iter show"
    try:
        top = parser(command_named(arguments), prog)
        args, extras = top.parse_known_args(arguments)  # SystemExit for --help and --version
        if extras:
            getattr(args, "parser", top).unrecognized(extras)
        if args.command is None:
            top.error("choose a command: show, plan, simulate or overload (see --help)")
        who = args.parser.prog
        if sys.stdout is None and args.prints(args):  # `>&-`: fail before any work
            raise OutputError("cannot write the output: stdout is closed")
        try:
            args.run(args)
        except (_checks.ArgumentValueError, _checks.ArgumentTypeError) as error:
            raise UsageError(option(error.parameter), str(error)) from None
        flush()
    except SystemExit as exit:  # argparse has spoken
        return exit.code if isinstance(exit.code, int) else 2
    except (ParseError, UsageError) as error:
        who = error.prog if isinstance(error, ParseError) else who
        say(f"{who}: error: {clip_values(str(error), arguments)}")
        return 2
    except OutputError as error:
        say(f"{prog}: error: {error}")
        return 1
    except KeyboardInterrupt:
        end_progress = "\n" if sys.stderr is not None and sys.stderr.isatty() else ""
        say(f"{end_progress}{prog}: interrupted")  # a progress line may be open
        return 130
    except BrokenPipeError:  # the reader has gone (`| head`): stop quietly
        return 0
    return 0
