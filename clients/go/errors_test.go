package tenantplane

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func answer(status int, headers ...string) *http.Response {
	response := &http.Response{StatusCode: status, Header: http.Header{}}
	for i := 0; i+1 < len(headers); i += 2 {
		response.Header.Set(headers[i], headers[i+1])
	}
	return response
}

func TestErrorOfReadsTheEnvelope(t *testing.T) {
	body := []byte(`{"error": "name is taken", "code": "ALREADY_EXISTS", "message": "name is taken",
		"field": "name", "severity": "error"}`)
	err := ErrorOf(answer(409, "X-Request-Id", "req-1"), body)
	var apiError *APIError
	if !errors.As(err, &apiError) {
		t.Fatalf("%v is not an *APIError", err)
	}
	want := APIError{Status: 409, Code: "ALREADY_EXISTS", Message: "name is taken", Field: "name",
		Severity: "error", RequestID: "req-1"}
	if *apiError != want {
		t.Fatalf("%+v, want %+v", *apiError, want)
	}
	if err.Error() != "409 ALREADY_EXISTS: name is taken (field: name) [request req-1]" {
		t.Fatalf("message %q", err.Error())
	}
	if !IsConflict(err) || IsNotFound(err) || IsPreconditionFailed(err) {
		t.Fatal("the Is helpers do not follow the status")
	}
}

func TestAnUnstructuredErrorHasItsErrorAsMessage(t *testing.T) {
	err := ErrorOf(answer(401), []byte(`{"error": "invalid API key"}`))
	var apiError *APIError
	if !errors.As(err, &apiError) || apiError.Message != "invalid API key" || apiError.Code != "" {
		t.Fatalf("%+v", err)
	}
}

func TestABodyThatIsNotTheEnvelopeStillGivesAnAPIError(t *testing.T) {
	for _, body := range []string{"<html>Bad Gateway</html>", "", `["a list"]`} {
		err := ErrorOf(answer(502), []byte(body))
		var apiError *APIError
		if !errors.As(err, &apiError) || apiError.Status != 502 || apiError.Message != "Bad Gateway" {
			t.Fatalf("body %q: %+v", body, err)
		}
	}
}

func TestSuccessAndNotModifiedAreNoError(t *testing.T) {
	for _, status := range []int{200, 201, 202, 204, 304} {
		if err := ErrorOf(answer(status), nil); err != nil {
			t.Fatalf("%d: %v", status, err)
		}
	}
}

func TestRetryAfterIsReadInSeconds(t *testing.T) {
	cases := map[string]time.Duration{"7": 7 * time.Second, "0.5": 500 * time.Millisecond, "-3": 0,
		"soon": 0, "NaN": 0}
	for header, want := range cases {
		var apiError *APIError
		if !errors.As(ErrorOf(answer(429, "Retry-After", header), nil), &apiError) || apiError.RetryAfter != want {
			t.Fatalf("Retry-After %q: %+v, want %v", header, apiError, want)
		}
	}
}

func TestTheIsHelpersSeeThroughWrapping(t *testing.T) {
	wrapped := fmt.Errorf("reading cluster web: %w", ErrorOf(answer(404), []byte(`{"error": "cluster not found",
		"code": "NOT_FOUND"}`)))
	if !IsNotFound(wrapped) {
		t.Fatalf("%v is not a 404", wrapped)
	}
	if !IsPreconditionFailed(ErrorOf(answer(412), nil)) {
		t.Fatal("a 412 is not IsPreconditionFailed")
	}
	if IsNotFound(errors.New("connection refused")) || IsNotFound(nil) {
		t.Fatal("an error without an answer is a 404")
	}
}
