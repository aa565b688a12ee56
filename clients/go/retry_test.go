package tenantplane

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The retry rules against httptest servers: the faults a real server cannot be made to
// produce on demand (a dropped connection, a 503, a 429). Sleeps are recorded, not waited.

// seen is one request as the server received it.
type seen struct {
	method, idempotencyKey, ifMatch, authorization, userAgent, body string
}

// fakeAPI answers the requests in turn with answers[i] (the last one again once they run
// out) and records what it received.
type fakeAPI struct {
	mu       sync.Mutex
	requests []seen
	answers  []func(http.ResponseWriter, *http.Request)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, seen{
		method:         r.Method,
		idempotencyKey: r.Header.Get("Idempotency-Key"),
		ifMatch:        r.Header.Get("If-Match"),
		authorization:  r.Header.Get("Authorization"),
		userAgent:      r.Header.Get("User-Agent"),
		body:           string(body),
	})
	answer := f.answers[min(len(f.requests), len(f.answers))-1]
	f.mu.Unlock()
	answer(w, r)
}

func (f *fakeAPI) seen() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.requests...)
}

func status(code int, headers ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		// Each request on a connection of its own: net/http resends by itself a replayable
		// request whose reused connection dropped, which would hide the policy's retries.
		w.Header().Set("Connection", "close")
		w.WriteHeader(code)
		if code >= 400 {
			_, _ = io.WriteString(w, `{"error": "injected", "code": "INJECTED"}`)
		} else {
			_, _ = io.WriteString(w, `{"items": []}`)
		}
	}
}

// dropped closes the connection without an answer.
func dropped(w http.ResponseWriter, _ *http.Request) {
	connection, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	connection.Close()
}

// recorder is a RetryPolicy's Sleep that records the waits asked for and returns at once.
type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

// start serves answers and gives a client of it whose jitter is always `random`.
func start(t *testing.T, random float64, answers ...func(http.ResponseWriter, *http.Request)) (*fakeAPI, *recorder, *Client) {
	t.Helper()
	api := &fakeAPI{answers: answers}
	server := httptest.NewServer(api)
	t.Cleanup(server.Close)
	waits := &recorder{}
	client, err := New(server.URL, WithAPIKey("svc_test"), WithRetryPolicy(RetryPolicy{
		Random: func() float64 { return random },
		Sleep:  waits.sleep,
	}))
	if err != nil {
		t.Fatal(err)
	}
	return api, waits, client
}

func methods(requests []seen) []string {
	var names []string
	for _, request := range requests {
		names = append(names, request.method)
	}
	return names
}

func equalWaits(t *testing.T, got []time.Duration, want ...time.Duration) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
}

func TestADroppedConnectionIsRetriedWithBackoff(t *testing.T) {
	api, waits, client := start(t, 0.5, dropped, status(200))
	answer, err := client.GetPlanWithResponse(t.Context(), "starter")
	if err != nil {
		t.Fatal(err)
	}
	if answer.StatusCode() != 200 || len(api.seen()) != 2 {
		t.Fatalf("status %d after %d requests", answer.StatusCode(), len(api.seen()))
	}
	equalWaits(t, waits.waits, 500*time.Millisecond) // half of the first ceiling, 1 s
}

func TestA503IsRetriedThenTheAnswerIsTheSecond(t *testing.T) {
	api, waits, client := start(t, 0.25, status(503), status(200))
	answer, err := client.GetPlanWithResponse(t.Context(), "starter")
	if err != nil {
		t.Fatal(err)
	}
	if answer.StatusCode() != 200 || answer.JSON200 == nil || len(api.seen()) != 2 {
		t.Fatalf("status %d after %d requests", answer.StatusCode(), len(api.seen()))
	}
	equalWaits(t, waits.waits, 250*time.Millisecond)
}

