package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// clusterModel is tenantplane_cluster's state.
type clusterModel struct {
	Name              types.String   `tfsdk:"name"`
	Version           types.String   `tfsdk:"version"`
	HighAvailability  types.Bool     `tfsdk:"high_availability"`
	Resources         types.Object   `tfsdk:"resources"`
	Connection        types.Object   `tfsdk:"connection_details"`
	ResourceVersion   types.String   `tfsdk:"resource_version"`
	CreatedAt         types.String   `tfsdk:"created_at"`
	Phase             types.String   `tfsdk:"phase"`
	KubernetesVersion types.String   `tfsdk:"kubernetes_version"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
}

func (m *clusterModel) set(fields clusterFields) {
	m.Name, m.Version, m.HighAvailability, m.Resources = fields.Name, fields.Version, fields.HighAvailability, fields.Resources
	m.ResourceVersion, m.CreatedAt, m.Phase, m.KubernetesVersion = fields.ResourceVersion, fields.CreatedAt, fields.Phase, fields.KubernetesVersion
	// Not read (the cluster does not serve just now): the details last read stand.
	if !fields.Connection.IsNull() || m.Connection.IsUnknown() {
		m.Connection = fields.Connection
	}
}

func (r *clusterResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	quantity := func(description string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional: true, Computed: true, Description: description,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		}
	}
	resp.Schema = schema.Schema{
		Description: "A managed Kubernetes cluster of the tenant. Creation waits until it is Running, an upgrade or " +
			"a resize until the cluster runs the new version or resources, deletion until it is gone.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required:      true,
				Description:   "The cluster's name (DNS-safe); its import id. Changing it replaces the cluster.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"version": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Description: "The Kubernetes minor version (\"1.33\"); the platform's default when omitted. Changing it " +
					"upgrades the cluster in place, one minor version at a time (the API refuses downgrades and skips).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"high_availability": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				Description: "A 3-replica control plane and etcd (default false). Set at creation only: turning it on " +
					"replaces the cluster; turning it off is an error at plan time (there is no way back from HA).",
				PlanModifiers: []planmodifier.Bool{highAvailabilityOneWay{}},
			},
			"resources": schema.SingleNestedAttribute{
				Optional:      true,
				Computed:      true,
				Description:   "The cluster's share of the plan; a change resizes it online. Omitted quantities take the platform's defaults on creation and keep their values afterwards.",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				Attributes: map[string]schema.Attribute{
					"cpu":     quantity("CPU as a Kubernetes quantity (\"2\", \"500m\")."),
					"memory":  quantity("Memory as a Kubernetes quantity (\"4Gi\")."),
					"storage": quantity("Storage as a Kubernetes quantity (\"20Gi\")."),
				},
			},
			"connection_details": schema.SingleNestedAttribute{
				Computed:    true,
				Description: "How to reach the cluster's API server (the API's connection details), once it has served.",
				Attributes: map[string]schema.Attribute{
					"endpoint":              schema.StringAttribute{Computed: true, Description: "The API server's URL."},
					"certificate_authority": schema.StringAttribute{Computed: true, Description: "The CA certificate that signed the API server's, base64-encoded PEM (a kubeconfig's certificate-authority-data)."},
				},
				PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
			},
			"resource_version": schema.StringAttribute{
				Computed:    true,
				Description: "The version Terraform last read (the API's ETag); updates and deletion send it as If-Match.",
			},
			"created_at": schema.StringAttribute{
				Computed:      true,
				Description:   "When the cluster was created (RFC 3339).",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"phase":              schema.StringAttribute{Computed: true, Description: "The lifecycle phase as last read (Running once ready)."},
			"kubernetes_version": schema.StringAttribute{Computed: true, Description: "The Kubernetes version running (v1.33.5), as last read."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{
				Create: true, Update: true, Delete: true,
			}),
		},
	}
}

// highAvailabilityOneWay: turning high availability on for an existing cluster replaces it
// (the API sets it at creation only); turning it off is refused at plan time, before
// anything is changed, since no cluster can go back from HA.
type highAvailabilityOneWay struct{}

func (highAvailabilityOneWay) Description(context.Context) string {
	return "Turning high availability on replaces the cluster; turning it off is an error."
}

func (m highAvailabilityOneWay) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (highAvailabilityOneWay) PlanModifyBool(_ context.Context, req planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	if req.StateValue.IsNull() || req.PlanValue.IsNull() || req.PlanValue.IsUnknown() {
		return
	}
	switch was, wanted := req.StateValue.ValueBool(), req.PlanValue.ValueBool(); {
	case was && !wanted:
		resp.Diagnostics.AddAttributeError(path.Root("high_availability"), "High availability cannot be turned off",
			"The cluster is highly available, and there is no transition from HA back to a single control plane. "+
				"Keep high_availability = true; a cluster without it is a new one: destroy this one first (tofu destroy -target=…), then apply.")
	case !was && wanted:
		resp.RequiresReplace = true
	}
}
