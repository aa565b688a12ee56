"""Logging: one stream of JSON lines on stderr for our events and every library's records.

structlog events and the standard-library records of uvicorn, Alembic, SQLAlchemy and the
rest share one handler on the root logger; structlog's ProcessorFormatter gives both the
same keys (``event``, ``level``, ``logger``, ``timestamp``, the request id when bound).
Credentials never logged: headers and bodies are not logged, and neither are SQL statements.
"""

from __future__ import annotations

import logging
import sys

import structlog

# Quiet whatever the level: SQLAlchemy logs every statement with its parameters at INFO,
# httpx every request URL (query strings included) at INFO.
QUIET_LOGGERS = ("sqlalchemy", "httpx", "httpcore")


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the sys.stderr of the moment, so redirected streams (tests, daemons) are
    honoured."""

    def emit(self, record: logging.LogRecord) -> None:
        # handle() holds the handler's lock while emitting.
        self.stream = sys.stderr
        super().emit(record)


_handler = StderrHandler()


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


def configure_logging(level: str = "INFO", json: bool = True) -> None:
    """Idempotent: the process keeps one handler however often this runs."""
    shared = _shared_processors(json)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
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
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
