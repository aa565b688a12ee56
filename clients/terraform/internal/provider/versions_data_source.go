package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// tenantplane_versions: the orchestrator versions a cluster can be created with.
type versionsDataSource struct{ client *apiClient }

func newVersionsDataSource() datasource.DataSource { return &versionsDataSource{} }

type versionsModel struct {
	Default  types.String   `tfsdk:"default"`
	Versions []versionModel `tfsdk:"versions"`
}

type versionModel struct {
	Version           types.String `tfsdk:"version"`
	KubernetesVersion types.String `tfsdk:"kubernetes_version"`
	Default           types.Bool   `tfsdk:"default"`
	Retiring          types.Bool   `tfsdk:"retiring"`
}

func (d *versionsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_versions"
}

func (d *versionsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "The orchestrator versions a cluster can be created with or upgraded to.",
		Attributes: map[string]schema.Attribute{
			"default": schema.StringAttribute{
				Computed:    true,
				Description: "The version a cluster gets when it names none (<major>.<minor>).",
			},
			"versions": schema.ListNestedAttribute{
				Computed:    true,
				Description: "Every supported version, oldest first.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"version":            schema.StringAttribute{Computed: true, Description: "<major>.<minor>, as clusters name it."},
					"kubernetes_version": schema.StringAttribute{Computed: true, Description: "The full version it runs (v<major>.<minor>.<patch>)."},
					"default":            schema.BoolAttribute{Computed: true, Description: "Whether it is the default."},
					"retiring":           schema.BoolAttribute{Computed: true, Description: "Whether it is about to leave support."},
				}},
			},
		},
	}
}

func (d *versionsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *versionsDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	state := versionsModel{Versions: []versionModel{}}
	// Without a limit the API answers the whole list; its continue, were it there, is followed
	// all the same, so that a list is never cut at a page.
	params := &tenantplane.ListVersionsParams{}
	for {
		answer, err := d.client.api.ListVersionsWithResponse(ctx, params)
		if err == nil {
			err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
		}
		if err != nil {
			addCallError(&resp.Diagnostics, "listing the versions", err)
			return
		}
		state.Default = types.StringValue(answer.JSON200.Default)
		for _, item := range answer.JSON200.Items {
			state.Versions = append(state.Versions, versionModel{
				Version:           types.StringValue(item.Version),
				KubernetesVersion: types.StringValue(item.KubernetesVersion),
				Default:           types.BoolValue(item.Default),
				Retiring:          types.BoolValue(item.Retiring),
			})
		}
		if answer.JSON200.Continue == nil {
			break
		}
		params.Continue = answer.JSON200.Continue
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}
