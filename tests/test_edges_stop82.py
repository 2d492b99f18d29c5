"""Stop 82's edges: each test fails before its fix."""

from __future__ import annotations

import warnings

from tests.test_edges_stop79 import _cli


def test_a_library_warning_is_one_dpbounds_line_and_the_hook_is_restored(monkeypatch, capsys):
    # Python's format printed the library's file, line number and source line ("...py:98:
    # UserWarning: ...") to a shell user (fuzz round 15)
    from dpbounds.cli import _ranges

    def check(args):
        warnings.warn("a library warning\n   over two lines", UserWarning, stacklevel=2)

    monkeypatch.setattr(_ranges, "check", check)
    before = warnings.showwarning
    rc, _, err = _cli(["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "1",
                       "--L", "2"], capsys)
    assert rc == 0
    assert "dpbounds: warning: a library warning over two lines" in err
    assert "UserWarning" not in err and ".py:" not in err
    assert warnings.showwarning is before
    # --debug leaves Python's own handling (here pytest's record) in place
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc, _, err = _cli(["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "1",
                           "--L", "2", "--debug"], capsys)
    assert rc == 0 and "dpbounds: warning" not in err
    assert [str(w.message) for w in caught] == ["a library warning\n   over two lines"]


def test_an_empty_file_name_is_refused_by_its_flag(capsys):
    # '' read the working directory: "--from-dp-event : cannot read it (Is a directory)"
    for flag in ("--from-dp-event", "--from-opacus"):
        for name in ("", "  "):
            rc, _, err = _cli(["privacy", "compose", flag, name], capsys)
            assert rc == 2 and f"{flag} needs a file name" in err and "directory" not in err
