package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// The alerting configuration is one document with one ETag (the wrapper's): every write of
// any part of it (another receiver, a route, a template) gives it a new one. An ETag kept in
// the state would therefore be stale after any other alerting resource of the same apply
// wrote. So an alerting resource keeps no version: right before it writes, it reads the
// current ETag together with its own item, compares the item with what Terraform last read,
// and writes with that ETag as If-Match. A 412 then means a write raced it; the item is read
// again and compared again, and only a change of THIS item is "changed outside Terraform".

// alertingAPI addresses one item (or section) of the alerting configuration.
type alertingAPI struct {
	get    func(ctx context.Context, client *apiClient, key string) (*http.Response, []byte, error)
	put    func(ctx context.Context, client *apiClient, key, etag string, body []byte) (*http.Response, []byte, error)
	delete func(ctx context.Context, client *apiClient, key, etag string) (*http.Response, []byte, error)
}

// currentItem is an item as read right now, with the configuration's ETag of that read.
type currentItem struct {
	found bool
	body  []byte
	etag  string
}

// readAlertingItem reads the item with the configuration's ETag. An absent item (404) has no
// ETag of its own: the configuration's is read, then the item again, so that the ETag is one
// under which the item was still absent (a creation racing in between gives a new ETag, and
// the write that names the old one is refused).
func readAlertingItem(ctx context.Context, client *apiClient, api alertingAPI, key string) (currentItem, error) {
	item, err := readAlertingItemOnly(ctx, client, api, key)
	if err != nil || item.found {
		return item, err
	}
	answer, err := client.api.GetAlertingConfigWithResponse(ctx, client.tenant, nil)
	if err == nil {
		err = tenantplane.ErrorOf(answer.HTTPResponse, answer.Body)
	}
	if err != nil {
		return currentItem{}, err
	}
	etag := answer.HTTPResponse.Header.Get("ETag")
	item, err = readAlertingItemOnly(ctx, client, api, key)
	if err != nil || item.found {
		return item, err
	}
	return currentItem{etag: etag}, nil
}

// readAlertingItemOnly reads the item alone: a refresh needs no ETag.
func readAlertingItemOnly(ctx context.Context, client *apiClient, api alertingAPI, key string) (currentItem, error) {
	resp, body, err := api.get(ctx, client, key)
	if err == nil {
		err = tenantplane.ErrorOf(resp, body)
	}
	if tenantplane.IsNotFound(err) {
		return currentItem{}, nil
	}
	if err != nil {
		return currentItem{}, err
	}
	if !json.Valid(body) {
		return currentItem{}, fmt.Errorf("tenantplane: an answer (HTTP %d, %s) without the JSON body expected",
			resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return currentItem{found: true, body: body, etag: resp.Header.Get("ETag")}, nil
}

// errChangedOutside is a write refused because the item is not what Terraform last read.
var errChangedOutside = errors.New(changedOutside)

// errAlreadyGone stops a deletion whose item is gone already.
var errAlreadyGone = errors.New("already gone")

// How many times a write is sent again after a 412 another part of the configuration caused.
// Each such 412 means another write went through, and OpenTofu and Terraform apply at most
// 10 resources at a time by default: every one of them may win before this one does.
const otherPartRetries = 16

// writeAlertingItem reads the item and its ETag, lets check decide whether the write may go
// ahead (its error stops it), and writes with If-Match; a 412 starts over (a few times).
func writeAlertingItem(ctx context.Context, client *apiClient, api alertingAPI, key string,
	check func(current currentItem) error, write func(etag string) (*http.Response, []byte, error),
) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		current, err := readAlertingItem(ctx, client, api, key)
		if err != nil {
			return nil, err
		}
		if err := check(current); err != nil {
			return nil, err
		}
		resp, body, err := write(current.etag)
		if err == nil {
			err = tenantplane.ErrorOf(resp, body)
		}
		if tenantplane.IsPreconditionFailed(err) && attempt <= otherPartRetries {
			continue
		}
		if tenantplane.IsPreconditionFailed(err) {
			return nil, fmt.Errorf("%w: %w", errChangedOutside, err)
		}
		return body, err
	}
}

// canonicalJSON is a JSON text as Terraform's jsonencode writes it: compact, object keys
// sorted, <, > and & escaped (Go's encoding/json does all three), so that a value read from
// the API after an import equals the configuration's jsonencode(...) exactly.
func canonicalJSON(text []byte) (string, error) {
	var value any
	if err := json.Unmarshal(text, &value); err != nil {
		return "", err
	}
	encoded, err := json.Marshal(value)
	return string(encoded), err
}

// sameJSON says whether two JSON texts are the same value (false when either is not JSON).
func sameJSON(a, b string) bool {
	left, err := canonicalJSON([]byte(a))
	if err != nil {
		return false
	}
	right, err := canonicalJSON([]byte(b))
	return err == nil && left == right
}

// jsonBody is a request body for the generated client's *WithBody methods.
func jsonBody(body []byte) (string, *bytes.Reader) {
	return "application/json", bytes.NewReader(body)
}

// quotedETag is the If-Match value for an ETag header's value (already quoted by the API).
func quotedETag(etag string) *string {
	if !strings.HasPrefix(etag, `"`) && !strings.HasPrefix(etag, "W/") {
		etag = `"` + etag + `"`
	}
	return &etag
}
