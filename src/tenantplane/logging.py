"""Logging: one stream of lines on stderr for our events and every library's records: JSON
lines, or readable ones (structlog's console renderer, coloured) when stderr is a terminal
and no format was asked for (``TENANTPLANE_LOG_FORMAT``; docs/operations.md).

Our structlog events are rendered by structlog itself and written as one line each
(``StderrLogger``); the standard-library records of uvicorn, Alembic, SQLAlchemy and the
rest go through one handler on the root logger, whose ProcessorFormatter gives them the same
keys (``event``, ``level``, ``logger``, ``timestamp``, the request id when bound). Our events
do not pass through the standard library: its record, handler and formatter (which makes a
second record of the first) took a fifth of the API's CPU while it served GETs of one
cluster, for their one ``request`` line each (bench/history.md, round 16). Both write to
the ``sys.stderr`` of the moment, so redirected streams (tests, daemons) are honoured.
Credentials never logged, at any level: headers and bodies are not logged, and neither are
SQL statements, their parameters or request URLs (``QUIET_LOGGERS``).
"""

from __future__ import annotations

import json as stdlib_json
import logging
import os
import sys
from typing import Any

import orjson
import structlog

# Quiet whatever the level (WARNING and above only), because their records carry what the
# service is given as credentials (docs/security.md): the values written to the database, the
# URLs and headers sent. SQLAlchemy logs every statement with its parameters at INFO;
# aiosqlite every call with its arguments (the statement's parameters) at DEBUG; psycopg's
# debug wrapper every libpq call with its arguments; httpx (and httpx2, lightkube's and the
# backends' clients) every request URL, query strings included, at INFO, httpcore and
# urllib3 (hvac's, Paddle's) theirs at DEBUG, hpack and h2 the HTTP/2 headers (Authorization);
# the Paddle SDK its responses (its fallback logger is called "null_logger" but propagates);
# uvicorn's access lines the query strings (the app logs its own `request` event instead).
QUIET_LOGGERS = (
    "sqlalchemy",
    "aiosqlite",
    "psycopg.debug",
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "urllib3",
    "hpack",
    "h2",
    "hvac",
    "paddle_billing",
    "null_logger",
    "uvicorn.access",
)
# Others keep the configured level (Alembic's, uvicorn's error logger, Redis's: no values;
# psycopg quiets itself to WARNING unless told otherwise).


def quieted(name: str) -> bool:
    """Whether records of the logger ``name`` below WARNING are dropped."""
    return any(name == family or name.startswith(family + ".") for family in QUIET_LOGGERS)


class QuietFilter(logging.Filter):
    """Drops the quieted loggers' records below WARNING at the handler too, whatever level a
    library (or a configuration file: Alembic's, uvicorn's) set on its loggers since."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not quieted(record.name)


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the sys.stderr of the moment, so redirected streams (tests, daemons) are
    honoured."""

    def emit(self, record: logging.LogRecord) -> None:
        # handle() holds the handler's lock while emitting.
        self.stream = sys.stderr
        super().emit(record)


_handler = StderrHandler()
_handler.addFilter(QuietFilter())


class StderrLogger:
    """structlog's logger: writes each rendered event as a line to the sys.stderr of the
    moment, in one call (as the standard library's handler does: a line is never split by
    another thread's). ``name`` is the logger's name (``structlog.get_logger(name)``), for
    ``add_logger_name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def msg(self, message: str) -> None:
        stream = sys.stderr
        stream.write(message + "\n")
        stream.flush()

    log = debug = info = warn = warning = error = err = critical = exception = msg


def _logger_factory(*args: Any) -> StderrLogger:
    return StderrLogger(args[0] if args and isinstance(args[0], str) else "tenantplane")


def _json_default(value: Any) -> Any:
    # As structlog's own JSON renderer: an object's ``__structlog__`` if it has one, else
    # its repr (a log line never fails on a value it cannot encode).
    method = getattr(value, "__structlog__", None)
    return method() if callable(method) else repr(value)


def _json_line(event: dict[str, Any], **_: Any) -> str:
    try:
        return orjson.dumps(event, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        # What orjson refuses outright (an integer beyond 64 bits): the standard library.
        return stdlib_json.dumps(event, default=_json_default)


def _shared_processors(json: bool) -> list[structlog.typing.Processor]:
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]
    if json:
        # The console renderer draws tracebacks itself.
        processors.append(structlog.processors.format_exc_info)
    return processors


def _stderr_is_a_terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(callable(isatty) and isatty())


def console_renderer() -> structlog.dev.ConsoleRenderer:
    """Readable lines, coloured only on a terminal (escape sequences are noise in a file) and
    without ``NO_COLOR``. Tracebacks plain: the default (rich's, with rich installed) prints
    the values of each frame's variables, and those may be credentials."""
    colours = _stderr_is_a_terminal() and not os.environ.get("NO_COLOR")
    return structlog.dev.ConsoleRenderer(
        colors=colours, exception_formatter=structlog.dev.plain_traceback
    )


def configure_logging(level: str = "INFO", json: bool | None = True) -> None:
    """Idempotent: the process keeps one handler however often this runs. ``json`` None:
    JSON lines unless stderr is a terminal (an operator's shell), which gets readable ones;
    decided now, for the stderr of the moment."""
    if json is None:
        json = not _stderr_is_a_terminal()
    shared = _shared_processors(json)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer(serializer=_json_line) if json else console_renderer()
    )
    _handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    if _handler not in root.handlers:
        root.addHandler(_handler)
    numeric_level = logging.getLevelName(level.upper())
    root.setLevel(numeric_level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    structlog.configure(
        processors=[*shared, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=_logger_factory,
        cache_logger_on_first_use=False,
    )
