"""What every tpctl command shares: exit codes, error printing, the client, options."""

from __future__ import annotations

import enum
import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
import yaml

from tenantplane_client import __version__
from tenantplane_client._sync import Tenantplane
from tenantplane_client.cli import kubeconfig, profiles
from tenantplane_client.cli.output import Output, labelled, stderr
from tenantplane_client.errors import ApiError, ConnectionFailed, ResponseTooLarge, WaitTimeout
from tenantplane_client.retry import RetryPolicy

P = ParamSpec("P")
R = TypeVar("R")


class Exit(enum.IntEnum):
    """What scripts branch on (typer/click use 2 for usage errors)."""

    ok = 0
    error = 1
    usage = 2
    config = 3
    not_found = 4
    conflict = 5
    denied = 6
    invalid = 7
    unavailable = 8
    timeout = 9


def exit_code_of(error: ApiError) -> Exit:
    if error.status == 404:
        return Exit.not_found
    if error.status in (409, 412, 422):
        return Exit.conflict
    if error.status in (401, 403):
        return Exit.denied
    if error.status in (400, 413, 415):
        return Exit.invalid
    if error.status == 429 or error.status >= 500:
        return Exit.unavailable
    return Exit.error


def handled(command: Callable[P, R]) -> Callable[P, R]:
    """Print the API's errors (code and field included) and exit with their code."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except ApiError as error:
            stderr.print(labelled("Error:", "red", error))
            raise typer.Exit(exit_code_of(error)) from None
        except profiles.ConfigError as error:
            stderr.print(labelled("Configuration:", "red", error))
            raise typer.Exit(Exit.config) from None
        except kubeconfig.KubeconfigConflict as error:
            stderr.print(labelled("Kubeconfig:", "red", error))
            raise typer.Exit(Exit.conflict) from None
        except ConnectionFailed as error:
            stderr.print(labelled("Unreachable:", "red", error))
            raise typer.Exit(Exit.unavailable) from None
        except WaitTimeout as error:
            stderr.print(labelled("Timeout:", "red", error))
            raise typer.Exit(Exit.timeout) from None
        except ResponseTooLarge as error:
            stderr.print(labelled("Error:", "red", error))
            raise typer.Exit(Exit.error) from None

    return run


def group(help: str) -> typer.Typer:  # noqa: A002 (typer's name)
    """A command group whose help is plain text (never read as Rich markup)."""
    return typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=None)


class State:
    profile: str | None = None


OutputOption = Annotated[
    Output | None,
    typer.Option("--output", "-o", help="table (default on a terminal) | json (piped) | yaml"),
]
# For nested documents (the alerting sections), which print as YAML on a terminal.
DetailedOutputOption = Annotated[
    Output | None,
    typer.Option("--output", "-o", help="yaml (default on a terminal) | json (piped) | table"),
]
FileOption = Annotated[
    Path, typer.Option("--file", "-f", help="YAML or JSON file ('-' for standard input).")
]


@contextmanager
def client(profile: profiles.Profile | None = None) -> Iterator[Tenantplane]:
    """A client of the chosen profile (or of ``profile``, already resolved)."""
    if profile is None:
        _, profile = profiles.resolve(State.profile)
    url, tenant, credential = profile.require()
    retry = RetryPolicy(base_delay=profiles.retry_base_seconds())
    if profiles.sent_in_clear(url):
        stderr.print(
            labelled(
                "Warning:",
                "yellow",
                f"{url}: http:// to a host that is not loopback: the API key or token travels "
                "unencrypted; use https://",
            )
        )
    with Tenantplane(
        url,
        tenant,
        credential,
        retry=retry,
        user_agent=f"tpctl/{__version__}",
        page_size=profiles.page_size(),
    ) as api:
        yield api


def read_text(path: Path) -> str:
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        raise profiles.ConfigError(f"cannot read {path}: {exc.strerror}") from exc


def read_document(path: Path) -> Any:
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise profiles.ConfigError(f"{path} is not valid YAML or JSON: {exc}") from exc


def detailed(output: Output | None) -> Output:
    """Nested documents (the alerting sections): YAML on a terminal rather than a table."""
    if output is not None:
        return output
    return Output.yaml if sys.stdout.isatty() else Output.json
