"""Deprecated alias of :mod:`dpbounds.algorithms.momentum` (Kuru et al.'s momentum methods;
modules are named by concept now): importing it gives that module itself."""

import sys

from dpbounds.algorithms import momentum as _module

sys.modules[__name__] = _module
