"""The one rendering of a timestamp the API and the operator command write (UTC, `Z`)."""

from __future__ import annotations

import re

RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
