# A cluster is imported by its name.
tofu import tenantplane_cluster.api api
