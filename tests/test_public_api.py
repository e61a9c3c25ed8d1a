"""The lazily imported public names of ``accy``."""

from __future__ import annotations

import accy


def test_every_export_is_listed_and_resolves() -> None:
    assert accy.__all__ == sorted(accy._EXPORTS)
    for name in accy.__all__:
        value = getattr(accy, name)
        assert getattr(value, "__name__", name) == name
    assert set(accy.__all__) <= set(dir(accy))
