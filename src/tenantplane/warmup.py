"""One-time work done at startup, before a process serves or reconciles.

Each of these is otherwise done by whichever request (or reconciler look) comes first after
a start, and a burst that arrives then queues behind it: on a two-core machine the first
cluster create after a start took 270-400 ms against ~40 ms for the next ones
(bench/history.md, round 9). uvicorn runs the lifespan's startup before it listens, so a
replica is warm when it first answers.
"""

from __future__ import annotations

import anyio
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from sqlalchemy.orm import configure_mappers

from tenantplane.billing.context import BillingContext
from tenantplane.catalogue.plans import load_plans
from tenantplane.catalogue.versions import load_versions
from tenantplane.config import Settings
from tenantplane.http.observability import RouteTemplates


def analyse_routes(app: FastAPI) -> None:
    """The framework's analysis of every route (parameters, dependencies, response models),
    which it otherwise makes for each included router on the first request reaching it
    (tenantplane/http/route_index.py). A server's process does it before it starts (an app
    built and not served, as a test's, pays only for the routes it serves)."""
    for _ in iter_route_contexts(app.routes):
        pass


def configure_models() -> None:
    """Every ORM mapper configured now: SQLAlchemy does it on the first use of any of them
    (relationships, backrefs, attribute instrumentation of every model)."""
    configure_mappers()


def warm_up_app(app: FastAPI) -> None:
    """Called from the lifespan, on the server's event loop."""
    configure_models()
    settings: Settings = app.state.settings
    # Read once and kept; a broken file now fails the start, not the first create.
    load_plans(settings.plans_file)
    load_versions(settings.versions_file)
    if settings.billing_provider != "none":
        # The first billing request would import the provider's SDK; a plans file without
        # the prices billing needs fails the start. Without a provider the context stays
        # lazy (cheap), and such a file serves the plan limits alone.
        app.state.billing = BillingContext.from_settings(settings)
    # The index of route templates (metric labels), from the routes as declared.
    templates: RouteTemplates = app.state.route_templates
    templates.build(app)
    # anyio loads its asyncio backend when it is first asked for one: FastAPI does, for the
    # first dependency with a `yield`, that is in every request with a database session.
    anyio.CancelScope()
