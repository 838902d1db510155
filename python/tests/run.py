"""ctest's entry to the Python client tests: `run.py cpu` runs test_client.py and test_hta.py
(the Chrome trace export in Holistic Trace Analysis), `run.py gpu` test_gpu.py. Exit 77 (ctest's skip) when pytest is missing, or when every GPU test skipped."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
which = sys.argv[1] if len(sys.argv) > 1 else "cpu"
try:
    import pytest  # noqa: F401
except ImportError:
    print("python client tests skipped: pytest is not installed (pip install pytest numpy)")
    sys.exit(77)
env = dict(os.environ)
env["PYTHONPATH"] = os.path.dirname(here) + os.pathsep + env.get("PYTHONPATH", "")
targets = [os.path.join(here, t) for t in (["test_client.py", "test_hta.py"] if which == "cpu" else ["test_gpu.py"])]
p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"] + targets,
                   env=env, capture_output=True, text=True)
sys.stdout.write(p.stdout)
sys.stderr.write(p.stderr)
last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
if p.returncode == 0 and "skipped" in last and "passed" not in last:
    sys.exit(77)
sys.exit(p.returncode)
