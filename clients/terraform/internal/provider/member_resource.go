package provider

import (
	"context"
	"net/http"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// tenantplane_member: a person's membership of the tenant (they sign in through OIDC with
// its role). Imported by email.
type memberResource struct{ client *apiClient }

func newMemberResource() resource.Resource { return &memberResource{} }

var (
	_ resource.ResourceWithConfigure   = &memberResource{}
	_ resource.ResourceWithImportState = &memberResource{}
)

type memberModel struct {
	Email           types.String `tfsdk:"email"`
	Role            types.String `tfsdk:"role"`
	ResourceVersion types.String `tfsdk:"resource_version"`
}

func (r *memberResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_member"
}

func (r *memberResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A member of the tenant: a person who signs in through OIDC and acts with the member's role.",
		Attributes: map[string]schema.Attribute{
			"email": schema.StringAttribute{
				Required:      true,
				Description:   "The member's email, unique in the tenant (compared case-insensitively); its import id. Changing it replaces the member.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"role": schema.StringAttribute{
				Required:    true,
				Description: "admin or readonly. The last admin of a tenant can be neither demoted nor removed.",
				Validators:  []validator.String{oneOf{"admin", "readonly"}},
			},
			"resource_version": schema.StringAttribute{
				Computed:    true,
				Description: "The member's version Terraform last read (its ETag); a role change and removal send it as If-Match.",
			},
		},
	}
}

func (r *memberResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

// read is the member as the API has it, its email as “known“ spells it when the API's
// is the same address (the API normalises case), and whether it exists (404: not).
func (r *memberResource) read(ctx context.Context, email string, known types.String) (memberModel, bool, error) {
	answer, err := r.client.api.GetMemberWithResponse(ctx, r.client.tenant, email, nil)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	if tenantplane.IsNotFound(err) {
		return memberModel{}, false, nil
	}
	if err != nil {
		return memberModel{}, false, err
	}
	return memberState(answer.JSON200, answer.HTTPResponse, known), true, nil
}

func memberState(member *tenantplane.MemberRead, resp *http.Response, known types.String) memberModel {
	email := types.StringValue(member.Email)
	if !known.IsNull() && strings.EqualFold(known.ValueString(), member.Email) {
		email = known
	}
	return memberModel{
		Email:           email,
		Role:            types.StringValue(string(member.Role)),
		ResourceVersion: types.StringValue(strings.Trim(resp.Header.Get("ETag"), `"`)),
	}
}

func (r *memberResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan memberModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	email := plan.Email.ValueString()
	answer, err := r.client.api.AddMemberWithResponse(ctx, r.client.tenant, nil,
		tenantplane.MemberCreate{Email: email, Role: tenantplane.Role(plan.Role.ValueString())})
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON201 != nil)
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "adding member "+email, err)
		return
	}
	// The answer's ETag is the member list's version; the member's own is on its read.
	state, found, err := r.read(ctx, email, plan.Email)
	if err == nil && !found {
		err = errGoneAfterWrite
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "reading member "+email+" after adding it", err)
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *memberResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var prior memberModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	email := prior.Email.ValueString()
	state, found, err := r.read(ctx, email, prior.Email)
	if err != nil {
		addCallError(&resp.Diagnostics, "reading member "+email, err)
		return
	}
	if !found {
		resp.State.RemoveResource(ctx) // a 404: removed outside Terraform
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *memberResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior memberModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	email := prior.Email.ValueString()
	// A member's version changes only when the member does: every 412 is a real change.
	answer, err := r.client.api.UpdateMemberWithResponse(ctx, r.client.tenant, email,
		&tenantplane.UpdateMemberParams{IfMatch: ifMatch(prior.ResourceVersion)},
		tenantplane.MemberUpdate{Role: tenantplane.Role(plan.Role.ValueString())})
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	if tenantplane.IsPreconditionFailed(err) {
		resp.Diagnostics.AddError("tenantplane: member "+email+" "+changedOutside, err.Error())
		return
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "changing the role of member "+email, err)
		return
	}
	state := memberState(answer.JSON200, answer.HTTPResponse, prior.Email)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *memberResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var prior memberModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	email := prior.Email.ValueString()
	answer, err := r.client.api.RemoveMemberWithResponse(ctx, r.client.tenant, email,
		&tenantplane.RemoveMemberParams{IfMatch: ifMatch(prior.ResourceVersion)})
	if err == nil {
		err = tenantplane.ErrorOf(answer.HTTPResponse, answer.Body)
	}
	switch {
	case tenantplane.IsNotFound(err): // already gone: what removal wanted
	case tenantplane.IsPreconditionFailed(err):
		resp.Diagnostics.AddError("tenantplane: member "+email+" "+changedOutside, err.Error())
	case err != nil:
		addCallError(&resp.Diagnostics, "removing member "+email, err)
	}
}

// ImportState takes the member's email; Read fills in the rest.
func (r *memberResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("email"), req, resp)
}
