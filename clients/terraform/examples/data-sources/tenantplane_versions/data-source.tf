data "tenantplane_versions" "all" {}

output "default_version" {
  value = data.tenantplane_versions.all.default
}

output "supported_versions" {
  value = [for v in data.tenantplane_versions.all.versions : v.version if !v.retiring]
}
