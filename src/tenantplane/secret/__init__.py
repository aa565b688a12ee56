"""Managed secrets: pointers into the tenant's vault, synced into namespaces of its clusters."""
