"""Cluster access: the credentials a member or key is issued, and the Kubernetes TokenReview
the clusters' API servers send (authentication.k8s.io/v1, as the API server writes it:
k8s.io/apiserver plugin/pkg/authenticator/token/webhook)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tenantplane.http.schemas import OutputModel, UtcDateTime

REVIEW_API_VERSION = "authentication.k8s.io/v1"
REVIEW_KIND = "TokenReview"


class ClusterCredentials(OutputModel):
    """A token for the cluster's API server (kubectl's bearer token) and when it expires."""

    token: str
    expires_at: UtcDateTime


class _Review(BaseModel):
    # What the API server adds (metadata, an empty status) is not ours to refuse.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class TokenReviewSpec(_Review):
    token: str = Field(min_length=1)
    audiences: list[str] | None = None


class TokenReview(_Review):
    api_version: Literal["authentication.k8s.io/v1"] = Field(alias="apiVersion")
    kind: Literal["TokenReview"]
    spec: TokenReviewSpec


def review_answer(status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": REVIEW_API_VERSION, "kind": REVIEW_KIND, "status": status}
