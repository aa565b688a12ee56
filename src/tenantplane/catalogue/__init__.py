"""Catalogues shipped with tenantplane: plans (limits; billing adds prices) and the
supported Kubernetes versions. Operators may point TENANTPLANE_PLANS_FILE and
TENANTPLANE_VERSIONS_FILE at their own copies."""
