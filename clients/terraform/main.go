// terraform-provider-tenantplane: the tenantplane platform API as a Terraform/OpenTofu
// provider (plugin protocol 6), source address tenantplane/tenantplane.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/tenantplane/tenantplane/clients/terraform/internal/provider"
)

// version is set at release builds (-ldflags "-X main.version=…"); "dev" otherwise.
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers such as delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		// Only used with -debug (the reattach configuration names it); both registries'
		// hostnames resolve the short source address tenantplane/tenantplane.
		Address: "registry.opentofu.org/tenantplane/tenantplane",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
