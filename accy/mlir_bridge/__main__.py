"""``python -m accy.mlir_bridge``: the bridge's command line (`accy.mlir_bridge.cli`)."""

from __future__ import annotations

import sys

from accy.mlir_bridge.cli import main

if __name__ == "__main__":
    sys.exit(main())
