#!/usr/bin/env python3
"""scripts/plot_history.py on small hand-written CSV files: a PNG for a good history (NA values
included), a clear error for a missing file, missing columns, a bad value, text that is not
UTF-8 or a field over the csv module's limit. Exits 77 (CTest: skipped) when
matplotlib is not installed (scripts/install-deps.sh --plot installs it)."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "plot_history.py")

try:
    import matplotlib  # noqa: F401
except ImportError:
    # Debian's python3-matplotlib is in the system interpreter, maybe not the first python3 on PATH.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)])
    print("skipped: matplotlib is not installed (scripts/install-deps.sh --plot)")
    sys.exit(77)

EPOCHS = """epoch,accuracy,loss,loss_scale,skipped,val_accuracy,val_loss
0,0.80,0.55,32768,2,0.84,0.45
1,0.86,0.39,32768,0,0.85,0.41
2,0.88,0.33,65536,1,0.86,0.38
"""
STEPS = "epoch,step,loss,loss_scale,skipped\n" + "".join(
    f"{e},{s},{'' if s % 3 else 0.5 - 0.01 * (4 * e + s)},{2.0 ** (15 + (4 * e + s) // 5 - (1 if (e, s) in ((0, 1), (2, 2)) else 0))},"
    f"{1 if (e, s) in ((0, 1), (2, 2)) else 0}\n"
    for e in range(3) for s in range(4))

failures = []


def run(*args):
    result = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def expect(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what)


with tempfile.TemporaryDirectory() as tmp:
    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    epochs, steps = write("epochs.csv", EPOCHS), write("steps.csv", STEPS)
    png = os.path.join(tmp, "history.png")
    code, out = run(epochs, "--steps", steps, "-o", png)
    expect(code == 0, f"epochs + steps plot: {out}")
    with open(png, "rb") as f:
        expect(f.read(8) == b"\x89PNG\r\n\x1a\n", "the output is a PNG")

    # Only loss, no steps: one panel.
    code, out = run(write("loss_only.csv", "epoch,loss\n0,1.0\n1,0.5\n"), "-o", os.path.join(tmp, "loss.png"))
    expect(code == 0 and os.path.getsize(os.path.join(tmp, "loss.png")) > 0, f"loss only: {out}")

    code, out = run(os.path.join(tmp, "nothing.csv"), "-o", png)
    expect(code == 1 and "cannot read" in out and "nothing.csv" in out and "No such file" in out, f"missing file: {out}")
    code, out = run(write("no_loss.csv", "epoch,accuracy\n0,0.5\n"), "-o", png)
    expect(code == 1 and "no_loss.csv: missing column(s) loss" in out, f"missing loss column: {out}")
    code, out = run(epochs, "--steps", write("bad_steps.csv", "epoch,step,loss\n0,0,1\n"), "-o", png)
    expect(code == 1 and "missing column(s) loss_scale, skipped" in out, f"missing step columns: {out}")
    code, out = run(write("empty.csv", ""), "-o", png)
    expect(code == 1 and "header: none" in out, f"empty file: {out}")
    code, out = run(write("header_only.csv", "epoch,loss\n"), "-o", png)
    expect(code == 1 and "no rows after the header" in out, f"header only: {out}")
    code, out = run(write("text.csv", "epoch,loss\n0,abc\n"), "-o", png)
    expect(code == 1 and "line 2: column loss is not a number: 'abc'" in out, f"bad value: {out}")
    # CSVLogger writes NA for a key an epoch's logs lack (as Keras): a gap, not an error.
    code, out = run(write("na.csv", "epoch,accuracy,loss,val_accuracy\n0,0.5,1.0,0.6\n1,0.6,0.9,NA\n"), "-o", png)
    expect(code == 0, f"NA value: {out}")
    with open(os.path.join(tmp, "latin1.csv"), "wb") as f:
        f.write(b"epoch,loss\n0,1.0\xff\n")
    code, out = run(os.path.join(tmp, "latin1.csv"), "-o", png)
    expect(code == 1 and "latin1.csv: not UTF-8 text" in out and "Traceback" not in out, f"not UTF-8: {out}")
    code, out = run(write("long.csv", "epoch,loss\n0," + "1" * 200000 + "\n"), "-o", png)
    expect(code == 1 and "long.csv, after line 1:" in out and "Traceback" not in out, f"overlong field: {out}")

print("FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
