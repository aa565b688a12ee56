package provider

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// errGoneAfterWrite: a read right after a successful write answered 404 (the object was
// removed in between).
var errGoneAfterWrite = errors.New("tenantplane: not found right after it was written (removed in between?)")

// oneOf refuses, at plan time, a string that is not one of the values the API accepts.
type oneOf []string

func (v oneOf) Description(context.Context) string {
	return "one of " + strings.Join(v, ", ")
}

func (v oneOf) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v oneOf) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if !slices.Contains(v, req.ConfigValue.ValueString()) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value",
			"Expected one of "+strings.Join(v, ", ")+", got "+req.ConfigValue.String()+".")
	}
}
