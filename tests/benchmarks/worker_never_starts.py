"""A worker target whose import never ends: the watchdog's start-up timeout."""

from __future__ import annotations

import threading

from watchdog import Outcome

threading.Event().wait()  # forever: only the watchdog ends the process


def act(item, options, report_stage) -> Outcome:
    return Outcome(item.id, "PASS")
