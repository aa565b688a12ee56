"""Settings: environment variables with the prefix TENANTPLANE_ (and an optional .env)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from tenantplane.db.urls import display_url, normalise_database_url
from tenantplane.http.cors import check_origin
from tenantplane.keys import KeyRing
from tenantplane.providers.orchestrator import host_template_problem


def default_data_dir() -> Path:
    """$XDG_DATA_HOME/tenantplane (~/.local/share/tenantplane): the same from every directory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "tenantplane"


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TENANTPLANE_", env_file=".env", extra="ignore", frozen=True
    )

    # Where the embedded database, the generated secret key and the Alertmanager file live
    # unless set one by one; never relative to the current directory.
    data_dir: Path = Field(default_factory=default_data_dir)
    # Default: SQLite at DATA_DIR/tenantplane.db.
    database_url: str = ""
    # Connection budget per process and session timeouts (docs/operations.md, "Connection
    # budget"): 4 processes at the defaults stay well under PostgreSQL's max_connections of
    # 100. A request that gets no connection within the pool timeout, or waits on a lock
    # longer than the lock timeout, is answered 503 with Retry-After. 0 turns a timeout off.
    db_pool_size: int = Field(default=8, ge=1)
    db_max_overflow: int = Field(default=4, ge=0)
    # PostgreSQL: the autocommit connections that answer plain reads (GETs), besides the pool.
    db_read_pool_size: int = Field(default=4, ge=1)
    # The reconcilers of `serve` (TENANTPLANE_RUN_RECONCILERS) get a pool of their own, so that
    # a burst of requests queued on the request pool does not hold back provisioning.
    db_reconcile_pool_size: int = Field(default=4, ge=1)
    db_pool_timeout_seconds: float = Field(default=5.0, gt=0)
    db_lock_timeout_seconds: float = Field(default=5.0, ge=0)
    db_statement_timeout_seconds: float = Field(default=30.0, ge=0)
    db_idle_in_transaction_timeout_seconds: float = Field(default=30.0, ge=0)
    redis_url: str | None = None
    # When Redis (the rate-limit and auth-backoff store) cannot be reached: "open" serves
    # requests without limits, "closed" answers 503 RATE_LIMIT_UNAVAILABLE.
    redis_failure_policy: Literal["open", "closed"] = "open"
    # Each Redis call (connect, command) gives up after this long, so a partitioned or frozen
    # Redis costs a request at most this, and the failure policy decides it.
    redis_timeout_seconds: float = Field(default=1.0, gt=0)
    # Every key of the service is derived from it (tenantplane.keys: the API-key hash, the
    # credentials encryption); generated into DATA_DIR/secret.key (0600) when unset.
    secret_key: SecretStr | None = None
    secret_key_file: Path = Path()
    # Earlier secret keys, comma-separated: what they made stays readable during a rotation
    # (docs/security.md, "Rotating the secret key"); new hashes and ciphertexts use SECRET_KEY.
    secret_key_fallbacks: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)

    rate_limit: str = "1200/minute"
    # Per sending address on /api/v1/webhooks/ (Paddle's deliveries), instead of RATE_LIMIT.
    webhook_rate_limit: str = "600/minute"
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Browser origins allowed to call the API (CORS; exact origins, comma-separated); none:
    # CORS is off (docs/security.md).
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Authentication failures from one IP tolerated before backoff starts.
    auth_failure_threshold: int = 5
    auth_backoff_base_seconds: int = 1
    auth_backoff_max_seconds: int = 900
    # Failures are counted over this moving window: after this long without a failure the
    # count, and with it the backoff, is back to zero.
    auth_failure_window_seconds: int = 300

    max_body_bytes: int = 1024 * 1024
    # Strict-Transport-Security on every response (only when clients reach the service over
    # HTTPS, directly or through a TLS-terminating proxy).
    hsts: bool = False
    hsts_max_age_seconds: int = Field(default=31_536_000, ge=0)
    # A connection that has not sent a complete request head this long after it opened, or
    # after its previous response, is closed (slow or stalled clients holding connections).
    request_head_timeout_seconds: float = Field(default=10.0, gt=0)
    api_key_last_used_resolution_seconds: int = 60
    # How long a process reuses an API-key lookup (0: never). A key revoked on another
    # replica is refused here within this time, hence at most 1 s.
    api_key_cache_seconds: float = Field(default=0.5, ge=0, le=1)

    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    # Clock skew tolerated on exp, nbf and iat.
    oidc_leeway_seconds: int = 30
    # The JWKS is re-read this often, and at most once per refresh interval when a token
    # names a key id the cache does not know (a rotation at the provider).
    oidc_jwks_cache_seconds: int = 3600
    oidc_jwks_min_refresh_seconds: int = 60
    oidc_http_timeout_seconds: float = 5.0

    # The web console (docs/console.md) under /console/. Members sign in through the OIDC
    # issuer above (authorization code flow with PKCE) as the client OIDC_AUDIENCE names (its
    # ID tokens are the API's); the client secret only for a provider that requires one.
    # PUBLIC_URL: how browsers reach the service (the OIDC redirect URI, the links
    # `console-login` prints); the request's own origin when unset.
    console: bool = True
    console_oidc_client_secret: SecretStr | None = None
    public_url: str | None = None
    # A console session ends after this long without a request, and this long after sign-in
    # whatever happens; sign-in links printed by `console-login` are good for one use.
    console_idle_timeout_minutes: int = Field(default=30, gt=0)
    console_session_hours: int = Field(default=12, gt=0)
    console_sign_in_link_minutes: int = Field(default=15, gt=0)

    orchestrator: Literal["simulator", "kubernetes"] = "simulator"
    simulator_step_seconds: float = 3.0
    # kubernetes (docs/kubernetes.md): the host cluster from a kubeconfig file (and context),
    # or the in-cluster service account when no file is set.
    kubeconfig: Path | None = None
    kubernetes_context: str | None = None
    kubernetes_timeout_seconds: float = Field(default=10.0, gt=0)
    # Clusters in progress are observed again this often.
    kubernetes_poll_seconds: float = Field(default=5.0, gt=0)
    # The vCluster chart Flux installs, and values merged under the platform's own.
    vcluster_chart_repository: str = "https://charts.loft.sh"
    vcluster_chart_version: str = "0.30.0"
    vcluster_values_file: Path | None = None
    # How long Helm waits for a release's workloads to be ready before the attempt fails
    # (HelmRelease spec.timeout; Flux retries a failed attempt 3 times, then stalls).
    vcluster_release_timeout: str = Field(
        default="10m", pattern=r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
    )
    # The clusters' external API host: {cluster}, {tenant} and {namespace} are replaced, each
    # in a DNS label of its own (hosts must not collide: providers/orchestrator).
    cluster_host_template: str = "{cluster}.{tenant}.clusters.example.com"
    # How tenantplane reaches a tenant cluster's API (secret sync): the server written in
    # vCluster's kubeconfig Secret when empty; else this, with {cluster}, {tenant},
    # {namespace} and {host} replaced (e.g. https://{host} from outside the host cluster).
    vcluster_server_template: str = ""
    # Cluster access (docs/clusters.md, "Access with kubectl"): how long a cluster token
    # lasts; the URL at which clusters' API servers reach this service's token webhook (the
    # API's base, e.g. https://tenantplane.example.com; required with the kubernetes
    # orchestrator) and the CA of its certificate when that is not a public one; and how long
    # an API server keeps a review (--authentication-token-webhook-cache-ttl), which bounds
    # how long a revoked principal's token still works.
    cluster_credentials_seconds: int = Field(default=3600, ge=60, le=86400)
    cluster_token_webhook_url: str | None = None
    cluster_token_webhook_ca_file: Path | None = None
    cluster_token_webhook_cache_ttl: str = Field(default="30s", pattern=r"^[0-9]+s$")
    run_reconcilers: bool = True
    # Reconcilers (docs/reconcilers.md): rows worked on at once per reconciler and process,
    # how long a lease lasts (a crashed worker's rows are taken over after it), and the
    # longest sleep between looks for work changed by other processes.
    reconcile_concurrency: int = Field(default=16, ge=1)
    # Rows a batched reconciler step works together: clusters with the simulator (one
    # read, one call and one write per batch) and secrets (one read and one write per
    # batch, their calls out still at most reconcile_concurrency at once).
    reconcile_batch_size: int = Field(default=64, ge=1)
    reconcile_lease_seconds: float = Field(default=30.0, gt=0)
    reconcile_idle_poll_seconds: float = Field(default=2.0, gt=0)
    # Running clusters are observed again this often (faults, drift).
    cluster_resync_seconds: float = Field(default=30.0, gt=0)
    # A cluster whose step failed (the orchestrator throttled, failed or timed out) is tried
    # again after this long.
    cluster_retry_seconds: float = Field(default=5.0, gt=0)
    # Catalogues (docs/clusters.md); the packaged defaults when unset.
    plans_file: Path | None = None
    versions_file: Path | None = None

    alerting_backend: Literal["database", "mimir", "alertmanager", "disabled"] = "database"
    # mimir: base URL of Mimir's API (the server's -server.path-prefix included).
    mimir_url: str | None = None
    # alertmanager: the shared Alertmanager's URL and the file it loads (--config.file).
    alertmanager_url: str | None = None
    # Default: DATA_DIR/alertmanager/alertmanager.yml.
    alertmanager_config_file: Path = Path()
    alerting_backend_timeout_seconds: float = 10.0
    # Tenants' templates (docs/alerting.md, "Limits"): bytes per file, files per
    # configuration, and template invocations one invocation may lead to.
    alerting_max_template_size_bytes: int = Field(default=256 * 1024, ge=1)
    alerting_max_templates_count: int = Field(default=100, ge=1)
    alerting_max_template_invocations: int = Field(default=1000, ge=1)
    # A receiver field's cost bound at the reference notification (docs/alerting.md, "What
    # invoking a template may cost"): bytes written and execution steps.
    alerting_max_template_output_bytes: int = Field(default=16 * 1024 * 1024, ge=1)
    alerting_max_template_steps: int = Field(default=64 * 1024 * 1024, ge=1)
    # Receivers firewall (docs/security.md): destinations written as addresses in these
    # networks (comma-separated CIDRs), and private/loopback/link-local ones, are refused.
    alerting_firewall_block_cidrs: Annotated[list[str], NoDecode] = Field(default_factory=list)
    alerting_firewall_block_private: bool = True
    # Webhooks (docs/webhooks.md, "Retries"): the delay after a delivery's first failed
    # attempt; each further one doubles it (at most an hour, with jitter) for at least 24 h.
    # Their destinations go through the alerting receivers' firewall (the two settings above).
    webhook_retry_base_seconds: float = Field(default=10.0, gt=0)
    billing_provider: Literal["none", "paddle"] = "none"
    # Paddle charges real money: with the simulator orchestrator the clusters charged for do
    # not exist, so `serve` and `worker` refuse that pairing unless this is set (a demo).
    allow_simulated_billing: bool = False
    # Billing (docs/billing.md; prices are in the plan catalogue, PLANS_FILE): where metered
    # observability usage comes from, and the Paddle Billing connection.
    usage_source: Literal["none", "file"] = "none"
    usage_file: Path | None = None
    paddle_environment: Literal["production", "sandbox"] = "production"
    # Overrides the environment's address (a proxy, or a loopback fake in tests).
    paddle_api_url: str | None = None
    paddle_api_key: SecretStr | None = None
    paddle_webhook_secret: SecretStr | None = None
    paddle_timeout_seconds: float = Field(default=10.0, gt=0)
    # Paddle-Signature timestamps older (or newer) than this are refused (replays).
    paddle_webhook_tolerance_seconds: int = Field(default=5, ge=1)
    # Charges are manually-collected transactions: Paddle invoices them with these terms.
    paddle_payment_terms_days: int = Field(default=14, ge=0)
    # Secrets (docs/secrets.md): the tenants' vault (KV v2, one mount per tenant) and how
    # often synced secrets are checked again (vault paths, clusters) and unsynced ones retried.
    vault_addr: str | None = None
    vault_token: SecretStr | None = None
    vault_mount_template: str = "tenant-{tenant}"
    vault_timeout_seconds: float = Field(default=5.0, gt=0)
    sync_provider: Literal["simulator", "external-secrets"] = "simulator"
    # external-secrets: how often External Secrets refreshes a copy from the vault, and how
    # its ClusterSecretStore logs in to the vault: Kubernetes auth through a mount of each
    # cluster's own ({tenant}, {cluster}, {uid}: the cluster's uid, which it must contain),
    # made at provisioning, under the tenant's role, as this service account of the cluster.
    external_secrets_refresh_interval: str = "1h"
    vault_kubernetes_auth_mount_template: str = "k8s-{uid}"
    vault_kubernetes_role_template: str = "tenant-{tenant}"
    external_secrets_service_account: str = "tenantplane-vault"
    external_secrets_service_account_namespace: str = "tenantplane-system"
    # How the vault reaches a tenant cluster's API server (its auth mount's kubernetes_host):
    # the server of vCluster's kubeconfig Secret when empty; else this, with {cluster},
    # {tenant}, {namespace} and {host} replaced (e.g. https://{host}).
    vault_kubernetes_host_template: str = ""
    secret_resync_seconds: float = Field(default=60.0, gt=0)
    secret_retry_seconds: float = Field(default=5.0, gt=0)

    log_level: Literal["CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG"] = "INFO"
    # auto: readable lines when stderr is a terminal, JSON lines otherwise (files, pipes,
    # journald, containers). json/console force one; LOG_JSON true/false is the earlier
    # spelling, which LOG_FORMAT overrides. Resolved into log_json (None: auto).
    log_format: Literal["auto", "json", "console"] = "auto"
    log_json: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _under_data_dir(cls, data: Any) -> Any:
        # Paths not set on their own follow DATA_DIR (set or default), resolved to absolute.
        if not isinstance(data, dict):
            return data
        data_dir = Path(data.get("data_dir") or default_data_dir()).expanduser().absolute()
        defaults = {
            "data_dir": data_dir,
            "database_url": sqlite_url(data_dir / "tenantplane.db"),
            "secret_key_file": data_dir / "secret.key",
            "alertmanager_config_file": data_dir / "alertmanager" / "alertmanager.yml",
        }
        return {**data, **{key: value for key, value in defaults.items() if not data.get(key)}}

    @model_validator(mode="after")
    def _kubernetes_settings(self) -> Settings:
        if self.kubeconfig is not None and not self.kubeconfig.is_file():
            raise ValueError(f"TENANTPLANE_KUBECONFIG: {self.kubeconfig} is not a file")
        if self.orchestrator == "kubernetes" and not self.cluster_token_webhook_url:
            # Without it the clusters' API servers could not review tenants' tokens: every
            # kubectl call would get 401.
            raise ValueError(
                "TENANTPLANE_ORCHESTRATOR=kubernetes needs TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_URL "
                "(the URL at which clusters' API servers reach this service)"
            )
        if (
            self.cluster_token_webhook_ca_file is not None
            and not self.cluster_token_webhook_ca_file.is_file()
        ):
            raise ValueError(
                f"TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_CA_FILE: {self.cluster_token_webhook_ca_file} "
                "is not a file"
            )
        if self.sync_provider == "external-secrets":
            # Copies go into vCluster tenant clusters found on the host cluster, and their
            # ClusterSecretStores point at the vault.
            if self.orchestrator != "kubernetes":
                raise ValueError(
                    "TENANTPLANE_SYNC_PROVIDER=external-secrets needs "
                    "TENANTPLANE_ORCHESTRATOR=kubernetes"
                )
            if not self.vault_addr:
                raise ValueError(
                    "TENANTPLANE_SYNC_PROVIDER=external-secrets needs TENANTPLANE_VAULT_ADDR"
                )
        return self

    @model_validator(mode="before")
    @classmethod
    def _resolve_log_format(cls, data: Any) -> Any:
        # Anything but json or console is left to the field's own validation (auto, or an
        # error naming TENANTPLANE_LOG_FORMAT).
        if isinstance(data, dict) and data.get("log_format") in ("json", "console"):
            return {**data, "log_json": data["log_format"] == "json"}
        return data

    @field_validator("cluster_host_template")
    @classmethod
    def _unambiguous_hosts(cls, value: str) -> str:
        problem = host_template_problem(value)
        if problem is not None:
            raise ValueError(f"TENANTPLANE_CLUSTER_HOST_TEMPLATE {problem}")
        return value

    @field_validator("cluster_token_webhook_url")
    @classmethod
    def _webhook_url(cls, value: str | None) -> str | None:
        # kube-apiserver reads a webhook kubeconfig's credentials only for a TLS server
        # (client-go clientcmd): over http:// every review would arrive without one (401).
        if value is not None and not value.startswith("https://"):
            raise ValueError(
                "TENANTPLANE_CLUSTER_TOKEN_WEBHOOK_URL must be an https:// URL: API servers "
                "send their webhook credential over TLS only"
            )
        return value.rstrip("/") if value else value

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        return normalise_database_url(value)

    @field_validator(
        "trusted_proxies",
        "alerting_firewall_block_cidrs",
        "secret_key_fallbacks",
        "cors_origins",
        mode="before",
    )
    @classmethod
    def _split_lists(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("cors_origins")
    @classmethod
    def _check_origins(cls, value: list[str]) -> list[str]:
        return [check_origin(origin) for origin in value]

    @field_validator("trusted_proxies", "alerting_firewall_block_cidrs")
    @classmethod
    def _check_proxies(cls, value: list[str]) -> list[str]:
        for entry in value:
            ipaddress.ip_network(entry, strict=False)
        return value

    @field_validator("vault_mount_template")
    @classmethod
    def _check_mount_template(cls, value: str) -> str:
        if "{tenant}" not in value or value.format(tenant="x").strip("/") != value.format(
            tenant="x"
        ):
            raise ValueError("must contain {tenant} and no leading or trailing '/'")
        return value

    @field_validator("vault_kubernetes_auth_mount_template")
    @classmethod
    def _check_auth_mount_template(cls, value: str) -> str:
        path = value.format(tenant="t", cluster="c", uid="0")
        if "{uid}" not in value or path.strip("/") != path:
            raise ValueError("must contain {uid} and no leading or trailing '/'")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_log_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("rate_limit", "webhook_rate_limit")
    @classmethod
    def _check_rate_limit(cls, value: str) -> str:
        from limits import parse

        parse(value)
        return value

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def summary(self) -> dict[str, str]:
        """What this process uses, for the start-up log event (no credential)."""
        return {
            "data_dir": str(self.data_dir),
            "database": display_url(self.database_url),
            "database_kind": "sqlite" if self.is_sqlite else "postgresql",
            "orchestrator": self.orchestrator,
            "alerting_backend": self.alerting_backend,
            "billing_provider": self.billing_provider,
            "rate_limit_storage": "redis" if self.redis_url else "memory",
            "redis_failure_policy": self.redis_failure_policy,
            "vault": "configured" if self.vault_addr else "not configured",
        }

    @property
    def bills_simulated_clusters(self) -> bool:
        """Real charges (Paddle) for clusters that only the simulator runs."""
        return self.billing_provider == "paddle" and self.orchestrator == "simulator"

    def keyring(self) -> KeyRing:
        """The secret key (and the fallbacks) from which every purpose's key is derived."""
        fallbacks = [secret.get_secret_value().encode() for secret in self.secret_key_fallbacks]
        return KeyRing(self.secret_key_value(), fallbacks)

    def secret_key_value(self) -> bytes:
        """The secret key: configured, or generated once and kept on disk."""
        if self.secret_key is not None:
            return self.secret_key.get_secret_value().encode()
        path = self.secret_key_file
        if not path.exists():
            import secrets

            from tenantplane.files import create_private

            # Exclusive: two processes starting at once must not overwrite each other's key.
            create_private(path, secrets.token_urlsafe(48).encode())
        return path.read_text(encoding="utf-8").strip().encode()
