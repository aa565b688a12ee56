package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// secretModel is tenantplane_secret's state: the API's Secret, the sync targets a list.
type secretModel struct {
	Name            types.String `tfsdk:"name"`
	SecretPath      types.String `tfsdk:"secret_path"`
	Sync            types.List   `tfsdk:"sync"`
	ResourceVersion types.String `tfsdk:"resource_version"`
	CreatedAt       types.String `tfsdk:"created_at"`
	Phase           types.String `tfsdk:"phase"`
}

type syncTargetModel struct {
	Cluster    types.String `tfsdk:"cluster"`
	Namespace  types.String `tfsdk:"namespace"`
	SecretName types.String `tfsdk:"secret_name"`
}

var syncTargetType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"cluster":     types.StringType,
	"namespace":   types.StringType,
	"secret_name": types.StringType,
}}

// syncTargetsIn is the API's body for the planned targets: secretName only where the
// configuration names one (the API defaults it to the secret's name).
func syncTargetsIn(ctx context.Context, planned types.List, diagnostics *diag.Diagnostics) []tenantplane.SyncTargetIn {
	var targets []syncTargetModel
	diagnostics.Append(planned.ElementsAs(ctx, &targets, false)...)
	body := make([]tenantplane.SyncTargetIn, 0, len(targets))
	for _, target := range targets {
		in := tenantplane.SyncTargetIn{Cluster: target.Cluster.ValueString(), Namespace: target.Namespace.ValueString()}
		if !target.SecretName.IsNull() && !target.SecretName.IsUnknown() {
			name := target.SecretName.ValueString()
			in.SecretName = &name
		}
		body = append(body, in)
	}
	return body
}

// secretState is the state for the API's answer: every field as the server has it, so that
// a plan compares the configuration with what is really there.
func secretState(ctx context.Context, secret *tenantplane.SecretRead, diagnostics *diag.Diagnostics) secretModel {
	targets := make([]syncTargetModel, 0, len(secret.Sync))
	for _, target := range secret.Sync {
		targets = append(targets, syncTargetModel{
			Cluster:    types.StringValue(target.Cluster),
			Namespace:  types.StringValue(target.Namespace),
			SecretName: types.StringValue(target.SecretName),
		})
	}
	sync, listDiagnostics := types.ListValueFrom(ctx, syncTargetType, targets)
	diagnostics.Append(listDiagnostics...)
	return secretModel{
		Name:            types.StringValue(secret.Name),
		SecretPath:      types.StringValue(secret.SecretPath),
		Sync:            sync,
		ResourceVersion: types.StringValue(secret.ResourceVersion),
		CreatedAt:       types.StringValue(secret.CreatedAt),
		Phase:           types.StringValue(secret.Status.Phase),
	}
}

// ifMatch is the If-Match header naming the version the state holds: the API refuses the
// request (412) when the secret changed since Terraform last read it.
func ifMatch(resourceVersion types.String) *string {
	value := `"` + resourceVersion.ValueString() + `"`
	return &value
}
