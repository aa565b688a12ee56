"""A loopback fake of the Kubernetes API server, written from the API conventions
(https://kubernetes.io/docs/reference/using-api/api-concepts/), generic over the kinds the
orchestrator and the secret sync use.

What it implements, with the API server's semantics:
- discovery: ``/api``, ``/apis``, ``/api/v1`` and ``/apis/<group>/<version>`` resource lists,
  ``/version`` (enough for kubectl);
- per kind: list (in a namespace or across all, ``labelSelector`` with equality, inequality,
  set-based and existence requirements), get, create (``AlreadyExists``; a namespaced object in
  a missing namespace is ``NotFound``), replace (409 ``Conflict`` when ``resourceVersion`` is
  stale), merge patch (strategic merge patch is applied as a merge patch: the kinds used have
  no merge-keyed lists in the fields written), server-side apply
  (``application/apply-patch+yaml`` with ``fieldManager``: fields owned per manager, fields a
  manager stops applying are removed, a conflict with another manager is 409 unless
  ``force``), delete (finalizers hold an object with ``deletionTimestamp`` until removed;
  deleting a namespace deletes what is in it), delete of a collection by label selector;
- the ``status`` subresource: the main resource ignores ``status`` and only the subresource
  writes it; ``metadata.generation`` moves when anything but metadata and status changes;
- errors as ``Status`` objects (``NotFound``, ``AlreadyExists``, ``Conflict``, ``BadRequest``,
  ``TooManyRequests`` with ``Retry-After``, ``InternalError``);
- faults on command: the next requests answered 429 or 500, or held longer than a client's
  timeout.

Served by uvicorn with the h11 parser in a thread. ``FakeFluxVCluster`` below plays the
controllers of a host cluster: Flux's helm-controller installing the vCluster chart, the
chart's control-plane Deployment and etcd StatefulSet and their pods becoming ready, vCluster
writing its kubeconfig Secret, and External Secrets reporting on ExternalSecrets. Its shapes
are those the real components showed on the test bed (tests/kubernetes): the fake stays for
the faults and the step-by-step pacing the real ones cannot give on demand.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import re
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tenantplane.providers.orchestrator.certificates import new_cluster_ca
from tests.fakes.server import serving_asgi

Object = dict[str, Any]
Path = tuple[str, ...]


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status: bool  # has the status subresource
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        return f"{self.group}/{self.plural}"


KINDS = [
    Kind("", "v1", "Namespace", "namespaces", False, True, ("ns",)),
    Kind("", "v1", "ResourceQuota", "resourcequotas", True, True, ("quota",)),
    Kind("", "v1", "LimitRange", "limitranges", True, False, ("limits",)),
    Kind("", "v1", "Secret", "secrets", True, False),
    Kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, True, ("pvc",)),
    Kind("apps", "v1", "StatefulSet", "statefulsets", True, True, ("sts",)),
    Kind("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, False, ("netpol",)),
    # What deploy/ holds (tenantplane itself on Kubernetes), for kubectl's dry runs.
    Kind("", "v1", "ConfigMap", "configmaps", True, False, ("cm",)),
    Kind("", "v1", "Service", "services", True, True, ("svc",)),
    Kind("", "v1", "ServiceAccount", "serviceaccounts", True, False, ("sa",)),
    Kind("apps", "v1", "Deployment", "deployments", True, True, ("deploy",)),
    Kind("batch", "v1", "Job", "jobs", True, True),
    Kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, True, ("pdb",)),
    Kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, False),
    Kind(
        "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, False
    ),
    Kind("source.toolkit.fluxcd.io", "v1", "HelmRepository", "helmrepositories", True, True),
    Kind("helm.toolkit.fluxcd.io", "v2", "HelmRelease", "helmreleases", True, True, ("hr",)),
    Kind(
        "external-secrets.io",
        "v1",
        "ClusterSecretStore",
        "clustersecretstores",
        False,
        True,
        ("css",),
    ),
    Kind("external-secrets.io", "v1", "ExternalSecret", "externalsecrets", True, True, ("es",)),
]
NAMESPACE = KINDS[0]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: Object | None = None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def response(self) -> JSONResponse:
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        }
        headers = {"Retry-After": "1"} if self.code == 429 else None
        return JSONResponse(body, status_code=self.code, headers=headers)


def not_found(kind: Kind, name: str) -> ApiError:
    what = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
    details = {"name": name, "group": kind.group, "kind": kind.plural}
    return ApiError(404, "NotFound", f'{what} "{name}" not found', details)


# -- label selectors ------------------------------------------------------------------------

_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9_.-]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?\s*$"
)


def parse_selector(selector: str) -> list[tuple[str, str, set[str]]]:
    """Requirements as (key, operator, values); 400 for a malformed selector."""
    parts = re.split(r",(?![^(]*\))", selector) if selector.strip() else []
    requirements: list[tuple[str, str, set[str]]] = []
    for part in parts:
        match = _REQUIREMENT.match(part)
        if match is None:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
        key = match["key"]
        if match["neg"]:
            requirements.append((key, "!exists", set()))
        elif match["op"]:
            operator = "!=" if match["op"] == "!=" else "="
            requirements.append((key, operator, {match["value"]}))
        elif match["setop"]:
            values = {value.strip() for value in match["values"].split(",") if value.strip()}
            requirements.append((key, match["setop"], values))
        else:
            requirements.append((key, "exists", set()))
    return requirements


def selected(labels: dict[str, str], requirements: list[tuple[str, str, set[str]]]) -> bool:
    for key, operator, values in requirements:
        present = key in labels
        if operator == "exists" and not present:
            return False
        if operator == "!exists" and present:
            return False
        if operator in ("=", "in") and labels.get(key) not in values:
            return False
        if operator in ("!=", "notin") and present and labels[key] in values:
            return False
    return True


# -- field ownership for server-side apply ----------------------------------------------------


def leaves(document: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Every field path to a scalar or a list (lists are atomic here), with its value."""
    if isinstance(document, dict) and document:
        found: dict[Path, Any] = {}
        for key, value in document.items():
            found.update(leaves(value, (*prefix, key)))
        return found
    return {prefix: document}


