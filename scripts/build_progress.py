"""Condenses a build's log (pip -v, on stdin) to its progress, as it goes: the
build's own lines ("torch_reduce: ...") and, for each step ninja starts,
"[compiled/total] file"."""
import re
import sys

STEP = re.compile(r"\[(\d+/\d+)\] ")
SOURCE = re.compile(r" -c (\S+/)?((?:csrc|build/generated)/\S+)")

for line in iter(sys.stdin.readline, ""):
    step = STEP.search(line)
    if step:
        source = SOURCE.findall(line)
        print(f"   [{step.group(1)}] {source[-1][1] if source else 'link'}", flush=True)
    elif "torch_reduce: " in line or "ninja: no work to do" in line:
        print("   " + line.strip(), flush=True)
