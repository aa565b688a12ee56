# A person who may read everything of the tenant (they sign in through OIDC).
resource "tenantplane_member" "auditor" {
  email = "auditor@example.com"
  role  = "readonly"
}
