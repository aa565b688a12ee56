package provider

import (
	"fmt"
	"net/http"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
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

// answered is the error of an answer: the API's (*tenantplane.APIError) outside 2xx, else
// one when the body is not what the API document says (parsed false: the generated client
// found no JSON of the expected schema, as from a proxy's page), else nil.
func answered(resp *http.Response, body []byte, parsed bool) error {
	if err := tenantplane.ErrorOf(resp, body); err != nil {
		return err
	}
	if !parsed {
		return fmt.Errorf("tenantplane: an answer (HTTP %d, %s) without the JSON body expected",
			resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return nil
}
