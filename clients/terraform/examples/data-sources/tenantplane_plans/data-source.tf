data "tenantplane_plans" "all" {}

output "cluster_limits" {
  value = { for plan in data.tenantplane_plans.all.plans : plan.name => plan.limits.clusters }
}
