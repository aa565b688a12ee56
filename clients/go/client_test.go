package tenantplane

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNewRefusesWhatCouldNotWork(t *testing.T) {
	cases := map[string]struct {
		url     string
		options []Option
	}{
		"not a URL":             {"tenantplane.example.com", nil},
		"another scheme":        {"ftp://tenantplane.example.com", nil},
		"a key with a space":    {"https://t.example.com", []Option{WithAPIKey("svc_abc def")}},
		"an empty token":        {"https://t.example.com", []Option{WithToken("")}},
		"a key and a token":     {"https://t.example.com", []Option{WithAPIKey("svc_a"), WithToken("b")}},
		"no HTTP client at all": {"https://t.example.com", []Option{WithHTTPClient(nil)}},
	}
	for name, c := range cases {
		if _, err := New(c.url, c.options...); err == nil || !strings.HasPrefix(err.Error(), "tenantplane: ") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

func TestAUserAgentOfTheCallersOwn(t *testing.T) {
	api := &fakeAPI{answers: []func(http.ResponseWriter, *http.Request){status(200)}}
	server := httptest.NewServer(api)
	t.Cleanup(server.Close)
	// A trailing slash on the base URL is the same server.
	client, err := New(server.URL+"/", WithUserAgent("terraform-provider-tenantplane/1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetPlanWithResponse(t.Context(), "starter"); err != nil {
		t.Fatal(err)
	}
	if got := api.seen()[0].userAgent; got != "terraform-provider-tenantplane/1.0" {
		t.Fatalf("User-Agent %q", got)
	}
	if got := api.seen()[0].authorization; got != "" {
		t.Fatalf("a client without credentials sent Authorization %q", got)
	}
}
