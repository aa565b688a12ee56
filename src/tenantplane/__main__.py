from tenantplane.cli import app

app()
