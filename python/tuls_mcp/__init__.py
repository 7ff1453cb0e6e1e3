"""tuls: a hardened MCP filesystem server. This package ships its binary."""

import os
import sysconfig


def find_tuls_bin() -> str:
    """Returns the path of the tuls binary installed with this package."""
    exe = "tuls"
    candidates = [os.path.join(sysconfig.get_path("scripts"), exe)]
    user = sysconfig.get_preferred_scheme("user") if hasattr(sysconfig, "get_preferred_scheme") else None
    if user:
        candidates.append(os.path.join(sysconfig.get_path("scripts", scheme=user), exe))
    # A venv's bin/ next to this package when it is not the running interpreter's.
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", "..", "..", "..", "bin", exe))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.realpath(path)
    raise FileNotFoundError(f"the tuls binary was not found (looked in: {', '.join(candidates)})")
