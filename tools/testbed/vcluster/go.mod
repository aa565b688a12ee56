// Pins the vCluster chart for the test bed (scripts/testbed build --all): the module's zip holds
// chart/, which the built Helm packages into the cache, and config/default_extra_values.go, whose
// K8SVersionMap names the Kubernetes versions the chart runs. Nothing is built from it and
// nothing imports it, so `go mod tidy` would drop the requirement: go.sum is filled by
// `go mod download github.com/loft-sh/vcluster`.
module tenantplane.test/testbed/vcluster

go 1.26.0

require github.com/loft-sh/vcluster v0.30.0
