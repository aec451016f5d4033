"""Checks that an sdist holds every file the build and the tests need: each
git-tracked file under csrc/, build_support/, torch_reduce/, tests/ and examples/ (which
tests/test_export.py runs), and the top-level build files. Usage: python scripts/check_sdist.py dist/torch_reduce-*.tar.gz"""
import subprocess
import sys
import tarfile

NEEDED = ["csrc", "build_support", "torch_reduce", "tests", "examples", "setup.py", "pyproject.toml", "MANIFEST.in",
          "LICENSE", "README.md"]

tracked = subprocess.run(["git", "ls-files", *NEEDED], capture_output=True, text=True, check=True).stdout.split()
with tarfile.open(sys.argv[1]) as sdist:
    # Members are <name>-<version>/<path>.
    present = {member.split("/", 1)[1] for member in sdist.getnames() if "/" in member}
missing = sorted(set(tracked) - present)
if missing:
    sys.exit(f"{sys.argv[1]} lacks {len(missing)} tracked files: {', '.join(missing[:20])}")
print(f"{sys.argv[1]}: all {len(tracked)} tracked build and test files present")
