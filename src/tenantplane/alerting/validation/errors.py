from __future__ import annotations


class ConfigError(Exception):
    """One reason a configuration is invalid, with the path of the offending field."""

    def __init__(self, message: str, path: str, code: str = "VALIDATION_FAILED") -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.code = code


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key
