data "tenantplane_tenant" "this" {}

output "plan" {
  value = data.tenantplane_tenant.this.plan
}
