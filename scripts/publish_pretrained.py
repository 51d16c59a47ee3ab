"""Publish a finished run: its records under results/ and the package, its weights as a plain .npz.

    python scripts/publish_pretrained.py runs/cpu_full --name cpu --record cpu_full \
        --data ../shared/data/cifar10-jpeg.tar.gz

1. copies ``run.json`` and ``history.csv`` to ``results/<record>/`` and to
   ``shiftvit_lib/assets/records/<record>/`` (the copy that reaches Colab learners);
2. writes the best model's weights to ``shiftvit_lib/assets/pretrained/shiftvit_<name>.npz``
   and prints the sha256 to enter in the family's ``weights`` (``shiftvit_lib/model.py``'s registration);
3. with ``--data``, evaluates the written weights on the full test split and compares
   them with the record (they must agree within half a point).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def save_weights_npz(model, config, path: Path) -> str:
    """Write ``model``'s weights and ``config`` as a plain ``.npz`` (what ``pretrained`` reads); return its sha256."""
    import json

    import numpy as np

    from shiftvit_lib.tools.files import atomic_output, sha256_of

    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {f"w{i:04d}": np.asarray(v.numpy()) for i, v in enumerate(model.weights)}
    arrays["paths"] = np.array([v.path for v in model.weights])
    arrays["config"] = np.array(json.dumps(config.to_dict(), sort_keys=True))
    with atomic_output(path) as partial, partial.open("wb") as handle:
        np.savez_compressed(handle, **arrays)
    return sha256_of(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished training folder (best.keras, run.json, history.csv)")
    parser.add_argument("--name", required=True, help="the name pretrained() will know it by, e.g. cpu")
    parser.add_argument("--record", required=True, help="the record's folder name, e.g. cpu_full")
    parser.add_argument("--data", default=None, help="evaluate the published weights on this data's test split")
    args = parser.parse_args()

    import json

    import keras
    import numpy as np

    from shiftvit_lib.config import ShiftViTConfig
    from shiftvit_lib.recipe import logits_metrics
    from shiftvit_lib.tools import published as pt
    from shiftvit_lib.tools.files import atomic_write_text

    record = json.loads((args.run / "run.json").read_text())
    for target in (ROOT / "results" / args.record, pt.RECORDS / args.record):
        target.mkdir(parents=True, exist_ok=True)
        for file_name in ("run.json", "history.csv"):
            atomic_write_text(target / file_name, (args.run / file_name).read_bytes())
        print(f"copied the record to {target.relative_to(ROOT)}")

    config = ShiftViTConfig.from_dict(record["config"])
    model = keras.saving.load_model(args.run / "best.keras", safe_mode=True)
    out = pt.ASSETS / "pretrained" / f"shiftvit_{args.name}.npz"
    digest = save_weights_npz(model, config, out)
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size / 1e6:.2f} MB), sha256 {digest}")

    if args.data:
        from shiftvit_lib.config import FAMILIES
        from shiftvit_lib.tools.data_sources import load_cifar10

        FAMILIES["shiftvit"].weights[args.name] = {"sha256": digest, "record": args.record,
                                                   "weights": f"pretrained/shiftvit_{args.name}.npz"}
        data = load_cifar10(args.data)
        published = pt.pretrained(args.name)
        ours = logits_metrics(published.predict(data.x_test, batch_size=256, verbose=0), data.y_test)
        original = model.predict(data.x_test[:512], batch_size=256, verbose=0)
        gap = float(np.max(np.abs(original - published.predict(data.x_test[:512], batch_size=256, verbose=0))))
        print(f"{data.source}\npublished weights: test top-1 {ours['accuracy']:.2%} "
              f"(record: {record['test']['accuracy']:.2%}); largest logit difference to best.keras "
              f"on 512 test images {gap:.2e}")
        if abs(ours["accuracy"] - record["test"]["accuracy"]) > 0.005:
            print("error: the published weights do not reproduce the record", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
