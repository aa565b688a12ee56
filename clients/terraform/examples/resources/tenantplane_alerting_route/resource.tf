# The root route's first child: critical alerts to the receiver slack, in office hours.
resource "tenantplane_alerting_route" "critical" {
  index = 0
  route = jsonencode({
    receiver              = tenantplane_alerting_receiver.slack.name
    matchers              = ["severity=\"critical\""]
    group_by              = ["alertname", "cluster"]
    active_time_intervals = [tenantplane_alerting_time_interval.office_hours.name]
  })
}