func TestA429WaitsRetryAfterCappedAtTheMaximum(t *testing.T) {
	_, waits, client := start(t, 0.5,
		status(429, "Retry-After", "7"), status(429, "Retry-After", "120"), status(429), status(200))
	answer, err := client.GetPlanWithResponse(t.Context(), "starter")
	if err != nil || answer.StatusCode() != 200 {
		t.Fatalf("%v %v", answer, err)
	}
	// Retry-After as said, then capped at 30 s, then (none said) the third attempt's backoff.
	equalWaits(t, waits.waits, 7*time.Second, 30*time.Second, 2*time.Second)
}

func TestFiveAttemptsAtMostWithDoublingCeilings(t *testing.T) {
	api, waits, client := start(t, 1, status(500))
	answer, err := client.GetPlanWithResponse(t.Context(), "starter")
	if err != nil {
		t.Fatal(err)
	}
	if len(api.seen()) != 5 || answer.StatusCode() != 500 {
		t.Fatalf("%d requests, last answered %d", len(api.seen()), answer.StatusCode())
	}
	equalWaits(t, waits.waits, time.Second, 2*time.Second, 4*time.Second, 8*time.Second)
	var apiError *APIError
	if err := ErrorOf(answer.HTTPResponse, answer.Body); !errors.As(err, &apiError) || apiError.Code != "INJECTED" {
		t.Fatalf("the last answer's error: %v", err)
	}
}

func TestTheBackoffCeilingStopsAtMaxDelay(t *testing.T) {
	policy := DefaultRetryPolicy()
	policy.Random = func() float64 { return 1 }
	var ceilings []time.Duration
	for attempt := 1; attempt <= 8; attempt++ {
		ceilings = append(ceilings, policy.backoff(attempt))
	}
	equalWaits(t, ceilings, time.Second, 2*time.Second, 4*time.Second, 8*time.Second,
		16*time.Second, 30*time.Second, 30*time.Second, 30*time.Second)
}

func TestAPostCarriesOneIdempotencyKeyOnEveryAttempt(t *testing.T) {
	api, _, client := start(t, 0, status(503), dropped, status(201))
	answer, err := client.CreateClusterWithResponse(t.Context(), "acme", nil, ClusterCreate{Name: "web"})
	if err != nil || answer.StatusCode() != 201 {
		t.Fatalf("%v %v", answer, err)
	}
	requests := api.seen()
	if len(requests) != 3 {
		t.Fatalf("%d requests", len(requests))
	}
	key := requests[0].idempotencyKey
	if len(key) != 38 || !strings.HasPrefix(key, `"`) || !strings.HasSuffix(key, `"`) {
		t.Fatalf("Idempotency-Key %q is not a quoted UUID", key)
	}
	for _, request := range requests {
		if request.idempotencyKey != key || request.body != `{"name":"web"}` {
			t.Fatalf("attempts differ: %+v", requests)
		}
	}
}

