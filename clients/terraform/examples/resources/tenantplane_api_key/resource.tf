# A read-only key for a CI pipeline, working until the end of 2030.
resource "tenantplane_api_key" "ci" {
  display_name = "ci pipeline"
  role         = "readonly"
  expires_at   = "2030-12-31T23:59:59Z"
}

# The raw key is known only from the creation (and sensitive).
output "ci_key" {
  value     = tenantplane_api_key.ci.key
  sensitive = true
}
