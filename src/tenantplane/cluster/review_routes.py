"""The token webhook of the clusters' API servers: Kubernetes' webhook token authentication
(authentication.k8s.io/v1 TokenReview), one path per cluster, each authenticated by that
cluster's own credential (cluster/tokens.py). Under /webhooks/: callers are API servers, not
users, and have the webhooks' rate budget."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from tenantplane.access import Public, bearer_token
from tenantplane.cluster import credentials
from tenantplane.cluster.access_schemas import TokenReview, review_answer
from tenantplane.cluster.tokens import REVIEW_PATH, is_webhook_credential
from tenantplane.db.session import ReadsDep, get_database
from tenantplane.http.errors import Unauthenticated, error_responses, validation_error

router = APIRouter(tags=["clusters"])

ClusterUid = Annotated[str, Path(description="The cluster's uid (in its webhook kubeconfig)")]


@router.post(
    REVIEW_PATH,
    responses={
        200: {"description": "The TokenReview with its status (authenticated or not, and why)"},
        **error_responses(400, 401),
    },
    include_in_schema=False,
)
async def review_token(
    _: Public, uid: ClusterUid, request: Request, reads: ReadsDep
) -> JSONResponse:
    """Review a cluster token for the cluster's API server."""
    keys = request.app.state.keys
    if not is_webhook_credential(keys, uid, bearer_token(request)):
        raise Unauthenticated("not this cluster's webhook credential")
    try:
        reviewed = TokenReview.model_validate_json(await request.body())
    except ValidationError as invalid:
        located = [{**error, "loc": ("body", *error["loc"])} for error in invalid.errors()]
        raise validation_error(RequestValidationError(located)) from None
    now = await get_database(request).clock.now()
    status = await credentials.review(reads, keys, uid, reviewed.spec.token, now)
    return JSONResponse(review_answer(status))
