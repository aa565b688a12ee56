# A member is imported by email.
tofu import tenantplane_member.auditor auditor@example.com
