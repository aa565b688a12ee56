"""The web console: a server-rendered client of the public API (docs/console.md)."""
