package tenantplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// APIError is an answer of the API outside 2xx, read from the spec's error envelope
// ({"error", "code", "message", "field", "severity"}).
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the envelope's stable identifier (NOT_FOUND, HA_ENABLE_ON_EXISTING_UNSUPPORTED,
	// …): branch on it or on Status, never on Message. Empty for unstructured errors (401, 403).
	Code string
	// Message is the envelope's message, else its error, else the status text.
	Message string
	// Field names the offending field of the request, when the error is about one.
	Field string
	// Severity is the envelope's severity ("error"), when it carries one.
	Severity string
	// RequestID is the answer's X-Request-Id: quote it when reporting a problem.
	RequestID string
	// RetryAfter is the answer's Retry-After (429): how long the server asked to wait.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	text := strconv.Itoa(e.Status)
	if e.Code != "" {
		text += " " + e.Code
	}
	text += ": " + e.Message
	if e.Field != "" {
		text += fmt.Sprintf(" (field: %s)", e.Field)
	}
	if e.RequestID != "" {
		text += fmt.Sprintf(" [request %s]", e.RequestID)
	}
	return text
}

// envelope is the spec's error envelope as the API sends it.
type envelope struct {
	Error    string `json:"error"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Field    string `json:"field"`
	Severity string `json:"severity"`
}

// ErrorOf is nil for an answer in 2xx, and for a 304 (the caller's If-None-Match copy is
// current), and otherwise an *APIError from the answer's envelope; a body that is not the
// envelope (a proxy's HTML page) still gives an *APIError, with the status text as Message.
// body is the answer's body as read (a generated response's Body).
func ErrorOf(resp *http.Response, body []byte) error {
	if resp == nil {
		return errors.New("tenantplane: no answer to read an error from")
	}
	if (resp.StatusCode >= 200 && resp.StatusCode < 300) || resp.StatusCode == http.StatusNotModified {
		return nil
	}
	var parsed envelope
	// Not JSON, or JSON of another shape: the fields stay empty and the status speaks.
	_ = json.Unmarshal(body, &parsed)
	message := parsed.Message
	if message == "" {
		message = parsed.Error
	}
	if message == "" {
		message = http.StatusText(resp.StatusCode)
	}
	retryAfter, _ := retryAfterOf(resp.Header)
	return &APIError{
		Status:     resp.StatusCode,
		Code:       parsed.Code,
		Message:    message,
		Field:      parsed.Field,
		Severity:   parsed.Severity,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: retryAfter,
	}
}

// retryAfterOf reads Retry-After in seconds (what the API sends); false when absent or not
// a number, as the Python SDK reads it.
func retryAfterOf(header http.Header) (time.Duration, bool) {
	value := strings.TrimSpace(header.Get("Retry-After"))
	if value == "" {
		return 0, false
	}
	seconds, err := strconv.ParseFloat(value, 64)
	if err != nil || math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return 0, false
	}
	// Clamped to what a Duration holds (a retry waits at most RetryPolicy.MaxDelay anyway).
	return time.Duration(min(max(seconds, 0), maxRetryAfterSeconds) * float64(time.Second)), true
}

// A year: more than any wait worth honouring, well within a Duration.
const maxRetryAfterSeconds = 365 * 24 * 3600

func hasStatus(err error, status int) bool {
	var apiError *APIError
	return errors.As(err, &apiError) && apiError.Status == status
}

// IsNotFound tells whether err is the API's 404: the resource does not exist (only this
// means "gone"; a 401, 403 or 5xx says nothing about the resource).
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsPreconditionFailed tells whether err is the API's 412: the If-Match sent is not the
// resource's current ETag (it changed since it was read): re-read, reapply, retry.
func IsPreconditionFailed(err error) bool { return hasStatus(err, http.StatusPreconditionFailed) }

// IsConflict tells whether err is the API's 409: the resource already exists, or its state
// does not allow the request.
func IsConflict(err error) bool { return hasStatus(err, http.StatusConflict) }
