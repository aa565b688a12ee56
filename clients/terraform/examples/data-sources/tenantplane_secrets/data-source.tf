# Every secret of the tenant, 100 per request (the data source walks every page).
data "tenantplane_secrets" "all" {
  page_size = 100
  # Read after the secrets this configuration manages are written.
  depends_on = [tenantplane_secret.db]
}

output "secret_paths" {
  value = { for secret in data.tenantplane_secrets.all.secrets : secret.name => secret.secret_path }
}
