//go:build integration

package tenantplane

// The client against a real `tenantplane serve` (tests/clients/test_go_client.py starts one
// and runs `go test -tags integration -run Integration` with TENANTPLANE_URL,
// TENANTPLANE_TENANT and TENANTPLANE_API_KEY): one cluster's life, and the API's errors as
// *APIError.

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// How long the simulator may take to make a cluster Running or gone.
const settleDeadline = 60 * time.Second

func TestIntegrationClusterLifecycle(t *testing.T) {
	ctx := t.Context()
	tenant := os.Getenv("TENANTPLANE_TENANT")
	client, err := New(os.Getenv("TENANTPLANE_URL"), WithAPIKey(os.Getenv("TENANTPLANE_API_KEY")),
		WithRetryPolicy(RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}

	versions, err := client.ListVersionsWithResponse(ctx, nil)
	must(t, err, versions.HTTPResponse, versions.Body)
	var names []string
	for _, version := range versions.JSON200.Items {
		names = append(names, version.Version)
	}
	slices.SortFunc(names, compareVersions)
	if len(names) < 2 {
		t.Fatalf("versions %v: an upgrade needs two", names)
	}
	plans, err := client.ListPlansWithResponse(ctx, nil)
	must(t, err, plans.HTTPResponse, plans.Body)
	if len(plans.JSON200.Items) == 0 {
		t.Fatal("no plans")
	}

	// The client gives the POST an Idempotency-Key of its own.
	resources := &ResourcesInput{Cpu: ptr("1"), Memory: ptr("1Gi"), Storage: ptr("1Gi")}
	create := ClusterCreate{Name: "go-web", Version: &names[0], Resources: resources}
	created, err := client.CreateClusterWithResponse(ctx, tenant, nil, create)
	must(t, err, created.HTTPResponse, created.Body)
	if created.StatusCode() != 201 || created.JSON201.Name != "go-web" || created.JSON201.Version != names[0] {
		t.Fatalf("created: %d %s", created.StatusCode(), created.Body)
	}
	staleETag := created.HTTPResponse.Header.Get("ETag")
	if staleETag == "" {
		t.Fatal("the create's answer has no ETag")
	}
	// Another POST is another key: the name is taken, not the first answer replayed.
	again, err := client.CreateClusterWithResponse(ctx, tenant, nil, create)
	if err != nil || !IsConflict(ErrorOf(again.HTTPResponse, again.Body)) {
		t.Fatalf("a second create: %v %s", err, again.Body)
	}

	running := waitFor(t, client, tenant, "go-web", func(cluster *GetClusterResponse) bool {
		return cluster.StatusCode() == 200 && cluster.JSON200.Status.Phase == "Running"
	})
	if running.Headers200 == nil || running.Headers200.ETag == nil {
		t.Fatal("GET answered no ETag")
	}

	missing, err := client.GetClusterWithResponse(ctx, tenant, "go-missing", nil)
	if err != nil {
		t.Fatal(err)
	}
	var notFound *APIError
	if !errors.As(ErrorOf(missing.HTTPResponse, missing.Body), &notFound) ||
		notFound.Status != 404 || notFound.Code != "NOT_FOUND" || notFound.RequestID == "" {
		t.Fatalf("a missing cluster: %+v", notFound)
	}

	upgraded := updateWithIfMatch(t, client, tenant, "go-web", ClusterUpdate{Version: &names[1]})
	if upgraded.Version != names[1] {
		t.Fatalf("upgraded to %q, want %q", upgraded.Version, names[1])
	}

	stale, err := client.UpdateClusterWithResponse(ctx, tenant, "go-web",
		&UpdateClusterParams{IfMatch: &staleETag}, ClusterUpdate{Version: &names[0]})
	if err != nil {
		t.Fatal(err)
	}
	if failed := ErrorOf(stale.HTTPResponse, stale.Body); !IsPreconditionFailed(failed) {
		t.Fatalf("a PATCH with the stale ETag %s: %v", staleETag, failed)
	}

	deleted, err := client.DeleteClusterWithResponse(ctx, tenant, "go-web", nil)
	must(t, err, deleted.HTTPResponse, deleted.Body)
	waitFor(t, client, tenant, "go-web", func(cluster *GetClusterResponse) bool {
		return IsNotFound(ErrorOf(cluster.HTTPResponse, cluster.Body))
	})
}

// updateWithIfMatch reads the cluster and its ETag and sends update with If-Match; on a 412
// (the simulator changed its status in between) it reads again and resends, up to 3 times,
// as the spec advises.
func updateWithIfMatch(t *testing.T, client *Client, tenant, name string, update ClusterUpdate) ClusterRead {
	t.Helper()
	for range 3 {
		current, err := client.GetClusterWithResponse(t.Context(), tenant, name, nil)
		must(t, err, current.HTTPResponse, current.Body)
		updated, err := client.UpdateClusterWithResponse(t.Context(), tenant, name,
			&UpdateClusterParams{IfMatch: current.Headers200.ETag}, update)
		if err != nil {
			t.Fatal(err)
		}
		failed := ErrorOf(updated.HTTPResponse, updated.Body)
		if failed == nil {
			return *updated.JSON200
		}
		if !IsPreconditionFailed(failed) {
			t.Fatal(failed)
		}
	}
	t.Fatalf("%s changed between each read and its update", name)
	return ClusterRead{}
}

// waitFor polls the cluster until done says so, for settleDeadline at most.
func waitFor(t *testing.T, client *Client, tenant, name string, done func(*GetClusterResponse) bool) *GetClusterResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), settleDeadline)
	defer cancel()
	for {
		cluster, err := client.GetClusterWithResponse(ctx, tenant, name, nil)
		if err != nil {
			t.Fatalf("waiting for %s: %v", name, err)
		}
		if done(cluster) {
			return cluster
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not get there: %s", name, cluster.Body)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func must(t *testing.T, err error, response *http.Response, body []byte) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := ErrorOf(response, body); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](value T) *T { return &value }

// compareVersions orders "<major>.<minor>" by number (1.9 before 1.10).
func compareVersions(a, b string) int {
	parts := func(version string) []int {
		var numbers []int
		for _, part := range strings.Split(version, ".") {
			number, _ := strconv.Atoi(part)
			numbers = append(numbers, number)
		}
		return numbers
	}
	return slices.Compare(parts(a), parts(b))
}
