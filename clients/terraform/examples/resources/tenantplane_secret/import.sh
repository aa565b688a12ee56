# A secret is imported by its name.
tofu import tenantplane_secret.db db
