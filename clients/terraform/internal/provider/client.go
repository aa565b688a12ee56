package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// configuredClient is the provider's client from a data source's or resource's Configure
// request; nil before the provider is configured (Terraform validates before it configures).
func configuredClient(providerData any, diagnostics *diag.Diagnostics) *apiClient {
	if providerData == nil {
		return nil
	}
	client, ok := providerData.(*apiClient)
	if !ok {
		diagnostics.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *apiClient, got %T; this is a bug of the provider.", providerData))
		return nil
	}
	return client
}

// addCallError reports a failed call: what was being done and the API's answer (its status,
// code, message and request id, which the server's operators can look up).
func addCallError(diagnostics *diag.Diagnostics, doing string, err error) {
	diagnostics.AddError("tenantplane: "+doing+" failed", err.Error())
}
