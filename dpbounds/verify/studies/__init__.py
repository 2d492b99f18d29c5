"""One module per verified result: its :class:`~dpbounds.verify.theorems.TheoremStudy` and
the runner that measures it, registered with
:func:`~dpbounds.verify.studies._common.register_study` at the module's end.

:data:`dpbounds.verify.theorems.STUDIES` is filled by importing every module of this package
(:class:`dpbounds._discovery.Registry`); adding a study is adding a module here, no list is
edited. ``rank`` orders the studies (``dpbounds verify --list``).
"""
