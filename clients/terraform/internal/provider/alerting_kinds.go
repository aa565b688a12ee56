package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	tenantplane "github.com/tenantplane/tenantplane/clients/go"
)

// The five alerting resources: one implementation (alerting_resource.go), five rows.
//
// Receivers, routes, time intervals and the global section hold their value as a JSON
// string (jsonencode in the configuration) rather than nested blocks: Alertmanager's
// receiver alone has ten integration types of dozens of optional fields each, and typed
// blocks would read every absent field back as null or a default, so that an import would
// not plan empty. A JSON value is compared as a value (spacing and key order aside) and the
// API's answer is written as jsonencode writes it, so import round-trips exactly.

func newAlertingReceiverResource() resource.Resource {
	return &alertingResource{kind: alertingKind{
		typeName: "alerting_receiver",
		what:     "receiver",
		description: "A receiver of the tenant's alerting configuration: its name and its integrations " +
			"(Alertmanager's receiver schema). Imported by its name.",
		key:            keyedByName,
		keyAttribute:   "name",
		keyDescription: "The receiver's name, which routes refer to; its import id. Changing it replaces the receiver.",
		valueAttribute: "integrations",
		valueDescribed: "The receiver's integrations as a JSON object (jsonencode): slack_configs, webhook_configs, " +
			"email_configs and the others of Alertmanager's receiver, everything but name. Sensitive: it holds " +
			"credentials (webhook URLs, API keys), which the provider reads as they are with an admin API key.",
		valueIsJSON: true,
		sensitive:   true,
		toAPI: func(name, value string) ([]byte, error) {
			receiver, err := jsonObject(value)
			if err != nil {
				return nil, err
			}
			if _, named := receiver["name"]; named {
				return nil, errors.New("name is the resource's name attribute, not one of the integrations")
			}
			receiver["name"] = name
			return json.Marshal(receiver)
		},
		fromAPI: func(body []byte) (string, error) {
			receiver, err := jsonObject(string(body))
			if err != nil {
				return "", err
			}
			delete(receiver, "name")
			encoded, err := json.Marshal(receiver)
			return string(encoded), err
		},
		api: alertingAPI{
			get: func(ctx context.Context, c *apiClient, name string) (*http.Response, []byte, error) {
				answer, err := c.api.GetReceiverWithResponse(ctx, c.tenant, name, nil)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			put: func(ctx context.Context, c *apiClient, name, etag string, body []byte) (*http.Response, []byte, error) {
				contentType, reader := jsonBody(body)
				answer, err := c.api.PutReceiverWithBodyWithResponse(ctx, c.tenant, name,
					&tenantplane.PutReceiverParams{IfMatch: quotedETag(etag)}, contentType, reader)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			delete: func(ctx context.Context, c *apiClient, name, etag string) (*http.Response, []byte, error) {
				answer, err := c.api.DeleteReceiverWithResponse(ctx, c.tenant, name,
					&tenantplane.DeleteReceiverParams{IfMatch: quotedETag(etag)})
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
		},
	}}
}

func newAlertingRouteResource() resource.Resource {
	return &alertingResource{kind: alertingKind{
		typeName: "alerting_route",
		what:     "route",
		description: "A child route of the root route of the tenant's alerting configuration, addressed by its " +
			"0-based index. Imported by its index. Created only at the index equal to the current number of " +
			"child routes (appended); deleting one moves the later ones up an index.",
		key:            keyedByIndex,
		keyAttribute:   "index",
		keyDescription: "The route's 0-based index among the root route's children; its import id. Changing it replaces the route.",
		valueAttribute: "route",
		valueDescribed: "The route as a JSON object (jsonencode): receiver, matchers, group_by, continue, nested routes, " +
			"and the other fields of Alertmanager's route.",
		valueIsJSON: true,
		toAPI: func(_, value string) ([]byte, error) {
			route, err := jsonObject(value)
			if err != nil {
				return nil, err
			}
			return json.Marshal(route)
		},
		fromAPI: func(body []byte) (string, error) { return canonicalJSON(body) },
		api: alertingAPI{
			get: func(ctx context.Context, c *apiClient, index string) (*http.Response, []byte, error) {
				answer, err := c.api.GetRouteWithResponse(ctx, c.tenant, index, nil)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			put: func(ctx context.Context, c *apiClient, index, etag string, body []byte) (*http.Response, []byte, error) {
				contentType, reader := jsonBody(body)
				answer, err := c.api.PutRouteWithBodyWithResponse(ctx, c.tenant, index,
					&tenantplane.PutRouteParams{IfMatch: quotedETag(etag)}, contentType, reader)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			delete: func(ctx context.Context, c *apiClient, index, etag string) (*http.Response, []byte, error) {
				answer, err := c.api.DeleteRouteWithResponse(ctx, c.tenant, index,
					&tenantplane.DeleteRouteParams{IfMatch: quotedETag(etag)})
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
		},
	}}
}

func newAlertingGlobalResource() resource.Resource {
	return &alertingResource{kind: alertingKind{
		typeName: "alerting_global",
		what:     "global section",
		description: "The global section of the tenant's alerting configuration (one per tenant), replaced whole. " +
			"Imported as \"global\". Destroying it empties the section.",
		key:            singleton,
		keyAttribute:   "id",
		keyDescription: "Always \"global\": the section's import id.",
		valueAttribute: "settings",
		valueDescribed: "The section as a JSON object (jsonencode): resolve_timeout, slack_api_url, smtp_*, and the " +
			"other fields of Alertmanager's global section. Sensitive: it holds credentials.",
		valueIsJSON: true,
		sensitive:   true,
		toAPI: func(_, value string) ([]byte, error) {
			settings, err := jsonObject(value)
			if err != nil {
				return nil, err
			}
			return json.Marshal(settings)
		},
		fromAPI: func(body []byte) (string, error) { return canonicalJSON(body) },
		api: alertingAPI{
			get: func(ctx context.Context, c *apiClient, _ string) (*http.Response, []byte, error) {
				answer, err := c.api.GetGlobalWithResponse(ctx, c.tenant, nil)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			put: func(ctx context.Context, c *apiClient, _, etag string, body []byte) (*http.Response, []byte, error) {
				contentType, reader := jsonBody(body)
				answer, err := c.api.PutGlobalWithBodyWithResponse(ctx, c.tenant,
					&tenantplane.PutGlobalParams{IfMatch: quotedETag(etag)}, contentType, reader)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			// The section cannot be removed: it is emptied.
			delete: func(ctx context.Context, c *apiClient, _, etag string) (*http.Response, []byte, error) {
				contentType, reader := jsonBody([]byte("{}"))
				answer, err := c.api.PutGlobalWithBodyWithResponse(ctx, c.tenant,
					&tenantplane.PutGlobalParams{IfMatch: quotedETag(etag)}, contentType, reader)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
		},
	}}
}

func newAlertingTemplateResource() resource.Resource {
	return &alertingResource{kind: alertingKind{
		typeName:       "alerting_template",
		what:           "template",
		description:    "A notification template file of the tenant's alerting configuration. Imported by its file name.",
		key:            keyedByName,
		keyAttribute:   "filename",
		keyDescription: "The template's file name, e.g. slack.tmpl; its import id. Changing it replaces the template.",
		valueAttribute: "contents",
		valueDescribed: "The file's contents: Go templates ({{ define \"…\" }}), at most 256 KiB, compared as text.",
		toAPI: func(_, value string) ([]byte, error) {
			return json.Marshal(tenantplane.TemplateWrite{Contents: value})
		},
		fromAPI: func(body []byte) (string, error) {
			var template tenantplane.TemplateRead
			err := json.Unmarshal(body, &template)
			return template.Contents, err
		},
		api: alertingAPI{
			get: func(ctx context.Context, c *apiClient, filename string) (*http.Response, []byte, error) {
				answer, err := c.api.GetTemplateWithResponse(ctx, c.tenant, filename, nil)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			put: func(ctx context.Context, c *apiClient, filename, etag string, body []byte) (*http.Response, []byte, error) {
				contentType, reader := jsonBody(body)
				answer, err := c.api.PutTemplateWithBodyWithResponse(ctx, c.tenant, filename,
					&tenantplane.PutTemplateParams{IfMatch: quotedETag(etag)}, contentType, reader)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			delete: func(ctx context.Context, c *apiClient, filename, etag string) (*http.Response, []byte, error) {
				answer, err := c.api.DeleteTemplateWithResponse(ctx, c.tenant, filename,
					&tenantplane.DeleteTemplateParams{IfMatch: quotedETag(etag)})
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
		},
	}}
}

func newAlertingTimeIntervalResource() resource.Resource {
	return &alertingResource{kind: alertingKind{
		typeName: "alerting_time_interval",
		what:     "time interval",
		description: "A named time interval of the tenant's alerting configuration, which routes name in " +
			"active_time_intervals and mute_time_intervals. Imported by its name.",
		key:            keyedByName,
		keyAttribute:   "name",
		keyDescription: "The interval's name; its import id. Changing it replaces the interval.",
		valueAttribute: "time_intervals",
		valueDescribed: "Its definitions as a JSON array (jsonencode) of Alertmanager time intervals: times " +
			"(start_time, end_time), weekdays, days_of_month, months, years, location.",
		valueIsJSON: true,
		toAPI: func(_, value string) ([]byte, error) {
			var intervals []any
			if err := json.Unmarshal([]byte(value), &intervals); err != nil {
				return nil, errors.New("not a JSON array: " + err.Error())
			}
			return json.Marshal(map[string]any{"time_intervals": intervals})
		},
		fromAPI: func(body []byte) (string, error) {
			var interval struct {
				TimeIntervals json.RawMessage `json:"time_intervals"`
			}
			if err := json.Unmarshal(body, &interval); err != nil {
				return "", err
			}
			return canonicalJSON(interval.TimeIntervals)
		},
		api: alertingAPI{
			get: func(ctx context.Context, c *apiClient, name string) (*http.Response, []byte, error) {
				answer, err := c.api.GetTimeIntervalWithResponse(ctx, c.tenant, name, nil)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			put: func(ctx context.Context, c *apiClient, name, etag string, body []byte) (*http.Response, []byte, error) {
				contentType, reader := jsonBody(body)
				answer, err := c.api.PutTimeIntervalWithBodyWithResponse(ctx, c.tenant, name,
					&tenantplane.PutTimeIntervalParams{IfMatch: quotedETag(etag)}, contentType, reader)
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
			delete: func(ctx context.Context, c *apiClient, name, etag string) (*http.Response, []byte, error) {
				answer, err := c.api.DeleteTimeIntervalWithResponse(ctx, c.tenant, name,
					&tenantplane.DeleteTimeIntervalParams{IfMatch: quotedETag(etag)})
				return answerOf(err, func() (*http.Response, []byte) { return answer.HTTPResponse, answer.Body })
			},
		},
	}}
}

// jsonObject is a JSON object text decoded.
func jsonObject(text string) (map[string]any, error) {
	var object map[string]any
	if err := json.Unmarshal([]byte(text), &object); err != nil || object == nil {
		return nil, errors.New("not a JSON object (write it with jsonencode)")
	}
	return object, nil
}

// answerOf is a generated call's HTTP response and body (read only when the call succeeded:
// the answer is nil otherwise).
func answerOf(err error, answer func() (*http.Response, []byte)) (*http.Response, []byte, error) {
	if err != nil {
		return nil, nil, err
	}
	resp, body := answer()
	return resp, body, nil
}
