"""Shared by the operator commands: transactions, exit codes and readable errors.

Exit codes (README, docs/operations.md): 0 success, 1 refused (not found, conflict, a rule),
2 usage (bad arguments, bad settings, invalid values), 3 unavailable (database or a backend
cannot be reached). An error is one line on stderr, or ``{"error": {"code", "message"}}`` on
stdout when ``--json`` was given; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

import structlog
import typer
from pydantic import TypeAdapter, ValidationError
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession
from typer.core import TyperGroup

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.db.urls import display_url
from tenantplane.http.errors import ApiError
from tenantplane.logging import configure_logging

T = TypeVar("T")

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

ENV_PREFIX = "TENANTPLANE_"
DEBUG_KEY = "tenantplane.debug"


class CliError(Exception):
    """A failure the operator can act on: a code, one readable message and an exit code."""

    def __init__(self, code: str, message: str, exit_code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.exit_code = exit_code


class Unavailable(CliError):
    def __init__(self, message: str) -> None:
        super().__init__("UNAVAILABLE", message, EXIT_UNAVAILABLE)


# One-shot commands print their result (JSON with --json) on stdout; long-running ones
# (serve, worker) print nothing there, and --json makes their logs JSON lines.
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print the result, or the error, as one JSON document.")
]
JsonLogsOption = Annotated[
    bool, typer.Option("--json", help="Log JSON lines whatever TENANTPLANE_LOG_FORMAT says.")
]


def load_settings(*, json_logs: bool = False) -> Settings:
    """Settings, with logging configured from them (on stderr: stdout carries results), or
    a usage error naming the environment variable that is wrong."""
    try:
        settings = Settings()
    except ValidationError as exc:
        problems = [
            f"{ENV_PREFIX}{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            for error in exc.errors()
        ]
        raise CliError("INVALID_SETTING", "; ".join(problems), EXIT_USAGE) from exc
    if json_logs:
        settings = settings.model_copy(update={"log_json": True})
    configure_logging(settings.log_level, settings.log_json)
    return settings


def refuse_simulated_billing(settings: Settings) -> None:
    """`serve` and `worker` must not charge real money for clusters that do not exist."""
    if not settings.bills_simulated_clusters:
        return
    if not settings.allow_simulated_billing:
        raise CliError(
            "SIMULATED_BILLING",
            f"{ENV_PREFIX}BILLING_PROVIDER=paddle charges tenants for their clusters, but "
            f"{ENV_PREFIX}ORCHESTRATOR=simulator only simulates them: set "
            f"{ENV_PREFIX}ORCHESTRATOR=kubernetes (docs/kubernetes.md), or "
            f"{ENV_PREFIX}ALLOW_SIMULATED_BILLING=true for a demo.",
            EXIT_USAGE,
        )
    structlog.get_logger(__name__).warning(
        "simulated billing allowed: Paddle charges for simulated clusters",
        billing_provider=settings.billing_provider,
        orchestrator=settings.orchestrator,
        setting=f"{ENV_PREFIX}ALLOW_SIMULATED_BILLING",
    )


def echo_json(document: object) -> None:
    typer.echo(json.dumps(document))


def echo_result(as_json: bool, document: object, text: str) -> None:
    """The command's result: ``document`` as JSON with --json, else ``text`` for people."""
    typer.echo(json.dumps(document) if as_json else text)


def _api_error(exc: ApiError) -> CliError:
    # Validation errors are the caller's values (usage); a backend the API would answer 503
    # for is unavailable, as an unreachable database is; anything else is a refusal.
    if exc.status in (400, 422):
        exit_code = EXIT_USAGE
    elif exc.status == 503:
        exit_code = EXIT_UNAVAILABLE
    else:
        exit_code = EXIT_REFUSED
    code = exc.code or {404: "NOT_FOUND", 409: "CONFLICT"}.get(exc.status, "REFUSED")
    message = exc.error if not exc.field else f"{exc.field}: {exc.error}"
    return CliError(code, message, exit_code)


def checked(kind: Any, value: object, option: str) -> Any:
    """``value`` validated (and normalised) as the API validates ``kind``; a usage error
    naming the option, with the API's code, when it is invalid."""
    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        code = first["type"] if first["type"].isupper() else "VALIDATION_FAILED"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise CliError(code, f"{option}: {message}", EXIT_USAGE) from None


def database_unavailable(url: str, exc: BaseException) -> Unavailable:
    cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    if "no such table" in cause or "does not exist" in cause:
        return Unavailable(
            f"the database {display_url(url)} has no tenantplane schema yet: "
            "run `tenantplane migrate` first."
        )
    return Unavailable(
        f"cannot use the database {display_url(url)}: {cause}. "
        f"Check {ENV_PREFIX}DATABASE_URL and that the database is running."
    )


def run_in_transaction(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Commit when ``work`` succeeds; refusals and an unreachable database become CliError."""

    async def run() -> T:
        database = Database.from_settings(settings)
        try:
            async with database.transaction() as session:
                return await work(session)
        finally:
            await database.dispose()

    return run_async(settings, run())


def run_async(settings: Settings, work: Awaitable[T]) -> T:
    async def wrapped() -> T:
        return await work

    try:
        return asyncio.run(wrapped())
    except ApiError as exc:
        raise _api_error(exc) from exc
    except (OperationalError, DBAPIError, OSError) as exc:
        raise database_unavailable(settings.database_url, exc) from exc


def _wants_json(args: Sequence[str]) -> bool:
    return "--json" in args


def print_error(error: CliError, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"error": {"code": error.code, "message": error.message}}))
    else:
        typer.echo(f"error: {error.message}", err=True)


class OperatorGroup(TyperGroup):
    """The top-level command: turns every failure into one readable line and its exit code."""

    def main(self, args: Sequence[str] | None = None, *pargs: Any, **kwargs: Any) -> Any:
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().main(args, *pargs, **kwargs)

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        argv: list[str] = getattr(self, "_argv", [])
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            # The global --debug (set by the callback, which has run by now) wants the traceback.
            if ctx.meta.get(DEBUG_KEY):
                raise
            error = to_cli_error(exc)
            print_error(error, _wants_json(argv))
            raise typer.Exit(error.exit_code) from exc


def to_cli_error(exc: Exception) -> CliError:
    if isinstance(exc, CliError):
        return exc
    format_message = getattr(exc, "format_message", None)
    if callable(format_message):
        # Bad arguments and options: click's usage errors (vendored by newer typer releases,
        # hence recognised by shape); the message names the option.
        return CliError("USAGE", str(format_message()), EXIT_USAGE)
    if isinstance(exc, ApiError):
        return _api_error(exc)
    return CliError(
        "INTERNAL", f"unexpected {type(exc).__name__}: {exc} (run again with --debug for details)"
    )
