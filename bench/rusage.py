"""Run a command and write its peak resident memory and CPU time as JSON:
``python -m bench.rusage RESULT COMMAND...``.

The peak of a process the harness starts itself is not its own: exec records the peak of
the memory it replaces, the harness's, in the new process's ru_maxrss (Linux). Started from
this small process, the command's figure is its own (plus this one's few MiB at most)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path


def main() -> None:
    result, *command = sys.argv[1:]
    code = subprocess.call(command)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = {"maxrss_kib": usage.ru_maxrss, "cpu_seconds": usage.ru_utime + usage.ru_stime}
    Path(result).write_text(json.dumps(figures))
    sys.exit(code)


if __name__ == "__main__":
    main()
