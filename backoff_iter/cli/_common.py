"""What the commands share: the parser, argument types, errors, output."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from backoff_iter._extras import install_hint

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

PROG = "python -m backoff_iter"

# Library parameters that the command line spells otherwise; any other
# parameter `x_y` is the option `--x-y`.  The one table from names to options.
_OPTIONS = {"delay": "--base", "rng": "--seed"}


def option(parameter: str) -> str:
    """The option that gives the library's *parameter*."""
    return _OPTIONS.get(parameter, "--" + parameter.replace("_", "-"))


class UsageError(Exception):
    """Bad usage found after parsing: the option typed, and what is wrong (exit status 2)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")


class ParseError(Exception):
    """Bad usage found by argparse: the command's prog and argparse's message (exit status 2)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class OutputError(Exception):
    """The output or a picture could not be written (exit status 1)."""


#: What argparse takes for a negative number, not an option: a word that
#: starts as one (``-1e3``, ``-.5``, ``-inf``; the number's own check then
#: says what is wrong with it), where argparse's own (3.9 to 3.13.0) takes
#: only -1 and -1.5 - ``--base -1e3`` said "expected one argument".
NEGATIVE_NUMBER = re.compile(r"-\.?\d|-inf|-nan", re.I)


class Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) that main() prints, and the
    help and --version are output like any other: one that cannot be written is status 1.
    A negative number in any form (:data:`NEGATIVE_NUMBER`) is a value, never an option."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message: str) -> NoReturn:
        raise ParseError(self.prog, message)

    # argparse's own check of a choice, with the closest name offered:
    # `show full-jitter` asks "did you mean 'full_jitter'?".
    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            named = {str(choice): choice for choice in choices}
            listed = ", ".join(map(repr, named.values()))
            message = f"invalid choice: {value!r} (choose from {listed})"
            close = closest(str(value), list(named))
            if close is not None:
                message += f"; did you mean {named[close]!r}?"
            raise argparse.ArgumentError(action, message)

    def unrecognized(self, extras: Sequence[str]) -> NoReturn:
        """The error of words that no option of this parser (the command that
        runs, else the top level) takes, offering the option meant for the first
        of them that looks like one: ``--sed`` asks "did you mean '--seed'?"."""
        from difflib import get_close_matches  # only on a mistake

        message = f"unrecognized arguments: {' '.join(extras)}"
        typed = next((extra.partition("=")[0] for extra in extras if extra.startswith("--")), "")
        options = [name for action in self._actions for name in action.option_strings]
        # Near: a letter or two off (argparse takes a beginning already); --bogus is no --base.
        meant = get_close_matches(typed, [o for o in options if o.startswith("--")], 1, 0.75)
        if meant:
            message += f"; did you mean {meant[0]!r}?"
        self.error(message)

    # error() no longer prints, so argparse's writer prints only the help and --version,
    # to stdout.  Its own would swallow a failure (status 0 into /dev/full) and write
    # them on stderr when stdout is closed.
    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if file is not None and file is not sys.stdout:  # asked for another file
            file.write(message)
            return
        write(message)
        flush()


def closest(typed: str, names: Sequence[str]) -> str | None:
    """The one of *names* that *typed* was probably meant to be: the same
    name in another case or with dashes for underscores, the one name it
    begins, else the nearest spelling; None if none is near.

    >>> closest("Full-Jitter", ["full_jitter", "equal_jitter"])
    'full_jitter'
    >>> closest("expo", ["exponential", "equal_jitter"])
    'exponential'
    >>> closest("shwo", ["show", "plan", "simulate", "overload"])
    'show'
    >>> closest("zzz", ["show", "plan"]) is None
    True
    """
    spelled = typed.lower().replace("-", "_")
    alike = {name: name.lower().replace("-", "_") for name in names}
    for name, same in alike.items():
        if same == spelled:
            return name
    begun = [name for name, same in alike.items() if spelled and same.startswith(spelled)]
    if len(begun) == 1:
        return begun[0]
    from difflib import get_close_matches  # only on a mistake

    near = get_close_matches(typed, names, n=1)
    return near[0] if near else None


