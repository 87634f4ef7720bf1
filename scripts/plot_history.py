#!/usr/bin/env python3
"""Draws a training history as a PNG: loss and accuracy per epoch (train and validation), and the
loss scale per step (log2 axis) with the skipped steps marked.

Usage: scripts/plot_history.py epochs.csv [--steps steps.csv] [-o history.png]

epochs.csv is a CSVLogger file as Keras writes it: a header `epoch,<sorted keys>` (for example
`epoch,accuracy,loss,loss_scale,skipped,val_accuracy,val_loss`), one row per epoch, epochs
counted from 0 (drawn from 1, as the progress lines print them). Columns other than epoch and
loss are optional. steps.csv, if given, has the header `epoch,step,loss,loss_scale,skipped`, one
row per step in order; a value may be empty when it was not logged. Needs matplotlib (Debian:
python3-matplotlib; scripts/install-deps.sh --plot installs it).
"""
import argparse
import csv
import math
import os
import sys

EPOCH_COLUMNS = ("epoch", "loss")
STEP_COLUMNS = ("epoch", "step", "loss_scale", "skipped")  # loss may be there too; it is not drawn


class HistoryError(Exception):
    pass


def read_csv(path, required):
    """The rows of a CSV file as dicts of floats (None for an empty value or CSVLogger's NA for a
    missing key), checking its columns."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise HistoryError(f"{path}: missing column(s) {', '.join(missing)} "
                                   f"(header: {','.join(header) if header else 'none: the file is empty'})")
            rows = []
            for line, row in enumerate(reader, start=2):
                if None in row or any(v is None for v in row.values()):
                    raise HistoryError(f"{path}, line {line}: {len(header)} columns expected")
                parsed = {}
                for key, text in row.items():
                    text = text.strip()
                    if text == "" or text.upper() == "NA":
                        parsed[key] = None
                        continue
                    if text.lower() in ("true", "false"):  # skipped may be written as a bool
                        parsed[key] = 1.0 if text.lower() == "true" else 0.0
                        continue
                    try:
                        parsed[key] = float(text)
                    except ValueError:
                        raise HistoryError(f"{path}, line {line}: column {key} is not a number: {text!r}") from None
                rows.append(parsed)
    except OSError as e:
        raise HistoryError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:  # e.start counts from the block being decoded, not the file
        raise HistoryError(f"{path}: not UTF-8 text ({e.reason})") from None
    except csv.Error as e:
        where = f"after line {reader.line_num}" if reader.line_num else "in the header"
        raise HistoryError(f"{path}, {where}: {e}") from None
    if not rows:
        raise HistoryError(f"{path}: no rows after the header")
    return rows


def series(rows, key, x_key=None):
    """(xs, ys) for the rows where `key` has a value; x is the row's x_key or its index."""
    xs, ys = [], []
    for i, row in enumerate(rows):
        value = row.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        x = i if x_key is None else row[x_key]
        if x is None:
            continue
        xs.append(x)
        ys.append(value)
    return xs, ys


def plot(epoch_rows, step_rows, output):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    for row in epoch_rows:
        if row["epoch"] is not None:
            row["epoch"] += 1  # CSVLogger counts from 0; the progress lines print "Epoch 1/N"
    has_accuracy = any(row.get(k) is not None for row in epoch_rows for k in ("accuracy", "val_accuracy"))
    panels = 1 + has_accuracy + (step_rows is not None)
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
    axes = list(axes[0])

    def per_epoch(ax, metric, title):
        for key, label, style in ((metric, "train", "o-"), ("val_" + metric, "validation", "s--")):
            xs, ys = series(epoch_rows, key, "epoch")
            if xs:
                ax.plot(xs, ys, style, label=label, markersize=4)
        ax.set_title(title)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        ax.legend()

    per_epoch(axes.pop(0), "loss", "loss")
    if has_accuracy:
        per_epoch(axes.pop(0), "accuracy", "accuracy")
    if step_rows is not None:
        ax = axes.pop(0)
        xs, ys = series(step_rows, "loss_scale")
        if xs:
            ax.step(xs, ys, where="post", label="loss scale")
            ax.set_yscale("log", base=2)
        skipped = [(i, row["loss_scale"]) for i, row in enumerate(step_rows)
                   if row.get("skipped") and row.get("loss_scale") is not None]
        if skipped:
            ax.plot([s[0] for s in skipped], [s[1] for s in skipped], "rx", label=f"skipped ({len(skipped)})")
        if not xs:
            ax.text(0.5, 0.5, "no loss scale logged", ha="center", va="center", transform=ax.transAxes)
        ax.set_title("loss scale per step")
        ax.set_xlabel("step (all epochs)")
        ax.grid(True, alpha=0.3)
        if xs:
            ax.legend()
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("epochs", help="CSVLogger epoch file (header epoch,<sorted keys>)")
    parser.add_argument("--steps", help="per-step file (header epoch,step,loss,loss_scale,skipped)")
    parser.add_argument("-o", "--output", default="history.png", help="the PNG to write (default: history.png)")
    args = parser.parse_args(argv)
    try:
        epoch_rows = read_csv(args.epochs, EPOCH_COLUMNS)
        step_rows = read_csv(args.steps, STEP_COLUMNS) if args.steps else None
    except HistoryError as e:
        print(f"plot_history.py: {e}", file=sys.stderr)
        return 1
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        # Debian's python3-matplotlib installs into the system interpreter, which need not be the
        # first python3 on PATH (a pyenv or a venv may come first): run there if it is another one.
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system):
            os.execv(system, [system, os.path.abspath(__file__), *sys.argv[1:]])
        print("plot_history.py: needs matplotlib (Debian: sudo apt-get install python3-matplotlib, "
              "or scripts/install-deps.sh --plot)", file=sys.stderr)
        return 1
    try:
        plot(epoch_rows, step_rows, args.output)
    except OSError as e:
        print(f"plot_history.py: cannot write {args.output}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
