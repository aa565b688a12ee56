# Alerts that stop firing are resolved after 10 minutes.
resource "tenantplane_alerting_global" "this" {
  settings = jsonencode({
    resolve_timeout = "10m"
  })
}
