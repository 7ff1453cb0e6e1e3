"""`tuls-mcp ARGS` and `python -m tuls_mcp ARGS` run `tuls ARGS`.

The process is replaced by the binary (exec), so stdin, stdout, stderr,
signals and the exit status are the binary's own; nothing is printed.
"""

import os
import sys

from tuls_mcp import find_tuls_bin


def main() -> None:
    try:
        tuls = find_tuls_bin()
    except FileNotFoundError as e:
        sys.stderr.write(f"tuls-mcp: {e}\n")
        sys.exit(1)
    os.execv(tuls, [tuls, *sys.argv[1:]])


if __name__ == "__main__":
    main()
