# A route is imported by its 0-based index among the root route's children.
tofu import tenantplane_alerting_route.critical 0
