import os
import sys

import lit.formats

config.name = "tessel-example-plugin"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "Output", "run_in_pipeline.py", "tessel_example_plugin", "build"]
config.test_source_root = os.path.dirname(__file__)
config.environment["PYTHONPATH"] = os.path.dirname(os.path.dirname(config.test_source_root))
for name in ("PATH", "HOME", "TMPDIR"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

python = sys.executable
config.substitutions.append(("%opt", f"{python} -m tessel.passes.opt"))
config.substitutions.append(("%PYTHON", python))
