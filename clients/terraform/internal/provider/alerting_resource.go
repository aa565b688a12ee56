package provider

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// How an alerting resource names its item.
type alertingKey int

const (
	keyedByName  alertingKey = iota // a string attribute (receiver, template, time interval)
	keyedByIndex                    // an integer attribute (a child route's index)
	singleton                       // none: one section of the tenant (global), id "global"
)

// singletonID is the id (and import id) of a singleton alerting resource.
const singletonID = "global"

// alertingKind is one alerting resource: its names, its two attributes (the item's key and
// its value), and how the value maps to the API's item.
type alertingKind struct {
	typeName       string // after "tenantplane_"
	what           string // in messages: "receiver"
	description    string
	key            alertingKey
	keyAttribute   string
	keyDescription string
	valueAttribute string
	valueDescribed string
	valueIsJSON    bool // compared as JSON values (else as text)
	sensitive      bool
	// toAPI is the PUT body for the key and the configured value; fromAPI the value of the
	// item the API answered.
	toAPI   func(key, value string) ([]byte, error)
	fromAPI func(body []byte) (string, error)
	api     alertingAPI
}

type alertingResource struct {
	kind   alertingKind
	client *apiClient
}

var (
	_ resource.ResourceWithConfigure   = &alertingResource{}
	_ resource.ResourceWithImportState = &alertingResource{}
)

func (r *alertingResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.kind.typeName
}

func (r *alertingResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attributes := map[string]schema.Attribute{
		r.kind.valueAttribute: schema.StringAttribute{
			Required:    true,
			Sensitive:   r.kind.sensitive,
			Description: r.kind.valueDescribed,
		},
	}
	switch r.kind.key {
	case keyedByName:
		attributes[r.kind.keyAttribute] = schema.StringAttribute{
			Required:      true,
			Description:   r.kind.keyDescription,
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		}
	case keyedByIndex:
		attributes[r.kind.keyAttribute] = schema.Int64Attribute{
			Required:      true,
			Description:   r.kind.keyDescription,
			PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()},
		}
	case singleton:
		attributes[r.kind.keyAttribute] = schema.StringAttribute{
			Computed:      true,
			Description:   r.kind.keyDescription,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		}
	}
	resp.Schema = schema.Schema{Description: r.kind.description, Attributes: attributes}
}

func (r *alertingResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.client = configuredClient(req.ProviderData, &resp.Diagnostics)
}

// keyOf is the item's key in the API's path, from a plan or a state.
func (r *alertingResource) keyOf(ctx context.Context, data interface {
	GetAttribute(context.Context, path.Path, any) diag.Diagnostics
}, diagnostics *diag.Diagnostics,
) string {
	switch r.kind.key {
	case keyedByIndex:
		var index types.Int64
		diagnostics.Append(data.GetAttribute(ctx, path.Root(r.kind.keyAttribute), &index)...)
		return strconv.FormatInt(index.ValueInt64(), 10)
	case singleton:
		return singletonID
	default:
		var name types.String
		diagnostics.Append(data.GetAttribute(ctx, path.Root(r.kind.keyAttribute), &name)...)
		return name.ValueString()
	}
}

func (r *alertingResource) valueOf(ctx context.Context, data interface {
	GetAttribute(context.Context, path.Path, any) diag.Diagnostics
}, diagnostics *diag.Diagnostics,
) types.String {
	var value types.String
	diagnostics.Append(data.GetAttribute(ctx, path.Root(r.kind.valueAttribute), &value)...)
	return value
}

// same says whether a value read from the API is the one Terraform holds.
func (r *alertingResource) same(read, held string) bool {
	if r.kind.valueIsJSON {
		return sameJSON(read, held)
	}
	return read == held
}

// unchangedSince is the check of an update or deletion: the item is still the one
// Terraform last read (held), else the write would overwrite a change made outside it.
func (r *alertingResource) unchangedSince(held string) func(currentItem) error {
	return func(current currentItem) error {
		if !current.found {
			return errChangedOutside
		}
		value, err := r.kind.fromAPI(current.body)
		if err != nil {
			return err
		}
		if !r.same(value, held) {
			return errChangedOutside
		}
		return nil
	}
}

// addWriteError reports a failed write, a change outside Terraform in the clear words.
func (r *alertingResource) addWriteError(diagnostics *diag.Diagnostics, doing, key string, err error) {
	if errors.Is(err, errChangedOutside) {
		diagnostics.AddError("tenantplane: "+r.kind.what+" "+key+" "+changedOutside, err.Error())
		return
	}
	addCallError(diagnostics, doing+" "+r.kind.what+" "+key, err)
}

