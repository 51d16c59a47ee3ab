"""Read the test set once for the recipe the validation split chose.

    KERAS_BACKEND=jax python scripts/cpu_final_record.py runs/cpu_search_full/conv_stem_32 \
        --data ../shared/data/cifar10-jpeg.tar.gz --out runs/cpu_final

``scripts/cpu_recipe_search.py`` trains every candidate with the test split withheld: its
records' "test" figures are the validation split's. Once the choice is made on those, this
script evaluates the chosen run's best checkpoint on the 10,000 test images, plain and with
flip test-time augmentation (reported beside it, never instead), and writes a finished run
folder (``run.json`` with the real test figures, ``history.csv``, ``best.keras``) that
``scripts/publish_pretrained.py`` publishes. It refuses to write over an existing record and to
read the test split again for a model it was read for (``results/test_split_reads.jsonl``, where
every read is appended: time, commit, model, figure), so a second look at the test set cannot
happen by accident.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shiftvit_lib.recipe import evaluate  # noqa: E402
from shiftvit_lib.tools.data_sources import load_cifar10  # noqa: E402
from shiftvit_lib.tools.files import atomic_write_text, write_json  # noqa: E402
from shiftvit_lib.tools.inference import load_model  # noqa: E402

sys.path.insert(0, str(REPO / "scripts"))
import guard_test_split  # noqa: E402

RUN_FILES = ("run.json", "history.csv", "best.keras")


def final_record(search_record: dict, model, data) -> dict:
    """The search run's record with the test figures of ``model`` on ``data``'s real test split.

    A search record's "test" entry holds the validation split's figures (the test set was
    withheld); here it is replaced by the test split's, plain and with flip TTA beside it.
    """
    plain = evaluate(model, data, "test")
    flipped = evaluate(model, data, "test", tta=True)
    return {
        **search_record,
        "data_source": f"{data.source}; recipe chosen on the validation split (results/cpu_search_full/), "
                       "the test split read once, after the choice",
        "test": {**plain, "images": len(data.y_test)},
        "test_flip_tta": {**flipped, "images": len(data.y_test)},
    }


def main(argv: list[str] | None = None, log: Path = guard_test_split.LOG) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the chosen candidate's finished training folder")
    parser.add_argument("--data", required=True, help="the CIFAR-10 archive or class-folder directory")
    parser.add_argument("--out", type=Path, required=True, help="the final run folder to write")
    parser.add_argument("--seed", type=int, default=42, help="the split's seed (the search's)")
    args = parser.parse_args(argv)
    missing = [name for name in RUN_FILES if not (args.run / name).is_file()]
    if missing:
        parser.error(f"{args.run} is not a finished run (no {', '.join(missing)}); train it first")
    if (args.out / "run.json").exists():
        parser.error(f"{args.out / 'run.json'} exists: the test set was read for it already; "
                     "choose another --out")

    sha256 = guard_test_split.model_sha256(args.run / "best.keras")
    guard_test_split.refuse_a_second_read(sha256, log)
    data = load_cifar10(args.data, seed=args.seed)
    record = final_record(json.loads((args.run / "run.json").read_text()),
                          load_model(args.run / "best.keras"), data)
    guard_test_split.log_read("scripts/cpu_final_record.py", str(args.run / "best.keras"), sha256,
                            {"test_top1": record["test"]["accuracy"],
                             "test_top1_flip_tta": record["test_flip_tta"]["accuracy"],
                             "images": record["test"]["images"], "out": str(args.out)}, log)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES[1:]:
        atomic_write_text(args.out / name, (args.run / name).read_bytes())
    write_json(args.out / "run.json", record)  # atomic: a crash never leaves half a record
    print(f"{data.source}\ntest top-1 {record['test']['accuracy']:.2%} "
          f"(flip TTA {record['test_flip_tta']['accuracy']:.2%}), "
          f"best validation top-1 {record['best_val_accuracy']:.2%}, {record['train_seconds']:.0f} s of training")
    return 0


if __name__ == "__main__":
    sys.exit(main())
