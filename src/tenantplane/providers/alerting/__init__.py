"""Alerting backends: where a tenant's Alertmanager configuration is applied."""
