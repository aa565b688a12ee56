# A cluster managed elsewhere (another configuration, tpctl), read by name.
data "tenantplane_cluster" "web" {
  name = "web"
}

output "web_version" {
  value = data.tenantplane_cluster.web.kubernetes_version
}
