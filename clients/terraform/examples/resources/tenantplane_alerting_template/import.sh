# A template is imported by its file name.
tofu import tenantplane_alerting_template.slack slack.tmpl
