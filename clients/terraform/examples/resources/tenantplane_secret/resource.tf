# The database credentials at apps/db in the tenant's vault, synced into the namespace apps
# of the cluster web (as the secret db) and into jobs (as db-credentials).
resource "tenantplane_secret" "db" {
  name        = "db"
  secret_path = "apps/db"
  sync = [
    { cluster = "web", namespace = "apps" },
    { cluster = "web", namespace = "jobs", secret_name = "db-credentials" },
  ]
}
