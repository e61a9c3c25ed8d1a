"""Worker targets for the watchdog tests: one that dies, one that hangs, one that passes."""

from __future__ import annotations

import os
import threading

from watchdog import Outcome


def act(item, options, report_stage) -> Outcome:
    report_stage(item.id)
    if item.id == "die":
        print("about to abort", flush=True)
        os.abort()
    if item.id == "hang":
        threading.Event().wait()  # forever: only the watchdog ends it
    return Outcome(item.id, "PASS", str(options.get("note", "")))
