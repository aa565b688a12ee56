# A title for Slack messages, which receivers use as {{ template "slack.title" . }}.
resource "tenantplane_alerting_template" "slack" {
  filename = "slack.tmpl"
  contents = <<-EOT
    {{ define "slack.title" }}[{{ .Status }}] {{ .CommonLabels.alertname }}{{ end }}
  EOT
}