def applied_paths(config: Object) -> dict[Path, Any]:
    paths = leaves({k: v for k, v in config.items() if k not in ("apiVersion", "kind")})
    identity = {("metadata", "name"), ("metadata", "namespace"), ("metadata", "resourceVersion")}
    return {path: value for path, value in paths.items() if path not in identity}


def remove_path(document: Object, path: Path) -> None:
    parents = []
    node: Any = document
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return
        parents.append((node, key))
        node = node[key]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    for parent, key in reversed(parents):  # drop maps left empty
        if parent[key] == {}:
            del parent[key]


def merge(target: Object, patch: Object) -> Object:
    """RFC 7386 JSON merge patch."""
    result = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def fields_v1(paths: set[Path]) -> Object:
    tree: Object = {}
    for path in sorted(paths):
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


@dataclass
class Stored:
    kind: Kind
    body: Object
    owners: dict[str, set[Path]] = field(default_factory=dict)  # apply managers' fields


class FakeKubernetes:
    """The API server's state and behaviour; thread-safe (served from uvicorn's thread,
    driven by the test controller from the test's thread)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.objects: dict[tuple[str, str, str], Stored] = {}
        self.revision = 0
        self.faults: deque[tuple[str, float]] = deque()
        self.requests: list[tuple[str, str]] = []
        self.server: uvicorn.Server | None = None
        self.kinds = {kind.key: kind for kind in KINDS}
        self.app = Starlette(
            routes=[
                Route(
                    "/{path:path}",
                    self._handle,
                    methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                )
            ]
        )

    # -- faults ------------------------------------------------------------------------------

    def fail_next(self, status: int, times: int) -> None:
        """The next ``times`` requests are answered ``status`` (429, 409 or 5xx), doing nothing."""
        with self.lock:
            self.faults.extend([("status", float(status))] * times)

    def stall_next(self, seconds: float, times: int) -> None:
        """The next ``times`` requests are held ``seconds`` before they are carried out."""
        with self.lock:
            self.faults.extend([("stall", seconds)] * times)

    @property
    def faults_left(self) -> int:
        with self.lock:
            return len(self.faults)

    # -- direct access (the controllers and the tests) ---------------------------------------

    def kind_of(self, kind_name: str) -> Kind:
        return next(kind for kind in KINDS if kind.kind == kind_name)

    def get(self, kind_name: str, name: str, namespace: str = "") -> Object | None:
        with self.lock:
            kind = self.kind_of(kind_name)
            stored = self.objects.get((kind.key, namespace, name))
            return copy.deepcopy(stored.body) if stored is not None else None

    def list(self, kind_name: str, namespace: str | None = None) -> list[Object]:
        with self.lock:
            kind = self.kind_of(kind_name)
            return [
                copy.deepcopy(stored.body)
                for (key, ns, _), stored in sorted(self.objects.items())
                if key == kind.key and (namespace is None or ns == namespace)
            ]

    def put(self, body: Object) -> Object:
        """Create or replace as a controller would (status included), no checks."""
        with self.lock:
            kind = self._kind_of_body(body)
            metadata = body["metadata"]
            key = (kind.key, metadata.get("namespace", ""), metadata["name"])
            stored = self.objects.get(key)
            if stored is None:
                return self._insert(kind, body, keep_status=True)
            updated = copy.deepcopy(body)
            self._bump(stored, updated)
            return copy.deepcopy(stored.body)

    def write_status(self, kind_name: str, name: str, namespace: str, status: Object) -> None:
        with self.lock:
            kind = self.kind_of(kind_name)
            stored = self.objects[(kind.key, namespace, name)]
            updated = copy.deepcopy(stored.body)
            updated["status"] = status
            self._bump(stored, updated)

    def remove(self, kind_name: str, name: str, namespace: str = "") -> None:
        with self.lock:
            kind = self.kind_of(kind_name)
            self._delete(kind, namespace, name)

    # -- storage -----------------------------------------------------------------------------

    def _next_revision(self) -> str:
        self.revision += 1
        return str(self.revision)

    def _kind_of_body(self, body: Object) -> Kind:
        for kind in KINDS:
            if kind.api_version == body.get("apiVersion") and kind.kind == body.get("kind"):
                return kind
        raise ApiError(400, "BadRequest", f"no kind {body.get('kind')} in {body.get('apiVersion')}")

    def _insert(self, kind: Kind, body: Object, *, keep_status: bool = False) -> Object:
        stored_body = copy.deepcopy(body)
        stored_body["apiVersion"], stored_body["kind"] = kind.api_version, kind.kind
        metadata = stored_body.setdefault("metadata", {})
        metadata.update(
            uid=str(uuid.uuid4()),
            resourceVersion=self._next_revision(),
            creationTimestamp=now_rfc3339(),
            generation=1,
        )
        if not kind.namespaced:
            metadata.pop("namespace", None)
        _normalise(stored_body)
        if kind.status and not keep_status:
            stored_body.pop("status", None)
        if kind is NAMESPACE:
            stored_body["status"] = {"phase": "Active"}
        stored = Stored(kind, stored_body)
        self.objects[(kind.key, metadata.get("namespace", ""), metadata["name"])] = stored
        return copy.deepcopy(stored_body)

    def _bump(self, stored: Stored, updated: Object) -> None:
        """Store ``updated`` as the next revision of ``stored``; a spec change is a new
        generation, and an object being deleted goes once its last finalizer is removed."""

        def spec_of(body: Object) -> Object:
            return {k: v for k, v in body.items() if k not in ("metadata", "status")}

        _normalise(updated)
        metadata = updated["metadata"]
        old = stored.body["metadata"]
        for immutable in ("uid", "creationTimestamp", "deletionTimestamp"):
            if immutable in old:
                metadata[immutable] = old[immutable]
        metadata["generation"] = old.get("generation", 1) + (
            spec_of(updated) != spec_of(stored.body)
        )
        metadata.pop("managedFields", None)  # kept apart, in ``owners``
        metadata["resourceVersion"] = old["resourceVersion"]
        if updated == stored.body:
            return  # nothing changed: the resourceVersion stays
        metadata["resourceVersion"] = self._next_revision()
        stored.body = updated
        if "deletionTimestamp" in metadata and not metadata.get("finalizers"):
            self._delete(stored.kind, metadata.get("namespace", ""), metadata["name"])

    def _delete(self, kind: Kind, namespace: str, name: str) -> Object:
        stored = self.objects.get((kind.key, namespace, name))
        if stored is None:
            raise not_found(kind, name)
        if stored.body["metadata"].get("finalizers"):
            if "deletionTimestamp" not in stored.body["metadata"]:
                stored.body["metadata"]["deletionTimestamp"] = now_rfc3339()
                stored.body["metadata"]["resourceVersion"] = self._next_revision()
            return copy.deepcopy(stored.body)
        if kind is NAMESPACE:
            # Terminating until the namespace controller has emptied it (finalize_namespaces).
            metadata = stored.body["metadata"]
            if "deletionTimestamp" not in metadata:
                metadata["deletionTimestamp"] = now_rfc3339()
                metadata["resourceVersion"] = self._next_revision()
                stored.body["status"] = {"phase": "Terminating"}
            return copy.deepcopy(stored.body)
        del self.objects[(kind.key, namespace, name)]
        return copy.deepcopy(stored.body)

    def finalize_namespaces(self) -> None:
        """The namespace controller: delete what terminating namespaces hold, then them."""
        with self.lock:
            for (key, _, name), stored in list(self.objects.items()):
                if key != NAMESPACE.key or "deletionTimestamp" not in stored.body["metadata"]:
                    continue
                for inner in [k for k in self.objects if k[1] == name and k[0] != NAMESPACE.key]:
                    held = self.objects[inner]
                    self._delete(held.kind, inner[1], inner[2])
                if not any(k[1] == name and k[0] != NAMESPACE.key for k in self.objects):
                    del self.objects[(key, "", name)]

    def _require(self, kind: Kind, namespace: str, name: str) -> Stored:
        stored = self.objects.get((kind.key, namespace, name))
        if stored is None:
            raise not_found(kind, name)
        return stored

    def _check_namespace(self, kind: Kind, namespace: str) -> None:
        if not kind.namespaced:
            return
        stored = self.objects.get((NAMESPACE.key, "", namespace))
        if stored is None:
            raise not_found(NAMESPACE, namespace)
        if "deletionTimestamp" in stored.body["metadata"]:
            raise ApiError(
                403,
                "Forbidden",
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
            )

    # -- HTTP --------------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        with self.lock:
            self.requests.append((request.method, path))
            fault = self.faults.popleft() if self.faults else None
        if fault is not None and fault[0] == "stall":
            await asyncio.sleep(fault[1])
        elif fault is not None:
            code = int(fault[1])
            reason = {429: "TooManyRequests", 409: "Conflict"}.get(code, "InternalError")
            return ApiError(code, reason, f"fault injected: {code}").response()
        body = await request.body()
        try:
            with self.lock:
                return self._dispatch(request, path, body)
        except ApiError as error:
            return error.response()

    def _dispatch(self, request: Request, path: str, body: bytes) -> Response:
        if path == "/version":
            return JSONResponse({"major": "1", "minor": "33", "gitVersion": "v1.33.5"})
        if path == "/api":
            return JSONResponse({"kind": "APIVersions", "versions": ["v1"]})
        if path == "/apis":
            return JSONResponse(self._groups())
        segments = [segment for segment in path.split("/") if segment]
        if segments[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", segments[2:]
        elif segments[:1] == ["apis"] and len(segments) >= 3:
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            return JSONResponse(self._resources(group, version))
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] != "status":
            namespace, rest = rest[1], rest[2:]
        kind = self.kinds.get(f"{group}/{rest[0]}")
        if kind is None or kind.version != version:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if subresource and (subresource != "status" or not kind.status):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        query = request.query_params
        if not name:
            return self._collection(request.method, kind, namespace, query, body)
        return self._item(request, kind, namespace, name, subresource, body)

    def _groups(self) -> Object:
        groups: dict[str, list[str]] = {}
        for kind in KINDS:
            if kind.group:
                versions = groups.setdefault(kind.group, [])
                if kind.version not in versions:
                    versions.append(kind.version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": group,
                    "versions": [
                        {"groupVersion": f"{group}/{version}", "version": version}
                        for version in versions
                    ],
                    "preferredVersion": {
                        "groupVersion": f"{group}/{versions[0]}",
                        "version": versions[0],
                    },
                }
                for group, versions in groups.items()
            ],
        }

    def _resources(self, group: str, version: str) -> Object:
        kinds = [kind for kind in KINDS if kind.group == group and kind.version == version]
        if not kinds:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update"]
        resources: list[Object] = []
        for kind in kinds:
            resources.append(
                {
                    "name": kind.plural,
                    "singularName": kind.kind.lower(),
                    "namespaced": kind.namespaced,
                    "kind": kind.kind,
                    "verbs": verbs,
                    "shortNames": list(kind.short_names),
                }
            )
            if kind.status:
                resources.append(
                    {
                        "name": f"{kind.plural}/status",
                        "singularName": "",
                        "namespaced": kind.namespaced,
                        "kind": kind.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def _collection(
        self, method: str, kind: Kind, namespace: str, query: Any, body: bytes
    ) -> Response:
        if method == "POST":
            return self._create(kind, namespace, _json(body))
        requirements = parse_selector(query.get("labelSelector", ""))
        matching = [
            stored
            for (key, ns, _), stored in sorted(self.objects.items())
            if key == kind.key
            and (not namespace or ns == namespace)
            and selected(stored.body["metadata"].get("labels") or {}, requirements)
        ]
        if method == "DELETE":
            for stored in matching:
                metadata = stored.body["metadata"]
                self._delete(kind, metadata.get("namespace", ""), metadata["name"])
        elif method != "GET":
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on a collection")
        return JSONResponse(
            {
                "kind": f"{kind.kind}List",
                "apiVersion": kind.api_version,
                "metadata": {"resourceVersion": str(self.revision)},
                "items": [self._render(stored) for stored in matching],
            }
        )

    def _create(self, kind: Kind, namespace: str, body: Object) -> Response:
        metadata = body.get("metadata") or {}
        name = metadata.get("name")
        if not name:
            raise ApiError(400, "BadRequest", "metadata.name: Required value")
        if body.get("kind") != kind.kind or body.get("apiVersion") != kind.api_version:
            raise ApiError(400, "BadRequest", f"the body is not a {kind.kind}")
        if metadata.get("namespace", namespace) != namespace:
            raise ApiError(400, "BadRequest", "the namespace of the object does not match")
        self._check_namespace(kind, namespace)
        if (kind.key, namespace, name) in self.objects:
            what = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
            details = {"name": name, "group": kind.group, "kind": kind.plural}
            raise ApiError(409, "AlreadyExists", f'{what} "{name}" already exists', details)
        if kind.namespaced:
            body = {**body, "metadata": {**metadata, "namespace": namespace}}
        self._insert(kind, body)
        return JSONResponse(self._render(self.objects[(kind.key, namespace, name)]), 201)

    def _item(
        self,
        request: Request,
        kind: Kind,
        namespace: str,
        name: str,
        subresource: str,
        body: bytes,
    ) -> Response:
        method = request.method
        if method == "GET":
            return JSONResponse(self._render(self._require(kind, namespace, name)))
        if method == "DELETE":
            self._delete(kind, namespace, name)
            return JSONResponse(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {"name": name, "group": kind.group, "kind": kind.plural},
                }
            )
        content_type = request.headers.get("content-type", "").split(";")[0]
        if method == "PATCH" and content_type == "application/apply-patch+yaml":
            config = yaml.safe_load(body.decode() or "{}")
            if not isinstance(config, dict):
                raise ApiError(400, "BadRequest", "the applied configuration is not an object")
            manager = request.query_params.get("fieldManager")
            if not manager:
                raise ApiError(400, "BadRequest", "fieldManager is required for apply")
            force = request.query_params.get("force") == "true"
            return self._apply(kind, namespace, name, subresource, config, manager, force)
        stored = self._require(kind, namespace, name)
        if method == "PUT":
            updated = _json(body)
        elif method == "PATCH" and content_type in (
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
        ):
            updated = merge(stored.body, _json(body))
        else:
            raise ApiError(415, "UnsupportedMediaType", f"{content_type} is not supported")
        given = (updated.get("metadata") or {}).get("resourceVersion")
        if given and given != stored.body["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {kind.plural} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                {"name": name, "group": kind.group, "kind": kind.plural},
            )
        if (updated.get("metadata") or {}).get("name", name) != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match")
        self._update(stored, updated, subresource)
        return JSONResponse(self._render(stored))

    def _update(self, stored: Stored, updated: Object, subresource: str) -> None:
        kind = stored.kind
        if kind.status:
            # The status subresource writes only status; the main resource never does.
            if subresource == "status":
                updated = {**stored.body, "status": updated.get("status")}
            else:
                updated = {**updated, "status": stored.body.get("status")}
                if updated["status"] is None:
                    updated.pop("status")
        updated = {**updated, "apiVersion": kind.api_version, "kind": kind.kind}
        updated["metadata"] = {
            **updated.get("metadata", {}),
            "name": stored.body["metadata"]["name"],
        }
        if kind.namespaced:
            updated["metadata"]["namespace"] = stored.body["metadata"]["namespace"]
        self._bump(stored, copy.deepcopy(updated))

    def _apply(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        subresource: str,
        config: Object,
        manager: str,
        force: bool,
    ) -> Response:
        if config.get("kind") != kind.kind or config.get("apiVersion") != kind.api_version:
            raise ApiError(400, "BadRequest", f"the applied configuration is not a {kind.kind}")
        if (config.get("metadata") or {}).get("name") != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match")
        section = "status" if subresource == "status" else None
        paths = applied_paths(config)
        if kind.status:
            paths = {
                path: value
                for path, value in paths.items()
                if (path[0] == "status") == (section == "status")
            }
        stored = self.objects.get((kind.key, namespace, name))
        if stored is None:
            if subresource:
                raise not_found(kind, name)
            self._check_namespace(kind, namespace)
            scope = {"namespace": namespace} if kind.namespaced else {}
            self._insert(kind, {**config, "metadata": {**config["metadata"], **scope}})
            stored = self.objects[(kind.key, namespace, name)]
            stored.owners[manager] = set(paths)
            return JSONResponse(self._render(stored), 201)
        current = leaves(stored.body)
        conflicts = sorted(
            (other, path)
            for other, owned in stored.owners.items()
            if other != manager
            for path in owned
            if path in paths and current.get(path) != paths[path]
        )
        if conflicts and not force:
            listed = "; ".join(f'conflict with "{other}": .{".".join(p)}' for other, p in conflicts)
            raise ApiError(
                409,
                "Conflict",
                f"Apply failed with {len(conflicts)} conflict(s): {listed}",
                {"name": name, "group": kind.group, "kind": kind.plural},
            )
        updated = copy.deepcopy(stored.body)
        previously = stored.owners.get(manager, set())
        others = set().union(*(owned for other, owned in stored.owners.items() if other != manager))
        for path in previously - set(paths) - others:
            remove_path(updated, path)
        patch: Object = {}
        for path, value in paths.items():
            node = patch
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = copy.deepcopy(value)
        for path, value in paths.items():
            if value is None or value == {}:
                remove_path(updated, path)
        updated = _deep_set(updated, patch)
        for other, owned in stored.owners.items():
            if other != manager:
                owned.difference_update(paths)
        stored.owners[manager] = set(paths)
        self._bump(stored, updated)
        return JSONResponse(self._render(stored))

    def _render(self, stored: Stored) -> Object:
        body = copy.deepcopy(stored.body)
        managed = [
            {
                "manager": manager,
                "operation": "Apply",
                "apiVersion": stored.kind.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_v1(paths),
            }
            for manager, paths in sorted(stored.owners.items())
            if paths
        ]
        if managed:
            body["metadata"]["managedFields"] = managed
        return body


def _normalise(body: Object) -> None:
    """A Secret's ``stringData`` is write-only: stored base64-encoded in ``data``."""
    if body.get("kind") == "Secret" and "stringData" in body:
        encoded = {key: b64(str(value)) for key, value in body.pop("stringData").items()}
        body["data"] = {**(body.get("data") or {}), **encoded}


