# A receiver is imported by its name.
tofu import tenantplane_alerting_receiver.slack slack