# -- values in error lines ------------------------------------------------------------------

SHOWN_AT_MOST = 100  # characters of a typed value an error line shows whole
_SHOWN_ENDS = 40  # characters shown from each end of a longer one


def clip(value: str) -> str:
    """*value*, or if longer than SHOWN_AT_MOST, its ends and its length: an error line
    that echoes a 5,000-character value stays one readable line.

    >>> clip("1" * 5000) == "1" * 40 + "..." + "1" * 40 + " (5,000 characters)"
    True
    """
    return value if len(value) <= SHOWN_AT_MOST else f"{_ends(value)} ({len(value):,} characters)"


def _ends(value: str) -> str:
    return f"{value[:_SHOWN_ENDS]}...{value[-_SHOWN_ENDS:]}"


def clip_values(message: str, arguments: Iterable[str]) -> str:
    """*message* with every long value typed in *arguments* clipped, whether the message
    quotes it as typed or as its repr: an argument, the value of an --option=value, or
    an item of a comma-separated list (argparse's messages and the library's alike);
    and every long number in it, which a value typed may have made.

    >>> clip_values("it costs " + "7" * 300, []) == f"it costs {'7' * 40}...{'7' * 40} (300 characters)"
    True
    """
    values = set()
    for argument in arguments:
        for value in (argument, argument.partition("=")[2]):
            values.add(value)
            values.update(item.strip() for item in value.split(","))
    for value in sorted((v for v in values if len(v) > SHOWN_AT_MOST), key=len, reverse=True):
        quoted = f"{_ends(value)!r} ({len(value):,} characters)"
        message = message.replace(repr(value), quoted).replace(value, clip(value))
    # ... and a long number worked out from one (10**4000 as 10,000,000,...; a cost)
    return _LONG_NUMBER.sub(lambda found: clip(found.group()), message)


#: A number longer than an error line shows whole, digits grouped or not.
_LONG_NUMBER = re.compile(rf"\d[\d,]{{{SHOWN_AT_MOST},}}")


# -- argument types: each error names nothing, argparse adds "argument --option:" ----------


