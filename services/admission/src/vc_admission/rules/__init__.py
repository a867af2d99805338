"""Moved: admission's rules are the `vc_validation` library (libs/validation), so the services that must
not act on what admission would refuse can apply the same rules. This re-export only keeps imports that
are still on their way there working; import from `vc_validation`, and delete this file once nothing
imports `vc_admission.rules`."""

from vc_validation import *  # noqa: F403
from vc_validation import __all__  # noqa: F401
