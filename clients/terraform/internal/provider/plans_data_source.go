package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// tenantplane_plans: the plans a tenant can be on, their limits and prices.
type plansDataSource struct{ client *apiClient }

func newPlansDataSource() datasource.DataSource { return &plansDataSource{} }

type plansModel struct {
	Plans []planModel `tfsdk:"plans"`
}

type planModel struct {
	Name   types.String `tfsdk:"name"`
	Limits limitsModel  `tfsdk:"limits"`
	Prices pricesModel  `tfsdk:"prices"`
}

type limitsModel struct {
	Clusters types.Int64  `tfsdk:"clusters"`
	CPU      types.String `tfsdk:"cpu"`
	Memory   types.String `tfsdk:"memory"`
	Storage  types.String `tfsdk:"storage"`
}

type pricesModel struct {
	Currency           types.String `tfsdk:"currency"`
	PlatformFee        types.String `tfsdk:"platform_fee"`
	VCPUHour           types.String `tfsdk:"vcpu_hour"`
	MemoryGiBHour      types.String `tfsdk:"memory_gib_hour"`
	StorageGiBHour     types.String `tfsdk:"storage_gib_hour"`
	HAControlPlaneHour types.String `tfsdk:"ha_control_plane_hour"`
	Observability      []meterModel `tfsdk:"observability"`
}

type meterModel struct {
	Name     types.String `tfsdk:"name"`
	Unit     types.String `tfsdk:"unit"`
	Included types.String `tfsdk:"included"`
	Price    types.String `tfsdk:"price"`
}

func computedStrings(descriptions map[string]string) map[string]schema.Attribute {
	attributes := map[string]schema.Attribute{}
	for name, description := range descriptions {
		attributes[name] = schema.StringAttribute{Computed: true, Description: description}
	}
	return attributes
}

func (d *plansDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_plans"
}

func (d *plansDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	limits := computedStrings(map[string]string{
		"cpu":     "CPU of all the tenant's clusters together (a quantity).",
		"memory":  "Memory of all the tenant's clusters together (a quantity).",
		"storage": "Storage of all the tenant's clusters together (a quantity).",
	})
	limits["clusters"] = schema.Int64Attribute{Computed: true, Description: "How many clusters the tenant may have."}
	// Prices are decimal strings, as the API sends them (no rounding through floats).
	prices := computedStrings(map[string]string{
		"currency":              "The prices' currency (ISO 4217).",
		"platform_fee":          "The platform fee.",
		"vcpu_hour":             "Price of a vCPU-hour.",
		"memory_gib_hour":       "Price of a GiB-hour of memory.",
		"storage_gib_hour":      "Price of a GiB-hour of storage.",
		"ha_control_plane_hour": "Price of an hour of a highly available control plane.",
	})
	prices["observability"] = schema.ListNestedAttribute{
		Computed:    true,
		Description: "Metered observability: what is included and the price beyond it.",
		NestedObject: schema.NestedAttributeObject{Attributes: computedStrings(map[string]string{
			"name": "The meter.", "unit": "Its unit.", "included": "How much the plan includes.",
			"price": "The price of a unit beyond what is included.",
		})},
	}
	resp.Schema = schema.Schema{
		Description: "The plans a tenant can be on, with their limits and prices.",
		Attributes: map[string]schema.Attribute{
			"plans": schema.ListNestedAttribute{
				Computed:    true,
				Description: "Every plan, in the API's order.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":   schema.StringAttribute{Computed: true, Description: "starter, pro, business or enterprise."},
					"limits": schema.SingleNestedAttribute{Computed: true, Attributes: limits, Description: "The plan's limits."},
					"prices": schema.SingleNestedAttribute{Computed: true, Attributes: prices, Description: "The plan's prices."},
				}},
			},
		},
	}
}

func (d *plansDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *plansDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	state := plansModel{Plans: []planModel{}}
	// Every page (see the versions' Read).
	params := &tenantplane.ListPlansParams{}
	for {
		answer, err := d.client.api.ListPlansWithResponse(ctx, params)
		if err == nil {
			err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
		}
		if err != nil {
			addCallError(&resp.Diagnostics, "listing the plans", err)
			return
		}
		for _, plan := range answer.JSON200.Items {
			state.Plans = append(state.Plans, planOf(plan))
		}
		if answer.JSON200.Continue == nil {
			break
		}
		params.Continue = answer.JSON200.Continue
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func planOf(plan tenantplane.PlanRead) planModel {
	meters := []meterModel{}
	for _, meter := range plan.Prices.Observability {
		meters = append(meters, meterModel{
			Name: types.StringValue(meter.Name), Unit: types.StringValue(meter.Unit),
			Included: types.StringValue(meter.Included), Price: types.StringValue(meter.Price),
		})
	}
	return planModel{
		Name: types.StringValue(plan.Name),
		Limits: limitsModel{
			Clusters: types.Int64Value(int64(plan.Limits.Clusters)),
			CPU:      types.StringValue(plan.Limits.Cpu),
			Memory:   types.StringValue(plan.Limits.Memory),
			Storage:  types.StringValue(plan.Limits.Storage),
		},
		Prices: pricesModel{
			Currency:           types.StringValue(plan.Prices.Currency),
			PlatformFee:        types.StringValue(plan.Prices.PlatformFee),
			VCPUHour:           types.StringValue(plan.Prices.VcpuHour),
			MemoryGiBHour:      types.StringValue(plan.Prices.MemoryGibHour),
			StorageGiBHour:     types.StringValue(plan.Prices.StorageGibHour),
			HAControlPlaneHour: types.StringValue(plan.Prices.HaControlPlaneHour),
			Observability:      meters,
		},
	}
}