def number(text: str) -> float:
    """A float, not NaN; infinite only when spelled so (``inf``): a number
    beyond floats (``1e400``) is refused as typed, not taken as inf; zero only
    when it is zero: one too small for floats (``1e-400``) is refused, not taken as 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    if math.isinf(value) and text.strip().lstrip("+-").lower() not in ("inf", "infinity"):
        raise argparse.ArgumentTypeError(
            f"expected a number within floats (at most about 1.8e308; inf for no bound),"
            f" got {text!r}"
        )
    if value == 0.0 and _nonzero(text):
        raise argparse.ArgumentTypeError(
            f"expected a number within floats (0, or at least about 5e-324 from it), got {text!r}"
        )
    return value


def _nonzero(text: str) -> bool:
    """Whether *text*, a finite number float() reads, is not zero: a digit of its
    mantissa (before the exponent) is not 0."""
    mantissa = text.lower().partition("e")[0]
    return any(digit.isdecimal() and int(digit) != 0 for digit in mantissa)


def integer(text: str) -> int:
    """Any whole number (a seed) that Python converts from text."""
    try:
        return int(text)
    except ValueError:
        digits = text.strip().lstrip("+-").replace("_", "")
        limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()  # 0: none (before 3.11)
        if digits.isdecimal() and 0 < limit < len(digits):
            raise argparse.ArgumentTypeError(
                f"expected at most {limit:,} digits, got {len(digits):,}"
            ) from None
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number of at least *minimum*, and at most *maximum* if given."""

    def checked(text: str) -> int:
        value = integer(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {text}")
        return value

    return checked


def _items(text: str) -> list[str]:
    """Comma-separated items, none of them empty."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated items, none empty, got {text!r}"
        )
    return items


def names_among(
    known: Sequence[str], joined: str = ",", *, once: bool = False
) -> Callable[[str], list[str]]:
    """Comma-separated names, each made of *known* ones joined by *joined*: one
    that is near a known name but not it is refused offering that name, as a
    mistyped choice is (``full-jitter``: "did you mean 'full_jitter'?"); the
    library says what is wrong with any other.  With *once*, an item given
    twice is refused (a run per item would run twice), and so is one made of
    the names of another in another order (``b+a`` after ``a+b``).

    >>> names_among(["full_jitter", "none"])("none,full_jitter")
    ['none', 'full_jitter']
    >>> names_among(["full_jitter", "none"])("full-jitter")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: invalid choice: 'full-jitter' (choose from 'full_jitter', 'none'); did you mean 'full_jitter'?
    >>> names_among(["a", "b"], "+", once=True)("a+b,b,b+a")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'b+a' is 'a+b' again: give each once
    """

    def checked(text: str) -> list[str]:
        items = _items(text)
        for item in items:
            for name in item.split(joined):
                meant = None if name in known else closest(name, known)
                if meant is not None:
                    listed = ", ".join(map(repr, known))
                    raise argparse.ArgumentTypeError(
                        f"invalid choice: {name!r} (choose from {listed}); did you mean {meant!r}?"
                    )
        if once:
            seen: dict[tuple[str, ...], str] = {}
            for item in items:
                first = seen.setdefault(tuple(sorted(item.split(joined))), item)
                if first == item and items.count(item) > 1:
                    raise argparse.ArgumentTypeError(f"{item!r} given twice: give each once")
                if first != item:
                    raise argparse.ArgumentTypeError(f"{item!r} is {first!r} again: give each once")
        return items

    return checked


def counts(text: str) -> list[int]:
    """Comma-separated whole numbers of at least 1."""
    return [whole(1)(item) for item in _items(text)]


def plot_path(text: str) -> str:
    """A .png file that can be written, checked before any work (and matplotlib there)."""
    if not text.lower().endswith(".png"):
        raise argparse.ArgumentTypeError(f"must name a .png file, got {text!r}")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a directory")
    folder = os.path.dirname(os.path.abspath(text))  # access() is False if it does not exist
    if not os.access(folder, os.W_OK) or (os.path.exists(text) and not os.access(text, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text!r}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise argparse.ArgumentTypeError(
            f"needs matplotlib: {install_hint('matplotlib', 'plot')}"
        ) from None
    return text


def default(function: Callable[..., Any], parameter: str) -> Any:
    """A library function's default for *parameter*: defaults live in one place."""
    return inspect.signature(function).parameters[parameter].default


# -- output ---------------------------------------------------------------------------------


def plural(count: int, noun: str, nouns: str | None = None, *, grouped: bool = True) -> str:
    """*count* and its noun, singular for 1: "1 retry", "3 retries", "1,000 delays"
    (thousands grouped unless *grouped* is false).

    >>> plural(1, "retry", "retries"), plural(3, "retry", "retries"), plural(1000, "delay")
    ('1 retry', '3 retries', '1,000 delays')
    >>> plural(1057, "retry", "retries", grouped=False)
    '1057 retries'
    """
    return f"{count:{',' if grouped else ''}} {noun if count == 1 else nouns or noun + 's'}"


def decimal(value: float, places: int = 3) -> str:
    """*value* with three decimals (or *places*), or in six significant digits
    once it has more than 15 (no line of 300 digits for a sleep near the largest
    float), or in three when the decimals would show it as 0 (a sleep of 0.0001
    is not 0.000).

    >>> decimal(97.0172), decimal(0.0), decimal(0.0001), decimal(2e-05), decimal(2.0**60)
    ('97.017', '0.000', '0.0001', '2e-05', '1.15292e+18')
    >>> decimal(97.0172, places=1), decimal(0.04, places=1), decimal(1e300, places=1)
    ('97.0', '0.04', '1e+300')
    """
    if 0.0 < abs(value) < 0.5 / 10**places:
        return f"{value:.3g}"
    return f"{value:.{places}f}" if abs(value) < 1e15 else f"{value:.6g}"


def figure(value: float) -> str:
    """*value* as ``:g`` writes it if that is *value*, else in full: a factor
    of 1.0000001 is not shown as 1 (which is a constant schedule).

    >>> figure(2.0), figure(1.1), figure(1e300), figure(1.0000001)
    ('2', '1.1', '1e+300', '1.0000001')
    """
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def write(text: str) -> None:
    """*text* on stdout; a failure to write is an OutputError (a gone reader is not).
    A character the stdout cannot encode (``PYTHONIOENCODING=ascii``) is escaped, as on
    stderr: ``\\xb2``."""
    stream = sys.stdout
    if stream is None:
        raise OutputError("cannot write the output: stdout is closed")
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:  # raised before anything is written
            encoding = stream.encoding
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _cannot_write(error) from None


@contextlib.contextmanager
def writing(picture_path: str | None = None) -> Iterator[None]:
    """The command's output, written in the block.  A reader that goes away
    meanwhile (``| head``) stops the output there, and the command with it -
    unless a picture is still to be drawn into *picture_path*: the user asked
    for that file, so the command goes on to draw it."""
    try:
        yield
    except BrokenPipeError:
        if picture_path is None:
            raise


def flush() -> None:
    """Flush stdout, as write() does: a failure is an OutputError."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _cannot_write(error) from None


def _cannot_write(error: OSError) -> OutputError:
    discard_output()
    return OutputError(f"cannot write the output: {error.strerror or error}")


def settle_output() -> None:
    """Flush stdout before the interpreter does, whatever the command's status:
    should its reader be gone or its disk full - after a broken pipe, an
    error, Ctrl-C, a picture that failed - what it holds goes nowhere
    (:func:`discard_output`), not to "Exception ignored" and status 120."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # (ValueError: closed)
        discard_output()


def discard_output() -> None:
    """Point stdout's file at /dev/null once writing it failed, or its reader went
    away: a buffered stdout (any but PYTHONUNBUFFERED's) keeps what it could not
    write, and the interpreter's last flush would fail again, adding "Exception
    ignored ... OSError" and exit status 120.  The idiom of the note on SIGPIPE in
    the docs of the signal module."""
    try:
        descriptor = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):  # no file under it (a test's capture)
        return
    os.dup2(devnull, descriptor)
    os.close(devnull)


