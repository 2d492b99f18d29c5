"""One oracle for the CLI's early refusals: the library's own words with the early check off."""

from __future__ import annotations

from typing import Any


def assert_early_is_library(argv: list[str], capsys: Any, monkeypatch: Any,
                            off: list[tuple[Any, str, Any]], words: str) -> None:
    """``main(argv)`` refuses with ``words`` in its line, and the same last line with each
    ``(module, attribute, stand-in)`` of ``off`` replaced (the early checks switched off, so
    that the library, after its imports, answers)."""
    from dpbounds.cli import EXIT_USAGE, _ranges, main

    assert main(argv) == EXIT_USAGE
    early = capsys.readouterr().err.strip()
    assert words in early
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    for module, name, stand_in in off:
        monkeypatch.setattr(module, name, stand_in)
    assert main(argv) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines()[-1] == early
