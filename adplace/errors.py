"""adplace.errors: TF's error classes (InvalidArgumentError, NotFoundError, ...)."""
from adplace.framework.errors import *  # noqa: F401,F403
from adplace.framework.errors import OpError  # noqa: F401
