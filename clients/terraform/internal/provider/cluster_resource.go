package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// How long creation, an upgrade or resize, and deletion wait by default (the timeouts
// attribute overrides them).
const (
	defaultCreateTimeout = 30 * time.Minute
	defaultUpdateTimeout = 60 * time.Minute
	defaultDeleteTimeout = 30 * time.Minute
)

// tenantplane_cluster: a managed cluster, imported by its name.
type clusterResource struct{ client *apiClient }

func newClusterResource() resource.Resource { return &clusterResource{} }

var (
	_ resource.ResourceWithConfigure   = &clusterResource{}
	_ resource.ResourceWithImportState = &clusterResource{}
)

func (r *clusterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

func (r *clusterResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

// settle reads the connection details of “cluster“ into “state“, which then holds the
// cluster as the API has it.
func (r *clusterResource) settle(ctx context.Context, state *clusterModel, cluster *tenantplane.ClusterRead, diagnostics *diag.Diagnostics) {
	connection, err := r.client.connectionOf(ctx, cluster)
	if err != nil {
		addCallError(diagnostics, "reading the connection details of cluster "+cluster.Name, err)
		return
	}
	state.set(clusterFieldsOf(cluster, connection, diagnostics))
}

func (r *clusterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	timeout, timeoutDiagnostics := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(timeoutDiagnostics...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := plan.Name.ValueString()
	body := tenantplane.ClusterCreate{Name: name, Resources: resourcesIn(plan.Resources)}
	if !plan.Version.IsNull() && !plan.Version.IsUnknown() {
		version := plan.Version.ValueString()
		body.Version = &version
	}
	highAvailability := plan.HighAvailability.ValueBool()
	body.HighAvailability = &highAvailability
	answer, err := r.client.api.CreateClusterWithResponse(ctx, r.client.tenant, nil, body)
	if err == nil {
		err = answered(answer.HTTPResponse, answer.Body, answer.JSON201 != nil)
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "creating cluster "+name, err)
		return
	}
	for _, warning := range derefWarnings(answer.JSON201.Warnings) {
		resp.Diagnostics.AddAttributeWarning(path.Root(fieldAttribute(warning.Field)), "tenantplane: "+warning.Code, warning.Message)
	}
	// The cluster exists from here on: the state keeps it even if the wait fails (Terraform
	// then marks it tainted), so that it is never left behind unmanaged.
	plan.Connection = types.ObjectNull(connectionType.AttrTypes)
	plan.set(clusterFieldsOf(answer.JSON201, nil, &resp.Diagnostics))
	cluster, err := r.client.waitRunningAsDesired(ctx, name, 0, timeout)
	if err != nil {
		addCallError(&resp.Diagnostics, "waiting for the new cluster "+name, err)
	} else {
		r.settle(ctx, &plan, cluster, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *clusterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state clusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	cluster, err := r.client.getCluster(ctx, name)
	// Only a 404 means the cluster is gone (as for secrets: a 401, 403 or 5xx is an error).
	if tenantplane.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addCallError(&resp.Diagnostics, "reading cluster "+name, err)
		return
	}
	r.settle(ctx, &state, cluster, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *clusterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, prior clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	timeout, timeoutDiagnostics := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(timeoutDiagnostics...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := prior.Name.ValueString()
	var body tenantplane.ClusterUpdate
	if !plan.Version.IsUnknown() && !plan.Version.Equal(prior.Version) {
		version := plan.Version.ValueString()
		body.Version = &version
	}
	if !plan.Resources.Equal(prior.Resources) {
		body.Resources = resourcesIn(plan.Resources)
	}
	if body.Version == nil && body.Resources == nil {
		// Only the timeouts changed: nothing to ask of the API.
		prior.Timeouts = plan.Timeouts
		resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...)
		return
	}
	changed, sent := r.patch(ctx, prior, body, &resp.Diagnostics)
	if changed == nil {
		return
	}
	// No effective change (the cluster already had it): nothing for the reconciler to do.
	generation := 0
	if changed.ResourceVersion != sent {
		generation = changed.Status.ObservedGeneration + 1
	}
	state := prior
	state.Timeouts = plan.Timeouts
	state.set(clusterFieldsOf(changed, nil, &resp.Diagnostics))
	cluster, err := r.client.waitRunningAsDesired(ctx, name, generation, timeout)
	if err != nil {
		addCallError(&resp.Diagnostics, "waiting for cluster "+name+" to run the change", err)
	} else {
		r.settle(ctx, &state, cluster, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// patch sends the change with If-Match: the version in the state, or the current one after
// a 412 that changed nothing Terraform manages (the reconciler's status writes, which give
// the cluster a new version all the time, or its alerts). Answers the changed cluster and
// the version the change was sent with; nil when it failed (reported).
func (r *clusterResource) patch(ctx context.Context, prior clusterModel, body tenantplane.ClusterUpdate, diagnostics *diag.Diagnostics) (*tenantplane.ClusterRead, string) {
	name := prior.Name.ValueString()
	version := prior.ResourceVersion
	for attempt := 1; ; attempt++ {
		answer, err := r.client.api.UpdateClusterWithResponse(ctx, r.client.tenant, name,
			&tenantplane.UpdateClusterParams{IfMatch: ifMatch(version)}, body)
		if err == nil {
			err = answered(answer.HTTPResponse, answer.Body, answer.JSON200 != nil)
		}
		if tenantplane.IsPreconditionFailed(err) {
			if current, ok := r.versionIfOnlyStatusChanged(ctx, prior, attempt, diagnostics); ok {
				version = current
				continue
			}
			if !diagnostics.HasError() {
				diagnostics.AddError("tenantplane: cluster "+name+" "+changedOutside, err.Error())
			}
			return nil, ""
		}
		if err != nil {
			addCallError(diagnostics, "updating cluster "+name, err)
			return nil, ""
		}
		return answer.JSON200, version.ValueString()
	}
}

// versionIfOnlyStatusChanged reads the cluster again after a 412: when what Terraform
// manages (version, high availability, resources) is still what it last read, its
// current version and true; otherwise, or when the read fails (reported), false.
func (r *clusterResource) versionIfOnlyStatusChanged(ctx context.Context, prior clusterModel, attempt int, diagnostics *diag.Diagnostics) (types.String, bool) {
	if attempt > statusOnlyRetries {
		return types.String{}, false
	}
	name := prior.Name.ValueString()
	cluster, err := r.client.getCluster(ctx, name)
	if tenantplane.IsNotFound(err) {
		return types.String{}, false
	}
	if err != nil {
		addCallError(diagnostics, "reading cluster "+name+" again after its 412", err)
		return types.String{}, false
	}
	current := clusterFieldsOf(cluster, nil, diagnostics)
	unchanged := current.Version.Equal(prior.Version) && current.HighAvailability.Equal(prior.HighAvailability) &&
		current.Resources.Equal(prior.Resources)
	return current.ResourceVersion, unchanged && !diagnostics.HasError()
}

func (r *clusterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var prior clusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	timeout, timeoutDiagnostics := prior.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(timeoutDiagnostics...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := prior.Name.ValueString()
	version := prior.ResourceVersion
	for attempt := 1; ; attempt++ {
		answer, err := r.client.api.DeleteClusterWithResponse(ctx, r.client.tenant, name,
			&tenantplane.DeleteClusterParams{IfMatch: ifMatch(version)})
		if err == nil {
			err = tenantplane.ErrorOf(answer.HTTPResponse, answer.Body)
		}
		switch {
		case tenantplane.IsNotFound(err):
			return // already gone: what deletion wanted
		case tenantplane.IsPreconditionFailed(err):
			if current, ok := r.versionIfOnlyStatusChanged(ctx, prior, attempt, &resp.Diagnostics); ok {
				version = current
				continue
			}
			if !resp.Diagnostics.HasError() {
				resp.Diagnostics.AddError("tenantplane: cluster "+name+" "+changedOutside, err.Error())
			}
			return
		case err != nil:
			addCallError(&resp.Diagnostics, "deleting cluster "+name, err)
			return
		}
		if err := r.client.waitGone(ctx, name, timeout); err != nil {
			addCallError(&resp.Diagnostics, "waiting for cluster "+name+" to be deleted", err)
		}
		return
	}
}

// ImportState takes the cluster's name; Read fills in the rest (the timeouts stay unset).
func (r *clusterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("name"), req, resp)
}

func derefWarnings(warnings *[]tenantplane.ApiWarning) []tenantplane.ApiWarning {
	if warnings == nil {
		return nil
	}
	return *warnings
}

// fieldAttribute is the attribute an API field is (highAvailability: high_availability).
func fieldAttribute(field string) string {
	if field == "highAvailability" {
		return "high_availability"
	}
	return field
}
