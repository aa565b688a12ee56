# A time interval is imported by its name.
tofu import tenantplane_alerting_time_interval.office_hours office-hours
