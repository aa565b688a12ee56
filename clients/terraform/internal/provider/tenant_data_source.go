package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// tenantplane_tenant: the provider's tenant and its platform-managed fields (read only: the
// API refuses to change them).
type tenantDataSource struct{ client *apiClient }

func newTenantDataSource() datasource.DataSource { return &tenantDataSource{} }

type tenantModel struct {
	Name                types.String `tfsdk:"name"`
	Plan                types.String `tfsdk:"plan"`
	State               types.String `tfsdk:"state"`
	EnforceMetricsLimit types.Bool   `tfsdk:"enforce_metrics_limit"`
	EnforceLogLimit     types.Bool   `tfsdk:"enforce_log_limit"`
}

func (d *tenantDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tenant"
}

func (d *tenantDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The provider's tenant: its plan, state and enforcement flags (platform-managed, read only).",
		Attributes: map[string]schema.Attribute{
			"name":                  schema.StringAttribute{Computed: true, Description: "The tenant's name (the provider's tenant)."},
			"plan":                  schema.StringAttribute{Computed: true, Description: "starter, pro, business or enterprise."},
			"state":                 schema.StringAttribute{Computed: true, Description: "active, suspended (read only until resumed) or cancelled."},
			"enforce_metrics_limit": schema.BoolAttribute{Computed: true, Description: "Whether the plan's metrics limit is enforced."},
			"enforce_log_limit":     schema.BoolAttribute{Computed: true, Description: "Whether the plan's log limit is enforced."},
		},
	}
}

func (d *tenantDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *tenantDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	answer, err := d.client.api.GetTenantWithResponse(ctx, d.client.tenant, nil)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "reading tenant "+d.client.tenant, err)
		return
	}
	tenant := answer.JSON200
	resp.Diagnostics.Append(resp.State.Set(ctx, &tenantModel{
		Name:                types.StringValue(tenant.Name),
		Plan:                types.StringValue(string(tenant.Plan)),
		State:               types.StringValue(string(tenant.State)),
		EnforceMetricsLimit: types.BoolValue(tenant.EnforceMetricsLimit),
		EnforceLogLimit:     types.BoolValue(tenant.EnforceLogLimit),
	})...)
}
