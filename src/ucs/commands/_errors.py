"""The CLI's one error policy: user mistakes become a short message and exit code 2, never a traceback.

:func:`guard` wraps a command's callback; :func:`guard_app` applies it to every command of a Typer app (and
of its sub-apps). A wrapped command turns

* ``ValueError`` (bad values, malformed files, damaged caches; ``DatasetError`` and ``UnicodeDecodeError``
  included),
* ``OSError`` with a file name (missing file, permission denied, a folder where a file is expected ...),
* :class:`~ucs.utils.optional.MissingDependencyError` and
* :class:`~ucs.utils.lock.FolderLockedError`

into at most two lines on stderr — ``Error: <parameter>: <what is wrong>`` and ``  fix: <what to do>`` —
and exit code 2. The parameter is the option whose value the message or the failing file names (``--out``,
``--pool`` ...). ``KeyboardInterrupt`` (Ctrl-C, and SIGTERM while a command runs) prints one line and exits
with 130. ``ucs --debug <command>`` or ``UCS_DEBUG=1`` re-raises instead, so the traceback shows.

Every message and warning line it prints passes through :func:`ucs.utils.redact.redact` last, so an API key,
an ``Authorization`` header or a URL's password that reached a message is shown as ``***``.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

import typer

from ucs.utils.redact import redact

__all__ = ["guard", "guard_app", "set_debug", "debug_enabled", "DEBUG_ENV", "EXIT_USER_ERROR"]

DEBUG_ENV = "UCS_DEBUG"
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
_STATE = {"debug": False}


class Terminated(KeyboardInterrupt):
    """SIGTERM received while a command ran (handled like Ctrl-C: the run records ``interrupted``)."""


def set_debug(value: bool) -> None:
    """Show tracebacks instead of short messages (the root ``--debug`` flag)."""
    _STATE["debug"] = bool(value)


def debug_enabled() -> bool:
    return _STATE["debug"] or os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _params(fn: Callable[..., Any], kwargs: dict) -> List[Tuple[str, str, Any]]:
    """``(python name, option text, value)`` of a command's parameters, read off its signature's Typer
    defaults (``typer.Option(..., "--pool")`` gives ``--pool``; an argument its upper-case name)."""
    out = []
    for name, par in inspect.signature(fn).parameters.items():
        info = par.default
        decls = [d for d in (getattr(info, "param_decls", None) or ()) if isinstance(d, str)]
        if type(info).__name__ == "ArgumentInfo":
            label = name.upper()
        else:
            longs = [d.split("/")[0] for d in decls if d.startswith("--")]
            label = longs[0] if longs else f"--{name.replace('_', '-')}"
        out.append((name, label, kwargs.get(name)))
    return out


def _param_for_path(filename: str, params: List[Tuple[str, str, Any]]) -> Optional[str]:
    """The option whose path value is ``filename``, one of its parent folders (the closest one), or — when a
    folder could not be made — lies under it. The temporary file of an atomic write counts as its target."""
    try:
        target = Path(os.path.abspath(filename))
    except (TypeError, ValueError):
        return None
    m = re.match(r"^\.(.+)\.[^.]+\.tmp$", target.name)  # ucs.utils.io.atomic_write_bytes's temporary file
    targets = [target] + ([target.with_name(m.group(1))] if m else [])
    best, depth = None, -1
    for _, label, value in params:
        if value is None or isinstance(value, bool) or not isinstance(value, (str, Path)) or not str(value):
            continue
        p = Path(os.path.abspath(str(value)))
        for t in targets:
            if p == t or p in t.parents:
                d = len(p.parts)
            elif t in p.parents:
                d = 0
            else:
                continue
            if d > depth:
                best, depth = label, d
    return best


def _param_for_message(message: str, params: List[Tuple[str, str, Any]]) -> Optional[str]:
    """The option the message is about: an option it names, else the one mentioned first — by its parameter
    name (commands name their parameters as the library does: ``backbone`` for ``--model``, ``dbscan_q`` for
    ``--dbscan-q``, so a message about ``clusterer.dbscan_q`` finds its option) or its value."""
    named = re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", message)
    known = {label for _, label, _ in params}
    for opt in named:
        if opt in known:
            return opt
    found: List[Tuple[int, int, str]] = []  # (position, kind, option): names before values at one position

    def word(w: str) -> Optional[int]:
        m = re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", message)
        return None if m is None else m.start()

    for name, label, value in params:
        pos = word(name)
        if pos is not None:
            found.append((pos, 0, label))
        if isinstance(value, (str, Path)) and not isinstance(value, bool) and len(str(value)) >= 3:
            pos = message.find(str(value))
            if pos >= 0:
                found.append((pos, 1, label))
    if found:
        return min(found)[2]
    return named[0] if named else None


def _describe(
    exc: BaseException, command: str, params: List[Tuple[str, str, Any]]
) -> Optional[Tuple[str, Optional[str], str]]:
    """``(message, parameter, fix)`` for a user error, ``None`` for anything else (a bug: re-raised)."""
    from ucs.utils.optional import LLAMA_REBUILD, EngineCrashedError, MissingDependencyError
    from ucs.utils.lock import FolderLockedError

    help_hint = f"see `ucs {command} --help`" if command else "see `ucs --help`"
    if isinstance(exc, FolderLockedError):
        return (
            str(exc),
            _param_for_path(str(exc.folder), params),
            "wait for that run to finish, add --wait to queue behind it, or choose another output folder",
        )
    if type(exc).__name__ == "ConfigurationMismatchError":  # ucs.evaluation.runner's (not imported for this)
        return (
            str(exc).split("; use another output folder")[0],
            _param_for_path(str(exc.folder), params),
            "add --fresh to move the old results aside and start over, or choose another output folder",
        )
    if isinstance(exc, EngineCrashedError):
        return str(exc).split(": rebuild it with")[0], None, f"rebuild it with {LLAMA_REBUILD}"
    if isinstance(exc, MissingDependencyError):
        return str(exc), None, "install what the message names, then rerun the same command"
    if isinstance(exc, OSError) and getattr(exc, "filename", None) is not None:
        fname = str(exc.filename)
        param = _param_for_path(fname, params)
        what = {
            FileNotFoundError: ("no such file or folder", "check the path"),
            IsADirectoryError: ("is a folder, expected a file", "pass a file"),
            FileExistsError: ("a file is in the way, expected a folder", "pass a folder path"),
            NotADirectoryError: ("a part of the path is a file, expected a folder", "pass a folder"),
            PermissionError: ("permission denied", "choose a path you can read and write"),
        }
        for cls, (msg, fix) in what.items():
            if isinstance(exc, cls):
                return f"{msg}: {fname}", param, f"{fix} ({help_hint})"
        return f"{exc.strerror or exc}: {fname}", param, f"check the path ({help_hint})"
    if isinstance(exc, OSError):  # no file name attached (e.g. MissingDataError): the message says what
        msg = str(exc).strip() or type(exc).__name__
        return msg, _param_for_message(msg, params), help_hint
    if isinstance(exc, ValueError):
        msg = str(exc).strip() or type(exc).__name__
        if isinstance(exc, UnicodeDecodeError):
            msg = f"a file is not UTF-8 text ({exc.reason} at byte {exc.start})"
        return msg, _param_for_message(msg, params), help_hint
    return None


def _format(message: str, param: Optional[str], fix: str) -> str:
    first = message.splitlines()[0] if message else "invalid input"
    if param and not first.startswith(param):
        first = f"{param}: {first}"
    return redact(f"Error: {first}\n  fix: {fix} (--debug shows the traceback)")


#: The exceptions module of the Click that Typer runs on: Typer ≥ 0.29 vendors Click (``typer._click``), older
#: releases use the ``click`` package; reading it off Typer's own ``BadParameter`` serves both without
#: importing ``click``, which is not a dependency.
_CLICK_EXCEPTIONS = sys.modules[type(typer.BadParameter("x")).__module__]

#: Exceptions that already carry the CLI's answer (usage errors, ``typer.Exit``).
_PASSTHROUGH = tuple(
    {typer.Exit, typer.Abort, _CLICK_EXCEPTIONS.ClickException}
    | {getattr(_CLICK_EXCEPTIONS, n) for n in ("Exit", "Abort") if hasattr(_CLICK_EXCEPTIONS, n)}
)


_USAGE = (_CLICK_EXCEPTIONS.UsageError,)


def _show_warning(
    message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Optional[str] = None
) -> None:
    """Damaged-file, engine-fallback, dataset and deprecated-setting warnings as one ``warning: ...`` line;
    others as Python prints them."""
    from ucs.data.dataset import DatasetWarning
    from ucs.utils.integrity import DamagedFileWarning
    from ucs.utils.optional import EngineFallbackWarning

    # ucs.pipeline.config's DeprecatedSettingWarning by name: showing a warning never loads the pipeline floor
    if (
        issubclass(category, (DamagedFileWarning, EngineFallbackWarning, DatasetWarning))
        or category.__name__ == "DeprecatedSettingWarning"
    ):
        typer.echo(redact(f"warning: {message}"), err=True)
    else:
        _PYTHON_SHOWWARNING(redact(message), category, filename, lineno, file, line)


_PYTHON_SHOWWARNING = warnings.showwarning


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def guard(fn: Callable[..., Any], command: str = "") -> Callable[..., Any]:
    """Wrap a command callback with the error policy (the signature Typer reads is kept)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = None
        if threading.current_thread() is threading.main_thread():
            old = signal.signal(signal.SIGTERM, _on_sigterm)
        shown = warnings.showwarning
        warnings.showwarning = _show_warning
        try:
            return fn(*args, **kwargs)
        except _USAGE as exc:  # BadParameter & co. raised by the command body: the same two-line format
            if debug_enabled():
                raise
            msg = exc.format_message()
            hint = getattr(exc, "param_hint", None)
            param = hint if isinstance(hint, str) and (hint.startswith("-") or hint.isupper()) else None
            msg = re.sub(r"^Invalid value(?: for [^:]+)?: ", "", msg)
            typer.echo(
                _format(
                    msg, param or _param_for_message(msg, _params(fn, kwargs)), f"see `ucs {command} --help`"
                ),
                err=True,
            )
            raise typer.Exit(EXIT_USER_ERROR) from None
        except _PASSTHROUGH:
            raise
        except BrokenPipeError:  # the reader went away (``ucs reproduce --list | head``): nothing to report
            _silence_stdout()
            raise typer.Exit(0) from None
        except KeyboardInterrupt:
            if debug_enabled():
                raise
            typer.echo(
                "Interrupted: what was computed is saved; rerun the same command to continue.", err=True
            )
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:  # noqa: BLE001 - classified below; anything else is re-raised
            described = _describe(exc, command, _params(fn, kwargs))
            if described is None or debug_enabled():
                raise
            typer.echo(_format(*described), err=True)
            raise typer.Exit(EXIT_USER_ERROR) from None
        finally:
            warnings.showwarning = shown
            if old is not None:
                signal.signal(signal.SIGTERM, old)

    wrapper.__ucs_guarded__ = True  # type: ignore[attr-defined]
    return wrapper


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that flushing it at exit after a closed pipe raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def guard_app(app: typer.Typer, prefix: str = "") -> None:
    """Apply :func:`guard` to every command registered on ``app`` and its sub-apps (idempotent)."""
    for info in app.registered_commands:
        if info.callback is not None and not getattr(info.callback, "__ucs_guarded__", False):
            name = info.name or info.callback.__name__.replace("_", "-")
            info.callback = guard(info.callback, f"{prefix}{name}")
    for group in app.registered_groups:
        if group.typer_instance is not None:
            guard_app(group.typer_instance, f"{prefix}{group.name} ")