def _deep_set(target: Object, patch: Object) -> Object:
    result = copy.deepcopy(target)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict) and value:
            result[key] = _deep_set(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _json(body: bytes) -> Object:
    try:
        document = json.loads(body or b"{}")
    except ValueError as exc:
        raise ApiError(400, "BadRequest", f"the body is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ApiError(400, "BadRequest", "the body is not an object")
    return document


@contextmanager
def serve(fake: FakeKubernetes) -> Iterator[str]:
    """Serve ``fake`` on a loopback port in a thread; yields its address."""
    with serving_asgi(fake.app, "Kubernetes API server") as (address, server):
        fake.server = server
        yield address


def kubeconfig(address: str, context: str = "fake", namespace: str = "default") -> Object:
    """A kubeconfig for the fake (plain HTTP on loopback, a bearer token it does not check)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": address}}],
        "users": [{"name": context, "user": {"token": "fake-token"}}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": context, "user": context, "namespace": namespace},
            }
        ],
        "current-context": context,
    }


def kubeconfig_yaml(address: str, context: str = "fake") -> str:
    return yaml.safe_dump(kubeconfig(address, context))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# -- the host cluster's controllers -------------------------------------------------------------

FLUX_FINALIZER = "finalizers.fluxcd.io"
RESET_AT = "reconcile.fluxcd.io/resetAt"


def _condition(kind: str, status: str, reason: str, message: str) -> Object:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now_rfc3339(),
    }


def _dig(document: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(document, dict) or key not in document:
            return default
        document = document[key]
    return document


class FakeFluxVCluster:
    """Plays Flux's helm-controller, the vCluster chart's workloads (the control plane a
    Deployment ``<release>``, etcd a StatefulSet ``<release>-etcd``) and their pods, vCluster
    itself (its kubeconfig Secret ``vc-<release>``) and External Secrets, one step per
    ``step()``: a release's new values are installed in one step, then one pod becomes ready
    (or is replaced, during a rolling update) per step and release, in the order the chart's
    pods come up: etcd to quorum, the first control-plane replica, then the rest alternately.

    As helm-controller does (internal/reconcile/atomic_release.go): a failed install or
    upgrade leaves ``observedGeneration`` where it was and is retried up to the release's
    remediation ``retries``; then the release is ``Stalled`` (``RetriesExceeded``) and waits
    for a new generation or a reset request. The workloads' rollout bookkeeping
    (``currentRevision``/``updateRevision``) is kept in their status for both kinds; the
    adapter reads a Deployment's ``replicas`` against its ``updatedReplicas``.
    """

    def __init__(self, api: FakeKubernetes) -> None:
        self.api = api
        self.failing: dict[tuple[str, str], str] = {}
        self.held: dict[tuple[str, str], int] = {}  # unready pods per StatefulSet
        self.external_secrets: dict[tuple[str, str], tuple[bool, str]] = {}
        self.source_down: set[tuple[str, str]] = set()
        # A real self-signed CA, as vCluster generates one (clients load it).
        self.ca_pem = base64.b64decode(new_cluster_ca("vcluster-ca", datetime.now(UTC))).decode()

    # -- commands ----------------------------------------------------------------------------

    def fail(self, namespace: str, release: str, message: str) -> None:
        """The next install or upgrade of ``release`` fails with ``message``."""
        self.failing[(namespace, release)] = message

    def heal(self, namespace: str, release: str) -> None:
        """The cause of the failures is gone (a stalled release still waits for a reset)."""
        self.failing.pop((namespace, release), None)

    def lose_source(self, namespace: str, release: str) -> None:
        """The chart's source becomes unavailable (``Ready=False``, ``SourceNotReady``)."""
        self.source_down.add((namespace, release))

    def restore_source(self, namespace: str, release: str) -> None:
        self.source_down.discard((namespace, release))

    def degrade(self, namespace: str, workload: str, count: int) -> None:
        """``count`` pods of ``workload`` become unready until ``recover``."""
        kind, found = self._workload(namespace, workload)
        status = dict(found["status"])
        down = min(count, status.get("readyReplicas", 0))
        self.held[(namespace, workload)] = self.held.get((namespace, workload), 0) + down
        status["readyReplicas"] = status.get("readyReplicas", 0) - down
        self.api.write_status(kind, workload, namespace, status)

    def recover(self, namespace: str, workload: str) -> None:
        """The unready pods restart: ready again one per step."""
        self.held.pop((namespace, workload), None)

    def _workload(self, namespace: str, name: str) -> tuple[str, Object]:
        for kind in ("Deployment", "StatefulSet"):
            found = self.api.get(kind, name, namespace)
            if found is not None:
                return kind, found
        raise AssertionError(f"no workload {name} in {namespace}")

    def set_external_secret(self, namespace: str, name: str, ready: bool, message: str) -> None:
        """What External Secrets reports for an ExternalSecret from now on."""
        self.external_secrets[(namespace, name)] = (ready, message)

    # -- one step of every controller --------------------------------------------------------

    def step(self) -> None:
        with self.api.lock:
            for release in self.api.list("HelmRelease"):
                self._release(release)
            for external in self.api.list("ExternalSecret"):
                self._external_secret(external)
            self.api.finalize_namespaces()

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    def _release(self, release: Object) -> None:
        metadata = release["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        if "deletionTimestamp" in metadata:
            self._uninstall(namespace, name, release)
            return
        if FLUX_FINALIZER not in (metadata.get("finalizers") or []):
            metadata["finalizers"] = [*(metadata.get("finalizers") or []), FLUX_FINALIZER]
            release = self.api.put(release)
        generation = release["metadata"]["generation"]
        status = dict(release.get("status") or {})
        history = list(status.get("history") or [])
        installed = any(snapshot["status"] in ("deployed", "superseded") for snapshot in history)
        action = "upgrade" if installed else "install"
        reset = (metadata.get("annotations") or {}).get(RESET_AT)
        if reset is not None and reset != status.get("lastHandledResetAt"):
            # A reset request: the failure counts start again, the release is tried again.
            status.update(lastHandledResetAt=reset, installFailures=0, upgradeFailures=0)
            status["conditions"] = [
                c for c in status.get("conditions") or [] if c["type"] != "Stalled"
            ]
            status.pop("lastAttemptedGeneration", None)
        if _stalled(status) and status.get("lastAttemptedGeneration") == generation:
            self.api.write_status("HelmRelease", name, namespace, status)
            return  # waits for a new generation or a reset
        if (namespace, name) in self.source_down:
            # helm-controller: no artifact, no action; observedGeneration stays.
            status["conditions"] = [
                _condition("Ready", "False", "SourceNotReady", "HelmChart 'vcluster' is not ready"),
                *[c for c in status.get("conditions") or [] if c["type"] != "Ready"],
            ]
            self.api.write_status("HelmRelease", name, namespace, status)
            return
        failure = self.failing.get((namespace, name))
        retrying = _ready_reason(status).endswith("Failed") and not _stalled(status)
        if status.get("lastAttemptedGeneration") != generation or retrying:
            if status.get("lastAttemptedGeneration") != generation:
                status.update(installFailures=0, upgradeFailures=0)
            status["lastAttemptedGeneration"] = generation
            if failure is not None:
                self._failed_attempt(release, status, action, failure)
                return
            self._install(namespace, name, release)
            status["conditions"] = [
                _condition("Ready", "Unknown", "Progressing", f"Running '{action}' action"),
                _condition("Released", "True", f"{action.title()}Succeeded", "Helm applied"),
            ]
            self.api.write_status("HelmRelease", name, namespace, status)
            return
        self._pods(namespace, *self._workloads(namespace, name))
        control_plane, etcd = self._workloads(namespace, name)
        if control_plane["status"].get("readyReplicas", 0) >= 1:
            self._kubeconfig_secret(namespace, name, release)
        rolled_out = _rolled_out(control_plane) and _rolled_out(etcd)
        ready = _dig(status, "conditions", default=[{}])[0].get("status") == "True"
        if rolled_out and (status.get("observedGeneration") != generation or not ready):
            status["observedGeneration"] = generation
            status["history"] = [
                self._snapshot(release, "deployed", len(history) + 1),
                *[
                    {**old, "status": "superseded"} if old["status"] == "deployed" else old
                    for old in history
                ],
            ][:5]
            reason = f"{action.title()}Succeeded"
            status["conditions"] = [
                _condition("Ready", "True", reason, f"Helm {action} succeeded"),
                _condition("Released", "True", reason, f"Helm {action} succeeded"),
            ]
            self.api.write_status("HelmRelease", name, namespace, status)

    def _failed_attempt(self, release: Object, status: Object, action: str, failure: str) -> None:
        """One failed attempt: counted; past the remediation retries, the release stalls."""
        metadata = release["metadata"]
        counter = f"{action}Failures"
        status[counter] = int(status.get(counter) or 0) + 1
        history = list(status.get("history") or [])
        status["history"] = [self._snapshot(release, "failed", len(history) + 1), *history][:5]
        reason = f"{action.title()}Failed"
        message = f"Helm {action} failed for release {metadata['namespace']}/{metadata['name']}"
        status["conditions"] = [
            _condition("Ready", "False", reason, f"{message}: {failure}"),
            _condition("Released", "False", reason, f"{message}: {failure}"),
        ]
        retries = _dig(release, "spec", action, "remediation", "retries", default=0)
        if status[counter] > retries:
            status["observedGeneration"] = metadata["generation"]
            status["conditions"].append(
                _condition(
                    "Stalled",
                    "True",
                    "RetriesExceeded",
                    f"Failed to {action} after {status[counter]} attempt(s)",
                )
            )
        self.api.write_status("HelmRelease", metadata["name"], metadata["namespace"], status)

    @staticmethod
    def _snapshot(release: Object, outcome: str, version: int) -> Object:
        return {
            "chartName": _dig(release, "spec", "chart", "spec", "chart"),
            "chartVersion": _dig(release, "spec", "chart", "spec", "version"),
            "status": outcome,
            "version": version,
        }

    def _workloads(self, namespace: str, name: str) -> tuple[Object, Object]:
        control_plane = self.api.get("Deployment", name, namespace)
        etcd = self.api.get("StatefulSet", f"{name}-etcd", namespace)
        assert control_plane is not None, name
        assert etcd is not None, name
        return control_plane, etcd

    def _install(self, namespace: str, name: str, release: Object) -> None:
        values = _dig(release, "spec", "values", default={})
        plane = _dig(values, "controlPlane", default={})
        tag = _dig(plane, "distro", "k8s", "image", "tag", default="v0.0.0")
        etcd_set = _dig(plane, "backingStore", "etcd", "deploy", "statefulSet", default={})
        workloads = {
            name: (
                "Deployment",
                "vcluster",
                _dig(plane, "statefulSet", "highAvailability", "replicas", default=1),
                {
                    "image": f"ghcr.io/loft-sh/kubernetes:{tag}",
                    "resources": _dig(plane, "statefulSet", "resources", default={}),
                },
            ),
            f"{name}-etcd": (
                "StatefulSet",
                "vcluster-etcd",
                _dig(etcd_set, "highAvailability", "replicas", default=1),
                {"image": "registry.k8s.io/etcd:3.6.4-0"},
            ),
        }
        for workload, (kind, app, count, container) in workloads.items():
            labels = {"app": app, "release": name}
            template = {"spec": {"containers": [{"name": "syncer", **container}]}}
            digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
            revision = f"{workload}-{digest[:10]}"
            existing = self.api.get(kind, workload, namespace)
            status = dict((existing or {}).get("status") or {})
            spec: Object = {
                "replicas": count,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, **template},
            }
            if kind == "StatefulSet":
                spec["serviceName"] = f"{workload}-headless"
            stored = self.api.put(
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "metadata": {"name": workload, "namespace": namespace, "labels": labels},
                    "spec": spec,
                    "status": status,
                }
            )
            first = not status
            status.update(
                replicas=count,
                readyReplicas=min(status.get("readyReplicas", 0), count),
                updateRevision=revision,
                observedGeneration=stored["metadata"]["generation"],
            )
            if first or status.get("currentRevision") == revision:
                status.update(currentRevision=revision, updatedReplicas=count)
            else:
                status["updatedReplicas"] = 0
            self.api.write_status(kind, workload, namespace, status)
            if kind == "StatefulSet":
                # volumeClaimTemplates: the claims carry the set's selector labels.
                for ordinal in range(count):
                    self._claim(namespace, f"data-{workload}-{ordinal}", labels)

    def _claim(self, namespace: str, claim: str, labels: dict[str, str]) -> None:
        if self.api.get("PersistentVolumeClaim", claim, namespace) is None:
            self.api.put(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "namespace": namespace, "labels": labels},
                    "spec": {"accessModes": ["ReadWriteOnce"]},
                    "status": {"phase": "Bound"},
                }
            )

    def _pods(self, namespace: str, control_plane: Object, etcd: Object) -> None:
        """One pod changes per step and release."""
        cp, et = control_plane["status"], etcd["status"]
        cp_name, etcd_name = control_plane["metadata"]["name"], etcd["metadata"]["name"]

        def room(sts: Object) -> int:
            held = self.held.get((namespace, sts["metadata"]["name"]), 0)
            status = sts["status"]
            return int(status["replicas"]) - held - int(status.get("readyReplicas", 0))

        for kind, status, workload in (
            ("Deployment", cp, cp_name),
            ("StatefulSet", et, etcd_name),
        ):
            if status.get("currentRevision") != status.get("updateRevision"):
                self._roll(namespace, kind, workload, status)
                return
        quorum = et["replicas"] // 2 + 1
        et_ready, cp_ready = et.get("readyReplicas", 0), cp.get("readyReplicas", 0)
        if et_ready < quorum and room(etcd) > 0:
            target = etcd_name
        elif cp_ready < 1 and room(control_plane) > 0:
            target = cp_name
        elif room(etcd) > 0 and et_ready <= cp_ready:
            target = etcd_name
        elif room(control_plane) > 0:
            target = cp_name
        elif room(etcd) > 0:
            target = etcd_name
        else:
            return
        status = et if target == etcd_name else cp
        self.api.write_status(
            "StatefulSet" if target == etcd_name else "Deployment",
            target,
            namespace,
            {**status, "readyReplicas": status.get("readyReplicas", 0) + 1},
        )

    def _roll(self, namespace: str, kind: str, sts_name: str, status: Object) -> None:
        """RollingUpdate: the highest old pod goes down, then comes back updated and ready."""
        status = dict(status)
        if (
            status.get("readyReplicas", 0) + self.held.get((namespace, sts_name), 0)
            == status["replicas"]
        ):
            status["readyReplicas"] -= 1
        else:
            status["readyReplicas"] += 1
            status["updatedReplicas"] = status.get("updatedReplicas", 0) + 1
            if status["updatedReplicas"] >= status["replicas"]:
                status["currentRevision"] = status["updateRevision"]
        self.api.write_status(kind, sts_name, namespace, status)

    def _kubeconfig_secret(self, namespace: str, name: str, release: Object) -> None:
        """As vCluster writes it (pkg/util/kubeconfig/kubeconfig.go): the server is
        ``exportKubeConfig.server``, else https://localhost:8443; labelled with its name."""
        secret_name = f"vc-{name}"
        server = _dig(release, "spec", "values", "exportKubeConfig", "server", default="")
        if self.api.get("Secret", secret_name, namespace) is not None:
            return
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "my-vcluster",
                    "cluster": {
                        "server": server or "https://localhost:8443",
                        "certificate-authority-data": b64(self.ca_pem),
                    },
                }
            ],
            "users": [{"name": "my-vcluster", "user": {"token": "vcluster-admin"}}],
            "contexts": [
                {
                    "name": "my-vcluster",
                    "context": {"cluster": "my-vcluster", "user": "my-vcluster"},
                }
            ],
            "current-context": "my-vcluster",
        }
        self.api.put(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": secret_name,
                    "namespace": namespace,
                    "labels": {"app": "vcluster", "vcluster-name": name},
                },
                "type": "Opaque",
                "data": {
                    "config": b64(yaml.safe_dump(config)),
                    "certificate-authority": b64(self.ca_pem),
                },
            }
        )

    def _uninstall(self, namespace: str, name: str, release: Object) -> None:
        """helm uninstall: the chart's workloads go; PVCs and vCluster's Secret stay."""
        for kind, workload in (("Deployment", name), ("StatefulSet", f"{name}-etcd")):
            if self.api.get(kind, workload, namespace) is not None:
                self.api.remove(kind, workload, namespace)
                return  # one object per step
        metadata = release["metadata"]
        metadata["finalizers"] = [
            f for f in metadata.get("finalizers") or [] if f != FLUX_FINALIZER
        ]
        self.api.put(release)

    def _external_secret(self, external: Object) -> None:
        metadata = external["metadata"]
        key = (metadata["namespace"], metadata["name"])
        ready, message = self.external_secrets.get(key, (True, "secret synced"))
        wanted = [
            _condition(
                "Ready",
                "True" if ready else "False",
                "SecretSynced" if ready else "SecretSyncedError",
                message,
            )
        ]
        status = external.get("status") or {}
        before = [(c["status"], c["message"]) for c in status.get("conditions") or []]
        if before != [(c["status"], c["message"]) for c in wanted] or status.get(
            "syncedResourceVersion"
        ) != _synced_version(metadata):
            self.api.write_status(
                "ExternalSecret",
                metadata["name"],
                metadata["namespace"],
                {
                    "conditions": wanted,
                    "refreshTime": now_rfc3339(),
                    "syncedResourceVersion": _synced_version(metadata),
                },
            )


def _synced_version(metadata: Object) -> str:
    """As External Secrets writes it: the generation, then a hash of labels and annotations."""
    meta = json.dumps([metadata.get("labels"), metadata.get("annotations")], sort_keys=True)
    return f"{metadata['generation']}-{hashlib.sha256(meta.encode()).hexdigest()[:16]}"


def _ready_reason(status: Object) -> str:
    ready = [c for c in status.get("conditions") or [] if c["type"] == "Ready"]
    return str(ready[0].get("reason", "")) if ready else ""


def _stalled(status: Object) -> bool:
    return any(
        c["type"] == "Stalled" and c["status"] == "True" for c in status.get("conditions") or []
    )


def _rolled_out(sts: Object) -> bool:
    status = sts["status"]
    updated = status.get("currentRevision") == status.get("updateRevision")
    return bool(updated and status.get("readyReplicas", 0) == status["replicas"])
