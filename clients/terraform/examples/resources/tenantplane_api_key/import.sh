# An API key is imported by its id (its raw key is then null: the API never shows it again).
tofu import tenantplane_api_key.ci ak-0123456789abcdef