def say(line: str, end: str = "\n") -> None:
    """A line on stderr, if there is one to write to (diagnostics never fail a command)."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(line + end)
        stream.flush()
    except OSError:
        pass


def picture(command: str, path: str, draw: Callable[[str], None]) -> None:
    """Draw a picture into *path*, and say so (on stderr: --json output stays JSON)."""
    try:
        draw(path)
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from None
    say(f"{command}: wrote {path}")


def _strict(value: Any) -> Any:
    """*value* made RFC 8259 JSON: an infinite (or NaN) number becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    return value


def to_json(value: Any) -> str:
    """Strict JSON: inf is null, as JavaScript's JSON.stringify writes it."""
    return json.dumps(_strict(value), allow_nan=False)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Right-aligned columns under a header."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    return "\n".join(
        "  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in (header, *rows)
    )


class Progress:
    """Progress on stderr: one line rewritten on a terminal, plain lines otherwise."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.started = time.perf_counter()
        self.terminal = sys.stderr is not None and sys.stderr.isatty()
        self.shown = -math.inf

    def __call__(self, text: str) -> None:
        now = time.perf_counter()
        if now - self.shown < (0.1 if self.terminal else 2.0):
            return
        self.shown = now
        line = f"{self.command}: {text} ({now - self.started:.1f} s)"
        if self.terminal:
            say(f"\r{line}\033[K", end="")
        else:
            say(line)

    def done(self) -> None:
        line = f"{self.command}: done in {time.perf_counter() - self.started:.1f} s"
        say(f"\r{line}\033[K" if self.terminal else line)