func TestTheCallersIdempotencyKeyIsKept(t *testing.T) {
	api, _, client := start(t, 0, status(503), status(201))
	mine := `"mine-1"`
	_, err := client.CreateClusterWithResponse(t.Context(), "acme",
		&CreateClusterParams{IdempotencyKey: &mine}, ClusterCreate{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, request := range api.seen() {
		if request.idempotencyKey != mine {
			t.Fatalf("Idempotency-Key %q, want %q", request.idempotencyKey, mine)
		}
	}
	if len(api.seen()) != 2 {
		t.Fatalf("%d requests", len(api.seen()))
	}
}

func TestAPostWithoutIdempotencyKeyIsNotRetried(t *testing.T) {
	api := &fakeAPI{answers: []func(http.ResponseWriter, *http.Request){status(503), status(201)}}
	server := httptest.NewServer(api)
	t.Cleanup(server.Close)
	client, err := New(server.URL, WithIdempotencyKeys(false))
	if err != nil {
		t.Fatal(err)
	}
	answer, err := client.CreateClusterWithResponse(t.Context(), "acme", nil, ClusterCreate{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if answer.StatusCode() != 503 || len(api.seen()) != 1 || api.seen()[0].idempotencyKey != "" {
		t.Fatalf("status %d, requests %+v", answer.StatusCode(), api.seen())
	}
}

func TestADroppedPostWithoutIdempotencyKeyIsNotRetried(t *testing.T) {
	api := &fakeAPI{answers: []func(http.ResponseWriter, *http.Request){dropped, status(201)}}
	server := httptest.NewServer(api)
	t.Cleanup(server.Close)
	client, err := New(server.URL, WithIdempotencyKeys(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateClusterWithResponse(t.Context(), "acme", nil, ClusterCreate{Name: "web"}); err == nil {
		t.Fatal("a dropped POST without a key answered")
	}
	if len(api.seen()) != 1 {
		t.Fatalf("%d requests", len(api.seen()))
	}
}

func TestAPatchIsRetriedOnlyWithIfMatch(t *testing.T) {
	version := "1.33"
	api, _, client := start(t, 0, status(503), status(200))
	answer, err := client.UpdateClusterWithResponse(t.Context(), "acme", "web", nil, ClusterUpdate{Version: &version})
	if err != nil || answer.StatusCode() != 503 || len(api.seen()) != 1 {
		t.Fatalf("without If-Match: %v, %d requests", err, len(api.seen()))
	}

	api, _, client = start(t, 0, status(503), status(200))
	etag := `"17"`
	answer, err = client.UpdateClusterWithResponse(t.Context(), "acme", "web",
		&UpdateClusterParams{IfMatch: &etag}, ClusterUpdate{Version: &version})
	if err != nil || answer.StatusCode() != 200 || len(api.seen()) != 2 {
		t.Fatalf("with If-Match: %v, %d requests", err, len(api.seen()))
	}
	for _, request := range api.seen() {
		if request.ifMatch != etag || request.body != `{"version":"1.33"}` {
			t.Fatalf("attempts differ: %+v", api.seen())
		}
	}
}

func TestABodyFromAPlainReaderIsSentWholeOnEveryAttempt(t *testing.T) {
	api, _, client := start(t, 0, status(500), status(200))
	// A reader net/http cannot rewind by itself (no GetBody).
	body := io.MultiReader(strings.NewReader(`{"name": `), strings.NewReader(`"ops"}`))
	_, err := client.PutReceiverWithBodyWithResponse(t.Context(), "acme", "ops", nil, "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	requests := api.seen()
	if len(requests) != 2 || requests[0].body != `{"name": "ops"}` || requests[1].body != requests[0].body {
		t.Fatalf("requests %+v", requests)
	}
}

func TestCancellingTheContextStopsTheBackoffAtOnce(t *testing.T) {
	api := &fakeAPI{answers: []func(http.ResponseWriter, *http.Request){status(503)}}
	server := httptest.NewServer(api)
	t.Cleanup(server.Close)
	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan time.Duration, 1)
	// The real sleep of an hour's backoff, cancelled once it has begun: only the
	// cancellation can end it.
	client, err := New(server.URL, WithRetryPolicy(RetryPolicy{
		BaseDelay: time.Hour,
		MaxDelay:  time.Hour,
		Random:    func() float64 { return 1 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			waiting <- d
			return sleep(ctx, d)
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-waiting
		cancel()
	}()
	_, err = client.GetPlanWithResponse(ctx, "starter")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if len(api.seen()) != 1 {
		t.Fatalf("%d requests", len(api.seen()))
	}
}

func TestTheClientsHeaders(t *testing.T) {
	api, _, client := start(t, 0, status(200))
	if _, err := client.GetPlanWithResponse(t.Context(), "starter"); err != nil {
		t.Fatal(err)
	}
	request := api.seen()[0]
	if request.authorization != "Bearer svc_test" || request.userAgent != DefaultUserAgent {
		t.Fatalf("headers %+v", request)
	}
	if request.idempotencyKey != "" {
		t.Fatalf("a GET carried an Idempotency-Key %q", request.idempotencyKey)
	}
}
