"""pytest set-up shared by every test folder.

The test folders mirror the packages of `hmkeras`; the shared test
helpers (`hm_fixtures`, `hm_reference`, `example_modules`) live here, at
the top of `tf_tests/`, and are importable from every folder.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
