// Package provider is the tenantplane provider: its configuration, data sources and resources,
// calling the API through the Go client (clients/go).
package provider

import (
	"context"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// The environment variables each setting falls back to (the same names as the Go client's
// integration tests use; tpctl's are TPCTL_*).
const (
	urlVariable    = "TENANTPLANE_URL"
	tenantVariable = "TENANTPLANE_TENANT"
	apiKeyVariable = "TENANTPLANE_API_KEY"
	tokenVariable  = "TENANTPLANE_TOKEN"
)

// New makes the provider of the given version (the User-Agent carries it).
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &tenantplaneProvider{version: version} }
}

type tenantplaneProvider struct {
	version string
}

type providerModel struct {
	URL    types.String `tfsdk:"url"`
	Tenant types.String `tfsdk:"tenant"`
	APIKey types.String `tfsdk:"api_key"`
	Token  types.String `tfsdk:"token"`
}

// apiClient is what data sources and resources are configured with: the client and the
// tenant every call is addressed to.
type apiClient struct {
	api    *tenantplane.Client
	tenant string
}

func (p *tenantplaneProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "tenantplane"
	resp.Version = p.version
}

func (p *tenantplaneProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Manages a tenant of the tenantplane platform API.",
		Attributes: map[string]schema.Attribute{
			"url": schema.StringAttribute{
				Optional:    true,
				Description: "The server's origin, e.g. https://tenantplane.example.com (the API's paths begin with /api/v1). Default: " + urlVariable + ".",
			},
			"tenant": schema.StringAttribute{
				Optional:    true,
				Description: "The tenant every resource belongs to. Default: " + tenantVariable + ".",
			},
			"api_key": schema.StringAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "An API key of the tenant (svc_…). Default: " + apiKeyVariable + ". Give it or token, not both.",
			},
			"token": schema.StringAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "An OIDC identity token of a member. Default: " + tokenVariable + ". Give it or api_key, not both.",
			},
		},
	}
}

// setting is the configured value, else the environment's, else "".
func setting(configured types.String, variable string) string {
	if !configured.IsNull() && !configured.IsUnknown() {
		return configured.ValueString()
	}
	return os.Getenv(variable)
}

func (p *tenantplaneProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var config providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// A value known only after another resource is applied: the provider cannot be set up
	// yet (Terraform configures it again once the value is known).
	for name, value := range map[string]types.String{"url": config.URL, "tenant": config.Tenant, "api_key": config.APIKey, "token": config.Token} {
		if value.IsUnknown() {
			resp.Diagnostics.AddAttributeError(path.Root(name), "Unknown tenantplane "+name,
				"The provider's "+name+" depends on a value not known until apply; set it to a known value.")
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	url := setting(config.URL, urlVariable)
	tenant := setting(config.Tenant, tenantVariable)
	apiKey := setting(config.APIKey, apiKeyVariable)
	token := setting(config.Token, tokenVariable)
	if url == "" {
		resp.Diagnostics.AddAttributeError(path.Root("url"), "Missing tenantplane URL",
			"Set url in the provider block or "+urlVariable+" to the server's origin, e.g. https://tenantplane.example.com.")
	}
	if tenant == "" {
		resp.Diagnostics.AddAttributeError(path.Root("tenant"), "Missing tenant",
			"Set tenant in the provider block or "+tenantVariable+" to the tenant's name.")
	}
	switch {
	case apiKey == "" && token == "":
		resp.Diagnostics.AddAttributeError(path.Root("api_key"), "Missing credential",
			"Set api_key (or "+apiKeyVariable+") to an API key of the tenant, or token (or "+tokenVariable+") to an OIDC token.")
	case apiKey != "" && token != "":
		resp.Diagnostics.AddAttributeError(path.Root("token"), "Both an API key and a token",
			"api_key (or "+apiKeyVariable+") and token (or "+tokenVariable+") are both set; give one of them.")
	}
	if resp.Diagnostics.HasError() {
		return
	}
	credential := tenantplane.WithAPIKey(apiKey)
	if token != "" {
		credential = tenantplane.WithToken(token)
	}
	client, err := tenantplane.New(url, credential,
		tenantplane.WithUserAgent("terraform-provider-tenantplane/"+p.version))
	if err != nil {
		resp.Diagnostics.AddError("Invalid tenantplane provider configuration", err.Error())
		return
	}
	configured := &apiClient{api: client, tenant: tenant}
	resp.DataSourceData = configured
	resp.ResourceData = configured
}

func (p *tenantplaneProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		newSecretResource,
		newClusterResource, newMemberResource, newAPIKeyResource,
		newAlertingReceiverResource, newAlertingRouteResource, newAlertingGlobalResource,
		newAlertingTemplateResource, newAlertingTimeIntervalResource,
	}
}

func (p *tenantplaneProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newVersionsDataSource, newPlansDataSource, newTenantDataSource, newClusterDataSource, newSecretsDataSource}
}
