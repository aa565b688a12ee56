# Alerts to the Slack channel #alerts through an incoming webhook, titled by the template
# slack.title (the webhook URL is a credential: integrations is sensitive).
resource "tenantplane_alerting_receiver" "slack" {
  name = "slack"
  integrations = jsonencode({
    slack_configs = [{
      api_url       = "https://hooks.slack.com/services/T000/B000/XXXX"
      channel       = "#alerts"
      send_resolved = true
      title         = "{{ template \"slack.title\" . }}"
    }]
  })
  depends_on = [tenantplane_alerting_template.slack]
}
