package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// changedOutside is the error of an update or deletion the API refused with 412 because the
// secret's path or targets changed since Terraform last read them: applying the plan would
// overwrite that change.
const changedOutside = "changed outside Terraform; refresh"

// tenantplane_secret: a managed secret (a path in the tenant's vault) and the namespaces of
// the tenant's clusters it is synced into. Imported by its name.
type secretResource struct{ client *apiClient }

func newSecretResource() resource.Resource { return &secretResource{} }

var (
	_ resource.ResourceWithConfigure   = &secretResource{}
	_ resource.ResourceWithImportState = &secretResource{}
)

func (r *secretResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_secret"
}

func (r *secretResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A managed secret: a path in the tenant's vault, synced into namespaces of the tenant's clusters. " +
			"Its value stays in the vault and never passes through Terraform.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required:      true,
				Description:   "The secret's name (DNS-safe, 2-63 characters); its import id. Changing it replaces the secret.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"secret_path": schema.StringAttribute{
				Required:      true,
				Description:   "The path of a key in the tenant's vault. The API cannot change it: changing it replaces the secret.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"sync": schema.ListNestedAttribute{
				Optional: true,
				Computed: true,
				// No targets when none are configured, as the API has it: an omitted sync and
				// sync = [] are the same secret, and neither differs from what the API reads.
				Default:     listdefault.StaticValue(types.ListValueMust(syncTargetType, nil)),
				Description: "The namespaces the secret is synced into; the list replaces the API's in full on every change.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"cluster":   schema.StringAttribute{Required: true, Description: "A cluster of the tenant."},
					"namespace": schema.StringAttribute{Required: true, Description: "The namespace in that cluster."},
					"secret_name": schema.StringAttribute{
						Optional:    true,
						Computed:    true,
						Description: "The name of the copy in the cluster; defaults to the secret's name.",
					},
				}},
			},
			"resource_version": schema.StringAttribute{
				Computed:    true,
				Description: "The version Terraform last read (the API's ETag); updates and deletion send it as If-Match.",
			},
			"created_at": schema.StringAttribute{
				Computed:      true,
				Description:   "When the secret was created (RFC 3339).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"phase": schema.StringAttribute{
				Computed:    true,
				Description: "The sync's phase as last read (Synced once every target holds the value).",
			},
		},
	}
}

func (r *secretResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (r *secretResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan secretModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	sync := syncTargetsIn(ctx, plan.Sync, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	name := plan.Name.ValueString()
	answer, err := r.client.api.CreateSecretWithResponse(ctx, r.client.tenant, nil, tenantplane.SecretCreate{
		Name: name, SecretPath: plan.SecretPath.ValueString(), Sync: &sync,
	})
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON201 != nil)
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "creating secret "+name, err)
		return
	}
	state := secretState(ctx, answer.JSON201, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *secretResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var prior secretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := prior.Name.ValueString()
	answer, err := r.client.api.GetSecretWithResponse(ctx, r.client.tenant, name, nil)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	// Only a 404 means the secret is gone; a 401, 403 or 5xx says nothing about it, and
	// dropping it from the state then would have the next apply create it again.
	if tenantplane.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "reading secret "+name, err)
		return
	}
	state := secretState(ctx, answer.JSON200, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *secretResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior secretModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	sync := syncTargetsIn(ctx, plan.Sync, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	name := prior.Name.ValueString()
	version := prior.ResourceVersion
	for attempt := 1; ; attempt++ {
		answer, err := r.client.api.UpdateSecretWithResponse(ctx, r.client.tenant, name,
			&tenantplane.UpdateSecretParams{IfMatch: ifMatch(version)}, tenantplane.SecretUpdate{Sync: sync})
		if err == nil {
			err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
		}
		if tenantplane.IsPreconditionFailed(err) {
			if current, ok := r.versionIfOnlyStatusChanged(ctx, prior, attempt, &resp.Diagnostics); ok {
				version = current
				continue
			}
			if !resp.Diagnostics.HasError() {
				resp.Diagnostics.AddError("tenantplane: secret "+name+" "+changedOutside, err.Error())
			}
			return
		}
		if err != nil {
			addCallError(&resp.Diagnostics, "updating secret "+name, err)
			return
		}
		state := secretState(ctx, answer.JSON200, &resp.Diagnostics)
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		return
	}
}

func (r *secretResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var prior secretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := prior.Name.ValueString()
	version := prior.ResourceVersion
	for attempt := 1; ; attempt++ {
		answer, err := r.client.api.DeleteSecretWithResponse(ctx, r.client.tenant, name,
			&tenantplane.DeleteSecretParams{IfMatch: ifMatch(version)})
		if err == nil {
			err = tenantplane.ErrorOf(answer.HTTPResponse, answer.Body)
		}
		switch {
		case tenantplane.IsNotFound(err):
			// Already gone: what deletion wanted.
		case tenantplane.IsPreconditionFailed(err):
			if current, ok := r.versionIfOnlyStatusChanged(ctx, prior, attempt, &resp.Diagnostics); ok {
				version = current
				continue
			}
			if !resp.Diagnostics.HasError() {
				resp.Diagnostics.AddError("tenantplane: secret "+name+" "+changedOutside, err.Error())
			}
		case err != nil:
			addCallError(&resp.Diagnostics, "deleting secret "+name, err)
		}
		return
	}
}

// How many times an update or deletion is sent again after a 412 that only the secret's
// status caused.
const statusOnlyRetries = 3

// versionIfOnlyStatusChanged reads the secret again after a 412. The API gives a secret a new
// version whenever the sync controller writes its status (Pending, then Synced, …), which
// changes nothing Terraform manages: when the path and targets are still those Terraform
// last read, the request may be sent again with the current version (true). When they
// changed, or the secret is gone, or the read fails (reported), false: the 412 stands.
func (r *secretResource) versionIfOnlyStatusChanged(ctx context.Context, prior secretModel, attempt int, diagnostics *diag.Diagnostics) (types.String, bool) {
	if attempt > statusOnlyRetries {
		return types.String{}, false
	}
	name := prior.Name.ValueString()
	answer, err := r.client.api.GetSecretWithResponse(ctx, r.client.tenant, name, nil)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	if tenantplane.IsNotFound(err) {
		return types.String{}, false
	}
	if err != nil {
		addCallError(diagnostics, "reading secret "+name+" again after its 412", err)
		return types.String{}, false
	}
	current := secretState(ctx, answer.JSON200, diagnostics)
	unchanged := current.SecretPath.Equal(prior.SecretPath) && current.Sync.Equal(prior.Sync)
	return current.ResourceVersion, unchanged && !diagnostics.HasError()
}

// ImportState takes the secret's name; Read fills in the rest.
func (r *secretResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("name"), req, resp)
}
