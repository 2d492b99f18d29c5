"""Deprecated alias of :mod:`dpbounds.algorithms.tree_momentum` (Tran & Cutkosky's
tree-momentum methods; modules are named by concept now): importing it gives that module
itself."""

import sys

from dpbounds.algorithms import tree_momentum as _module

sys.modules[__name__] = _module
