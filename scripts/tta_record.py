"""The shipped ``cpu`` model on the test split, plain and with flip test-time augmentation.

    KERAS_BACKEND=jax python scripts/tta_record.py --data ../shared/data/cifar10-jpeg.tar.gz \
        --out results/cpu_full_tta.json

The plain figure must reproduce ``results/cpu_full/run.json``; the TTA figure is reported beside
it, never instead of it (``evaluate(..., tta=True)``: the mean of each image's logits and its
mirror image's). The read is appended to ``results/test_split_reads.jsonl``, and refused when
the log holds a read of the same weights already (``scripts/guard_test_split.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import shiftvit_lib as sv  # noqa: E402
from shiftvit_lib.recipe import evaluate  # noqa: E402
from shiftvit_lib.tools.files import write_json  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import guard_test_split  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the full CIFAR-10 (archive or class folders)")
    parser.add_argument("--out", default="results/cpu_full_tta.json")
    args = parser.parse_args()
    weights_sha256 = sv.pretrained_info("cpu")["sha256"]
    guard_test_split.refuse_a_second_read(weights_sha256)
    data = sv.load_cifar10(args.data)
    model = sv.pretrained("cpu")
    record = {
        "model": 'sv.pretrained("cpu")',
        "data_source": data.source,
        "split": "test",
        "plain": evaluate(model, data),
        "flip_tta": evaluate(model, data, tta=True),
        "measured_at": time.strftime("%Y-%m-%d"),
    }
    write_json(Path(args.out), record)  # atomic: a crash never leaves half a record
    guard_test_split.log_read("scripts/tta_record.py", 'sv.pretrained("cpu")', weights_sha256,
                            {"test_top1": record["plain"]["accuracy"],
                             "test_top1_flip_tta": record["flip_tta"]["accuracy"], "out": args.out})
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
