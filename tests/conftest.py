"""Test-session settings: the persistent compile cache is off (`ACCY_CACHE=0`, inherited by
the processes tests start), so every test compiles what it tests; the cache's own tests
(tests/runtime/test_compile_cache.py) turn it on in directories of their own."""

from __future__ import annotations

import os

os.environ["ACCY_CACHE"] = "0"
