"""The OS sandbox every process a script or the model starts runs in (issue 30).

:class:`Sandbox` is probed once per runtime start and says which mechanism is in force
(``tier``: ``bwrap``, ``landlock``, ``off``, or ``unavailable`` — then nothing confined starts);
:meth:`Sandbox.confine` gives the :class:`Confinement` of one process. :mod:`.paths` says what
may be written and read, :mod:`.bwrap` / :mod:`.landlock` / :mod:`.seccomp` enforce it, and
:mod:`.denials` tells a command that failed on the sandbox from one that failed by itself.
"""

from hermes_tui.runtime.sandbox.core import FORCE_ENV, Confinement, Sandbox, SandboxError, Tier

__all__ = ["FORCE_ENV", "Confinement", "Sandbox", "SandboxError", "Tier"]
