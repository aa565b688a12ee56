terraform {
  required_providers {
    tenantplane = {
      source = "tenantplane/tenantplane"
    }
  }
}

# url, tenant and the credential may come from TENANTPLANE_URL, TENANTPLANE_TENANT and
# TENANTPLANE_API_KEY (or TENANTPLANE_TOKEN) instead.
provider "tenantplane" {
  url     = "https://tenantplane.example.com"
  tenant  = "acme"
  api_key = var.tenantplane_api_key
}

variable "tenantplane_api_key" {
  type      = string
  sensitive = true
}