func (r *alertingResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	key := r.keyOf(ctx, req.Plan, &resp.Diagnostics)
	value := r.valueOf(ctx, req.Plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	body, err := r.kind.toAPI(key, value.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root(r.kind.valueAttribute), "Invalid "+r.kind.valueAttribute, err.Error())
		return
	}
	absent := func(current currentItem) error {
		// Creating over an item that exists would replace someone's: import it instead. The
		// singleton always exists; creating it takes the section over.
		if current.found && r.kind.key != singleton {
			return errors.New(r.kind.what + " " + key + " already exists: import it to manage it")
		}
		return nil
	}
	put := func(etag string) (*http.Response, []byte, error) {
		return r.kind.api.put(ctx, r.client, key, etag, body)
	}
	if _, err := writeAlertingItem(ctx, r.client, r.kind.api, key, absent, put); err != nil {
		r.addWriteError(&resp.Diagnostics, "creating", key, err)
		return
	}
	// The configured text, not the API's answer: Terraform requires the planned value, and
	// the next refresh compares the API's with it as a JSON value.
	r.setState(ctx, &resp.State, key, value, &resp.Diagnostics)
}

func (r *alertingResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	key := r.keyOf(ctx, req.State, &resp.Diagnostics)
	held := r.valueOf(ctx, req.State, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	current, err := readAlertingItemOnly(ctx, r.client, r.kind.api, key)
	if err != nil {
		// A 401, 403 or 5xx says nothing of the item: it stays in the state.
		addCallError(&resp.Diagnostics, "reading "+r.kind.what+" "+key, err)
		return
	}
	if !current.found {
		// Only a 404 means it is gone.
		resp.State.RemoveResource(ctx)
		return
	}
	read, err := r.kind.fromAPI(current.body)
	if err != nil {
		addCallError(&resp.Diagnostics, "reading "+r.kind.what+" "+key, err)
		return
	}
	value := types.StringValue(read)
	// The same value as held, written another way (spacing, key order): the text held stays,
	// so that a plan shows nothing.
	if !held.IsNull() && r.same(read, held.ValueString()) {
		value = held
	}
	r.setState(ctx, &resp.State, key, value, &resp.Diagnostics)
}

func (r *alertingResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	key := r.keyOf(ctx, req.State, &resp.Diagnostics)
	held := r.valueOf(ctx, req.State, &resp.Diagnostics)
	value := r.valueOf(ctx, req.Plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	body, err := r.kind.toAPI(key, value.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root(r.kind.valueAttribute), "Invalid "+r.kind.valueAttribute, err.Error())
		return
	}
	put := func(etag string) (*http.Response, []byte, error) {
		return r.kind.api.put(ctx, r.client, key, etag, body)
	}
	if _, err := writeAlertingItem(ctx, r.client, r.kind.api, key, r.unchangedSince(held.ValueString()), put); err != nil {
		r.addWriteError(&resp.Diagnostics, "updating", key, err)
		return
	}
	r.setState(ctx, &resp.State, key, value, &resp.Diagnostics)
}

func (r *alertingResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	key := r.keyOf(ctx, req.State, &resp.Diagnostics)
	held := r.valueOf(ctx, req.State, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	check := func(current currentItem) error {
		if !current.found {
			return errAlreadyGone
		}
		return r.unchangedSince(held.ValueString())(current)
	}
	remove := func(etag string) (*http.Response, []byte, error) {
		return r.kind.api.delete(ctx, r.client, key, etag)
	}
	_, err := writeAlertingItem(ctx, r.client, r.kind.api, key, check, remove)
	// Gone already (or by the time the deletion came): what deletion wanted.
	if err != nil && !errors.Is(err, errAlreadyGone) && !tenantplane.IsNotFound(err) {
		r.addWriteError(&resp.Diagnostics, "deleting", key, err)
	}
}

func (r *alertingResource) setState(ctx context.Context, state *tfsdk.State, key string, value types.String, diagnostics *diag.Diagnostics) {
	switch r.kind.key {
	case keyedByIndex:
		index, err := strconv.ParseInt(key, 10, 64)
		if err != nil {
			diagnostics.AddError("Invalid index", err.Error())
			return
		}
		diagnostics.Append(state.SetAttribute(ctx, path.Root(r.kind.keyAttribute), types.Int64Value(index))...)
	default:
		diagnostics.Append(state.SetAttribute(ctx, path.Root(r.kind.keyAttribute), types.StringValue(key))...)
	}
	diagnostics.Append(state.SetAttribute(ctx, path.Root(r.kind.valueAttribute), value)...)
}

// ImportState takes the item's key (a route's index as a number; "global" for the singleton);
// Read fills in the value.
func (r *alertingResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	switch r.kind.key {
	case keyedByIndex:
		index, err := strconv.ParseInt(req.ID, 10, 64)
		if err != nil || index < 0 {
			resp.Diagnostics.AddError("Invalid import id", "A "+r.kind.what+" is imported by its 0-based index, e.g. 0; got "+strconv.Quote(req.ID)+".")
			return
		}
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(r.kind.keyAttribute), types.Int64Value(index))...)
	case singleton:
		if req.ID != singletonID {
			resp.Diagnostics.AddError("Invalid import id", "The "+r.kind.what+" is imported as "+strconv.Quote(singletonID)+"; got "+strconv.Quote(req.ID)+".")
			return
		}
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(r.kind.keyAttribute), types.StringValue(singletonID))...)
	default:
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(r.kind.keyAttribute), types.StringValue(req.ID))...)
	}
}
