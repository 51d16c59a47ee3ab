"""shiftvit_lib/tools/files.py loaded on its own (standard library only), so a script needs no Keras.

Every file a script or the website writes goes through its atomic writes (a full disk or a
crash never leaves half a notebook); tests/project/test_import_graph.py finds any other write.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _file_safety():
    if "shiftvit_lib_files" not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "shiftvit_lib" / "tools" / "files.py"
        spec = importlib.util.spec_from_file_location("shiftvit_lib_files", path)
        sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules["shiftvit_lib_files"]


files = _file_safety()
