package provider

import (
	"context"
	"errors"
	"net/http"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// The phases in which a cluster's API server serves and its connection details exist
// (docs/clusters.md, "Phases and status").
var connectablePhases = map[string]bool{"Running": true, "Upgrading": true}

var resourcesType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"cpu":     types.StringType,
	"memory":  types.StringType,
	"storage": types.StringType,
}}

var connectionType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"endpoint":              types.StringType,
	"certificate_authority": types.StringType,
}}

// clusterFields are the attributes the resource and the data source share, as the API
// reads them.
type clusterFields struct {
	Name              types.String
	Version           types.String
	HighAvailability  types.Bool
	Resources         types.Object
	Connection        types.Object
	ResourceVersion   types.String
	CreatedAt         types.String
	Phase             types.String
	KubernetesVersion types.String
}

// clusterFieldsOf is what the API answered, with “connection“ the details read for it
// (nil: not read; the caller keeps what it had).
func clusterFieldsOf(cluster *tenantplane.ClusterRead, connection *tenantplane.ConnectionDetails, diagnostics *diag.Diagnostics) clusterFields {
	resources, resourcesDiagnostics := types.ObjectValue(resourcesType.AttrTypes, map[string]attr.Value{
		"cpu":     types.StringValue(cluster.Resources.Cpu),
		"memory":  types.StringValue(cluster.Resources.Memory),
		"storage": types.StringValue(cluster.Resources.Storage),
	})
	diagnostics.Append(resourcesDiagnostics...)
	fields := clusterFields{
		Name:              types.StringValue(cluster.Name),
		Version:           types.StringValue(cluster.Version),
		HighAvailability:  types.BoolValue(cluster.HighAvailability),
		Resources:         resources,
		Connection:        types.ObjectNull(connectionType.AttrTypes),
		ResourceVersion:   types.StringValue(cluster.ResourceVersion),
		CreatedAt:         types.StringValue(cluster.CreatedAt),
		Phase:             types.StringValue(cluster.Status.Phase),
		KubernetesVersion: types.StringValue(cluster.Status.KubernetesVersion),
	}
	if connection != nil {
		value, connectionDiagnostics := types.ObjectValue(connectionType.AttrTypes, map[string]attr.Value{
			"endpoint":              types.StringValue(connection.Endpoint),
			"certificate_authority": types.StringValue(connection.CertificateAuthority),
		})
		diagnostics.Append(connectionDiagnostics...)
		fields.Connection = value
	}
	return fields
}

// resourcesIn is the API's body for the configured quantities: only those known (an
// omitted one keeps the platform's default on create and the current value on resize).
func resourcesIn(planned types.Object) *tenantplane.ResourcesInput {
	if planned.IsNull() || planned.IsUnknown() {
		return nil
	}
	known := func(name string) *string {
		value, ok := planned.Attributes()[name].(types.String)
		if !ok || value.IsNull() || value.IsUnknown() {
			return nil
		}
		text := value.ValueString()
		return &text
	}
	return &tenantplane.ResourcesInput{Cpu: known("cpu"), Memory: known("memory"), Storage: known("storage")}
}

// getCluster reads a cluster (an *APIError on a 404 as on any other refusal).
func (c *apiClient) getCluster(ctx context.Context, name string) (*tenantplane.ClusterRead, error) {
	answer, err := c.api.GetClusterWithResponse(ctx, c.tenant, name, nil)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	if err != nil {
		return nil, err
	}
	return answer.JSON200, nil
}

// connectionOf reads the connection details of a cluster whose API server serves; nil
// (and no error) while it does not yet, as the API's 503 says.
func (c *apiClient) connectionOf(ctx context.Context, cluster *tenantplane.ClusterRead) (*tenantplane.ConnectionDetails, error) {
	// Asked only in a phase that has them: the client retries a 503 with backoff.
	if !connectablePhases[cluster.Status.Phase] {
		return nil, nil
	}
	answer, err := c.api.GetConnectionDetailsWithResponse(ctx, c.tenant, cluster.Name)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	var apiError *tenantplane.APIError
	if errors.As(err, &apiError) && apiError.Status == http.StatusServiceUnavailable {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return answer.JSON200, nil
}

// versionCondition is the status of the cluster's VersionUpToDate condition ("True" once
// the version desired runs), "" when the server reports none.
func versionCondition(cluster *tenantplane.ClusterRead) string {
	for _, condition := range cluster.Status.Conditions {
		if condition["type"] == "VersionUpToDate" {
			status, _ := condition["status"].(string)
			return status
		}
	}
	return ""
}

// runningAsDesired says whether the cluster runs what its spec asks for: Running, the
// reconciler past “generation“ (the least generation of a change the caller made: a
// cluster answers Running after a PATCH until the reconciler acts on it), the desired
// version running and, for high availability, its replicas configured. As the Python
// SDK's wait_for (clients/python/src/tenantplane_client/waiting.py).
func runningAsDesired(cluster *tenantplane.ClusterRead, generation int) bool {
	status := cluster.Status
	if status.Phase != "Running" || status.ObservedGeneration < generation {
		return false
	}
	if cluster.HighAvailability && !status.HaConfigured {
		return false
	}
	condition := versionCondition(cluster)
	return condition == "" || condition == "True"
}
