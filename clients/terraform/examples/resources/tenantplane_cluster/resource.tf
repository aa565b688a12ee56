# A cluster on Kubernetes 1.33 with 2 CPUs, 4 GiB of memory and 20 GiB of storage. Applying
# returns once it is Running; changing version or resources upgrades or resizes it in place
# and returns once the change runs.
resource "tenantplane_cluster" "api" {
  name    = "api"
  version = "1.33"
  resources = {
    cpu     = "2"
    memory  = "4Gi"
    storage = "20Gi"
  }
}

output "api_endpoint" {
  value = tenantplane_cluster.api.connection_details.endpoint
}
