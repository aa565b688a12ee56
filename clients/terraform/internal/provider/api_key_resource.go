package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// tenantplane_api_key: an API key of the tenant. The API has no update for keys: every
// change replaces the key (a new raw key). Imported by id, without its raw key.
type apiKeyResource struct{ client *apiClient }

func newAPIKeyResource() resource.Resource { return &apiKeyResource{} }

var (
	_ resource.ResourceWithConfigure   = &apiKeyResource{}
	_ resource.ResourceWithImportState = &apiKeyResource{}
)

type apiKeyModel struct {
	ID          types.String `tfsdk:"id"`
	DisplayName types.String `tfsdk:"display_name"`
	Role        types.String `tfsdk:"role"`
	ExpiresAt   types.String `tfsdk:"expires_at"`
	Key         types.String `tfsdk:"key"`
	CreatedAt   types.String `tfsdk:"created_at"`
	CreatedBy   types.String `tfsdk:"created_by"`
	LastUsedAt  types.String `tfsdk:"last_used_at"`
}

func (r *apiKeyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_api_key"
}

func (r *apiKeyResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replaced := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	kept := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		Description: "An API key of the tenant. The API cannot change a key: any change replaces it (a new raw key).",
		Attributes: map[string]schema.Attribute{
			"id":           schema.StringAttribute{Computed: true, Description: "The key's id (ak-…); its import id.", PlanModifiers: kept},
			"display_name": schema.StringAttribute{Required: true, Description: "What the key is for.", PlanModifiers: replaced},
			"role": schema.StringAttribute{
				Required: true, Description: "admin or readonly.", PlanModifiers: replaced,
				Validators: []validator.String{oneOf{"admin", "readonly"}},
			},
			"expires_at": schema.StringAttribute{
				Optional: true, PlanModifiers: replaced,
				Description: "When the key stops working (RFC 3339); never when omitted.",
				Validators:  []validator.String{rfc3339Time{}},
			},
			"key": schema.StringAttribute{
				Computed: true, Sensitive: true, PlanModifiers: kept,
				Description: "The raw key (svc_…), known only from its creation and kept in the state; null for an imported key.",
			},
			"created_at":   schema.StringAttribute{Computed: true, Description: "When the key was created (RFC 3339).", PlanModifiers: kept},
			"created_by":   schema.StringAttribute{Computed: true, Description: "Who created it (the email accountable for the creating credential).", PlanModifiers: kept},
			"last_used_at": schema.StringAttribute{Computed: true, Description: "When the key last authenticated a request, as last read; null if never."},
		},
	}
}

func (r *apiKeyResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

// sameInstant keeps the configured text of a timestamp the API renders otherwise
// (2027-01-01T01:00:00+01:00 is 2027-01-01T00:00:00Z): else every plan would replace the key.
func sameInstant(known types.String, answered *string) types.String {
	if answered == nil {
		return types.StringNull()
	}
	if !known.IsNull() && !known.IsUnknown() {
		was, errWas := time.Parse(time.RFC3339, known.ValueString())
		is, errIs := time.Parse(time.RFC3339, *answered)
		if errWas == nil && errIs == nil && was.Equal(is) {
			return known
		}
	}
	return types.StringValue(*answered)
}

func optionalString(value *string) types.String {
	if value == nil {
		return types.StringNull()
	}
	return types.StringValue(*value)
}

func (r *apiKeyResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan apiKeyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	body := tenantplane.ApiKeyCreate{DisplayName: plan.DisplayName.ValueString(), Role: tenantplane.Role(plan.Role.ValueString())}
	if !plan.ExpiresAt.IsNull() {
		expires, err := time.Parse(time.RFC3339, plan.ExpiresAt.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("expires_at"), "Invalid expires_at", err.Error())
			return
		}
		body.ExpiresAt = &expires
	}
	answer, err := r.client.api.CreateApiKeyWithResponse(ctx, r.client.tenant, nil, body)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON201 != nil)
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "creating API key "+body.DisplayName, err)
		return
	}
	created := answer.JSON201
	resp.Diagnostics.Append(resp.State.Set(ctx, &apiKeyModel{
		ID:          types.StringValue(created.Id),
		DisplayName: plan.DisplayName,
		Role:        types.StringValue(string(created.Role)),
		ExpiresAt:   sameInstant(plan.ExpiresAt, created.ExpiresAt),
		Key:         types.StringValue(created.Key),
		CreatedAt:   types.StringValue(created.CreatedAt),
		CreatedBy:   types.StringValue(created.CreatedBy),
		LastUsedAt:  types.StringNull(),
	})...)
}

func (r *apiKeyResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state apiKeyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	answer, err := r.client.api.GetApiKeyWithResponse(ctx, r.client.tenant, id, nil)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	if tenantplane.IsNotFound(err) {
		resp.State.RemoveResource(ctx) // revoked outside Terraform (a 404 only)
		return
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "reading API key "+id, err)
		return
	}
	read := answer.JSON200
	state.DisplayName = types.StringValue(read.DisplayName)
	state.Role = types.StringValue(string(read.Role))
	state.ExpiresAt = sameInstant(state.ExpiresAt, read.ExpiresAt)
	state.CreatedAt = types.StringValue(read.CreatedAt)
	state.CreatedBy = types.StringValue(read.CreatedBy)
	state.LastUsedAt = optionalString(read.LastUsedAt)
	// state.Key stays as created (null when imported): the API never shows it again.
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update is never planned (every configurable attribute replaces the key); it keeps the plan.
func (r *apiKeyResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan apiKeyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *apiKeyResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state apiKeyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	// Revocation takes no If-Match: a key has nothing to change behind Terraform's back.
	answer, err := r.client.api.RevokeApiKeyWithResponse(ctx, r.client.tenant, id)
	if err == nil {
		err = tenantplane.ErrorOf(answer.HTTPResponse, answer.Body)
	}
	if err != nil && !tenantplane.IsNotFound(err) {
		addCallError(&resp.Diagnostics, "revoking API key "+id, err)
	}
}

// ImportState takes the key's id; Read fills in its metadata. The raw key stays null.
func (r *apiKeyResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

// rfc3339Time refuses, at plan time, a timestamp the API would not read.
type rfc3339Time struct{}

func (rfc3339Time) Description(context.Context) string { return "an RFC 3339 timestamp" }

func (v rfc3339Time) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (rfc3339Time) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := time.Parse(time.RFC3339, req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid timestamp",
			"Expected an RFC 3339 timestamp such as 2027-01-01T00:00:00Z: "+err.Error())
	}
}
