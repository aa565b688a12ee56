package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// tenantplane_cluster (data source): one cluster of the tenant, by name, as the API reads it.
type clusterDataSource struct{ client *apiClient }

func newClusterDataSource() datasource.DataSource { return &clusterDataSource{} }

type clusterDataModel struct {
	Name              types.String `tfsdk:"name"`
	Version           types.String `tfsdk:"version"`
	HighAvailability  types.Bool   `tfsdk:"high_availability"`
	Resources         types.Object `tfsdk:"resources"`
	Connection        types.Object `tfsdk:"connection_details"`
	CreatedAt         types.String `tfsdk:"created_at"`
	Phase             types.String `tfsdk:"phase"`
	KubernetesVersion types.String `tfsdk:"kubernetes_version"`
}

func (d *clusterDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

func (d *clusterDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(description string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: description}
	}
	resp.Schema = schema.Schema{
		Description: "A cluster of the tenant, by name: its spec, phase and connection details.",
		Attributes: map[string]schema.Attribute{
			"name":              schema.StringAttribute{Required: true, Description: "The cluster's name."},
			"version":           computed("The Kubernetes minor version desired (\"1.33\")."),
			"high_availability": schema.BoolAttribute{Computed: true, Description: "Whether the control plane and etcd have 3 replicas."},
			"resources": schema.SingleNestedAttribute{
				Computed:    true,
				Description: "The cluster's share of the plan.",
				Attributes: map[string]schema.Attribute{
					"cpu":     computed("CPU as a Kubernetes quantity."),
					"memory":  computed("Memory as a Kubernetes quantity."),
					"storage": computed("Storage as a Kubernetes quantity."),
				},
			},
			"connection_details": schema.SingleNestedAttribute{
				Computed:    true,
				Description: "How to reach the cluster's API server; null while it does not serve (before it first runs).",
				Attributes: map[string]schema.Attribute{
					"endpoint":              computed("The API server's URL."),
					"certificate_authority": computed("The CA certificate that signed the API server's, base64-encoded PEM (a kubeconfig's certificate-authority-data)."),
				},
			},
			"created_at":         computed("When the cluster was created (RFC 3339)."),
			"phase":              computed("The lifecycle phase (Running once ready)."),
			"kubernetes_version": computed("The Kubernetes version running (v1.33.5)."),
		},
	}
}

func (d *clusterDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *clusterDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var config clusterDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := config.Name.ValueString()
	cluster, err := d.client.getCluster(ctx, name)
	if err != nil {
		addCallError(&resp.Diagnostics, "reading cluster "+name, err)
		return
	}
	connection, err := d.client.connectionOf(ctx, cluster)
	if err != nil {
		addCallError(&resp.Diagnostics, "reading the connection details of cluster "+name, err)
		return
	}
	fields := clusterFieldsOf(cluster, connection, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &clusterDataModel{
		Name: fields.Name, Version: fields.Version, HighAvailability: fields.HighAvailability,
		Resources: fields.Resources, Connection: fields.Connection, CreatedAt: fields.CreatedAt,
		Phase: fields.Phase, KubernetesVersion: fields.KubernetesVersion,
	})...)
}
