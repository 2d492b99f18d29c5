"""One module per audited algorithm family: its :class:`~dpbounds.audit.registry.AuditSpec`
(worst-case pair, call, features, default claim), registered with
:func:`~dpbounds.audit.settings._common.register_audit` at the module's end.

:data:`dpbounds.audit.registry.AUDITS` is filled by importing every module of this package
(:class:`dpbounds._discovery.Registry`); adding an audit is adding a module here, no list is
edited. ``rank`` orders the audits (``dpbounds audit --list``, ``audit all``).
"""
