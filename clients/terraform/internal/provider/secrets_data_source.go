package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// defaultSecretsPageSize is how many secrets each request of tenantplane_secrets asks for
// unless page_size says otherwise.
const defaultSecretsPageSize = 500

// tenantplane_secrets: every secret of the tenant, read page by page to the last.
type secretsDataSource struct{ client *apiClient }

func newSecretsDataSource() datasource.DataSource { return &secretsDataSource{} }

var _ datasource.DataSourceWithValidateConfig = &secretsDataSource{}

// The API's range of limit: refused before any request.
const (
	minPageSize = 1
	maxPageSize = 1000
)

type secretsModel struct {
	PageSize types.Int64       `tfsdk:"page_size"`
	Secrets  []listedSecretRow `tfsdk:"secrets"`
}

type listedSecretRow struct {
	Name       types.String `tfsdk:"name"`
	SecretPath types.String `tfsdk:"secret_path"`
	Sync       types.List   `tfsdk:"sync"`
	Phase      types.String `tfsdk:"phase"`
	CreatedAt  types.String `tfsdk:"created_at"`
}

func (d *secretsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_secrets"
}

func (d *secretsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Every managed secret of the tenant (their paths and sync targets; never a value), " +
			"read page by page to the last page.",
		Attributes: map[string]schema.Attribute{
			"page_size": schema.Int64Attribute{
				Optional:    true,
				Description: "How many secrets each request asks for (the API's limit, 1-1000). Default: 500. It changes the number of requests, never the result.",
			},
			"secrets": schema.ListNestedAttribute{
				Computed:    true,
				Description: "Every secret, sorted by name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":        schema.StringAttribute{Computed: true, Description: "The secret's name."},
					"secret_path": schema.StringAttribute{Computed: true, Description: "Its path in the tenant's vault."},
					"sync": schema.ListNestedAttribute{
						Computed:    true,
						Description: "The namespaces it is synced into.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"cluster":     schema.StringAttribute{Computed: true, Description: "A cluster of the tenant."},
							"namespace":   schema.StringAttribute{Computed: true, Description: "The namespace in that cluster."},
							"secret_name": schema.StringAttribute{Computed: true, Description: "The name of the copy in the cluster."},
						}},
					},
					"phase":      schema.StringAttribute{Computed: true, Description: "The sync's phase (Synced once every target holds the value)."},
					"created_at": schema.StringAttribute{Computed: true, Description: "When the secret was created (RFC 3339)."},
				}},
			},
		},
	}
}

func (d *secretsDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var pageSize types.Int64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("page_size"), &pageSize)...)
	if pageSize.IsNull() || pageSize.IsUnknown() {
		return
	}
	if size := pageSize.ValueInt64(); size < minPageSize || size > maxPageSize {
		resp.Diagnostics.AddAttributeError(path.Root("page_size"), "Invalid page_size",
			"page_size must be between 1 and 1000 (the API's limit).")
	}
}

func (d *secretsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

func (d *secretsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var config secretsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	limit := defaultSecretsPageSize
	if !config.PageSize.IsNull() {
		limit = int(config.PageSize.ValueInt64())
	}
	secrets, err := tenantplane.AllPages(ctx, func(ctx context.Context, token *string) (tenantplane.Page[tenantplane.SecretRead], error) {
		answer, err := d.client.api.ListSecretsWithResponse(ctx, d.client.tenant,
			&tenantplane.ListSecretsParams{Limit: &limit, Continue: token})
		if err == nil {
			err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
		}
		if err != nil {
			return tenantplane.Page[tenantplane.SecretRead]{}, err
		}
		return tenantplane.Page[tenantplane.SecretRead]{Items: answer.JSON200.Items, Continue: answer.JSON200.Continue}, nil
	})
	if err != nil {
		addCallError(&resp.Diagnostics, "listing the secrets", err)
		return
	}
	state := secretsModel{PageSize: config.PageSize, Secrets: make([]listedSecretRow, 0, len(secrets))}
	for i := range secrets {
		secret := secretState(ctx, &secrets[i], &resp.Diagnostics)
		state.Secrets = append(state.Secrets, listedSecretRow{
			Name: secret.Name, SecretPath: secret.SecretPath, Sync: secret.Sync,
			Phase: secret.Phase, CreatedAt: secret.CreatedAt,
		})
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}
