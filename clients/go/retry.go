package tenantplane

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// RetryPolicy is the spec's retry guidance, applied to every request as the Python SDK
// applies it (clients/python/src/tenantplane_client/retry.py):
//
//   - 429: wait Retry-After (at most MaxDelay), then retry; without Retry-After, back off.
//   - 500, 503, and a connection that failed or dropped before an answer: exponential
//     backoff with full jitter, a uniform wait in [0, min(MaxDelay, BaseDelay·2^(n-1)))
//     before attempt n+1.
//   - At most MaxAttempts attempts in all.
//   - Only requests that are safe to repeat: GET, HEAD, PUT (the API's PUTs are upserts),
//     DELETE, PATCH with If-Match, and POST with an Idempotency-Key (which the client sets
//     on every POST unless the caller set one, or WithIdempotencyKeys(false)).
//
// A zero field takes its default (DefaultRetryPolicy); NoRetries makes one attempt.
type RetryPolicy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
	// Random is the jitter's source, uniform in [0, 1) (a test's fixed value).
	Random func() float64
	// Sleep waits d or until ctx is done, whichever comes first, and then returns ctx's
	// error if it is done (a test's recorder that does not wait).
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRetryPolicy is the spec's: 5 attempts, backoff from 1 s up to 30 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		MaxAttempts: 5,
		BaseDelay:   time.Second,
		MaxDelay:    30 * time.Second,
		Random:      rand.Float64,
		Sleep:       sleep,
	}
}

// NoRetries sends each request once.
var NoRetries = RetryPolicy{MaxAttempts: 1}

func (p RetryPolicy) withDefaults() RetryPolicy {
	defaults := DefaultRetryPolicy()
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = defaults.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = defaults.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = defaults.MaxDelay
	}
	if p.Random == nil {
		p.Random = defaults.Random
	}
	if p.Sleep == nil {
		p.Sleep = defaults.Sleep
	}
	return p
}

// backoff is full jitter before attempt+1: uniform in [0, min(MaxDelay, BaseDelay·2^(attempt-1))).
func (p RetryPolicy) backoff(attempt int) time.Duration {
	ceiling := p.BaseDelay
	// Doubling stops at the cap, so it never overflows.
	for n := 1; n < attempt && ceiling < p.MaxDelay; n++ {
		ceiling *= 2
	}
	return time.Duration(p.Random() * float64(min(ceiling, p.MaxDelay)))
}

// delay is the wait after attempt, which answered status (0: no answer).
func (p RetryPolicy) delay(attempt, status int, retryAfter time.Duration, hasRetryAfter bool) time.Duration {
	if status == http.StatusTooManyRequests && hasRetryAfter {
		return min(retryAfter, p.MaxDelay)
	}
	return p.backoff(attempt)
}

// retryableStatus: the statuses the spec calls retryable (412 needs a fresh read first,
// which only the caller can do).
func retryableStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// retrySafe tells whether a request may be sent again after an attempt that may have
// reached the server.
func retrySafe(method string, header http.Header) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPatch:
		return header.Get("If-Match") != ""
	case http.MethodPost:
		return header.Get("Idempotency-Key") != ""
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryingDoer is the generated client's HttpRequestDoer: it adds the client's headers and
// the Idempotency-Key of a POST, and sends each request by the retry policy.
type retryingDoer struct {
	http            *http.Client
	policy          RetryPolicy
	authorization   string // "Bearer …", or empty
	userAgent       string
	idempotencyKeys bool
}

func (d *retryingDoer) Do(original *http.Request) (*http.Response, error) {
	request, err := d.prepare(original)
	if err != nil {
		return nil, err
	}
	ctx := request.Context()
	mayRetry := retrySafe(request.Method, request.Header)
	for attempt := 1; ; attempt++ {
		last := attempt >= d.policy.MaxAttempts || !mayRetry
		sent, err := attemptOf(request, attempt)
		if err != nil {
			return nil, err
		}
		response, err := d.http.Do(sent)
		var wait time.Duration
		if err != nil {
			// A cancelled or expired context is the caller's decision, not a dropped connection.
			if last || ctx.Err() != nil {
				return nil, err
			}
			wait = d.policy.delay(attempt, 0, 0, false)
		} else {
			if last || !retryableStatus(response.StatusCode) {
				return response, nil
			}
			retryAfter, hasRetryAfter := retryAfterOf(response.Header)
			wait = d.policy.delay(attempt, response.StatusCode, retryAfter, hasRetryAfter)
			discard(response)
		}
		if err := d.policy.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%s %s: waiting to retry: %w", request.Method, request.URL.Redacted(), err)
		}
	}
}

// prepare copies the caller's request with the client's headers (those the caller set win),
// an Idempotency-Key on a POST, and a body that can be sent again.
func (d *retryingDoer) prepare(original *http.Request) (*http.Request, error) {
	request := original.Clone(original.Context())
	if d.authorization != "" && request.Header.Get("Authorization") == "" {
		request.Header.Set("Authorization", d.authorization)
	}
	if d.userAgent != "" && request.Header.Get("User-Agent") == "" {
		request.Header.Set("User-Agent", d.userAgent)
	}
	if request.Method == http.MethodPost && d.idempotencyKeys && request.Header.Get("Idempotency-Key") == "" {
		// An sf-string, as the API documents the header; one key for all the attempts, so
		// the server answers a repeat with the first attempt's outcome.
		request.Header.Set("Idempotency-Key", `"`+uuid.NewString()+`"`)
	}
	if request.Body != nil && request.Body != http.NoBody && request.GetBody == nil {
		// A body from a plain io.Reader (the generated *WithBody methods) is read once into
		// memory, so that every attempt sends it whole.
		content, err := io.ReadAll(request.Body)
		request.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s %s: reading the request body: %w", request.Method, request.URL.Redacted(), err)
		}
		request.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(content)), nil }
		request.Body, _ = request.GetBody()
	}
	return request, nil
}

// attemptOf is the request to send as attempt n: the first takes the body as it is, each
// later one a fresh copy of it (the transport consumed and closed the one before).
func attemptOf(request *http.Request, attempt int) (*http.Request, error) {
	if attempt == 1 {
		return request, nil
	}
	sent := request.Clone(request.Context())
	if request.GetBody != nil {
		body, err := request.GetBody()
		if err != nil {
			return nil, fmt.Errorf("%s %s: replaying the request body: %w", request.Method, request.URL.Redacted(), err)
		}
		sent.Body = body
	}
	return sent, nil
}

// discard reads off a little of an answer that will not be used (so its connection can be
// reused) and closes it.
func discard(response *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(response.Body, 64<<10))
	response.Body.Close()
}
