# Weekdays from 09:00 to 17:00 in Berlin, for routes' active_time_intervals.
resource "tenantplane_alerting_time_interval" "office_hours" {
  name = "office-hours"
  time_intervals = jsonencode([{
    weekdays = ["monday:friday"]
    times    = [{ start_time = "09:00", end_time = "17:00" }]
    location = "Europe/Berlin"
  }])
}
