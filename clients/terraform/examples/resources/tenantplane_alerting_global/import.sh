# The global section is imported as "global".
tofu import tenantplane_alerting_global.this global
