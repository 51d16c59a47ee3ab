"""The learner's run folders: where they go, and which one lesson 06 studies.

* :func:`runs_root` -- where full-mode runs go: on Colab with Google Drive mounted,
  under ``/content/drive/MyDrive/shiftvit/runs`` (a disconnect keeps them); on Colab
  without Drive, ``/content/runs`` (a disconnect loses them, and the note says so);
  elsewhere ``runs/`` next to the notebook. Lessons 05-07 put their runs there.
* :func:`learners_best_model` -- lesson 06 uses the learner's own ``best.keras``
  from a lesson 05 run when there is one, else the shipped ``sv.pretrained("cpu")``.
"""

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

# Where Colab mounts Google Drive; tests point it at a temporary folder.
DRIVE_MOUNT_ENV = "SHIFTVIT_DRIVE_MOUNT"
COLAB_LOCAL_RUNS = Path("/content/runs")


class RunsRoot(NamedTuple):
    """The folder that takes a lesson's run folders, and one line on what that means."""

    path: Path
    note: str  # one line; it says whether a disconnect keeps the runs


def runs_root(full_mode: bool = True) -> RunsRoot:
    """Where this lesson's run folders go (see the module doc).

    Quick mode always uses ``runs/``: its runs take a minute and are scratch. Colab is
    where ``google.colab`` is loaded; ``SHIFTVIT_DRIVE_MOUNT`` moves the Drive mount point
    (for tests).
    """
    if not full_mode or "google.colab" not in sys.modules:
        return RunsRoot(Path("runs"), "runs go to runs/ next to this notebook")
    my_drive = Path(os.environ.get(DRIVE_MOUNT_ENV, "/content/drive")) / "MyDrive"
    if my_drive.is_dir():
        path = my_drive / "shiftvit" / "runs"
        return RunsRoot(path, f"runs go to Google Drive, {path}/: a disconnect keeps them")
    note = (
        f"Google Drive is not mounted, so runs go to {COLAB_LOCAL_RUNS}/, which a disconnect loses; mount it "
        "(from google.colab import drive; drive.mount('/content/drive')) and run this cell again"
    )
    return RunsRoot(COLAB_LOCAL_RUNS, note)


def learners_best_model(roots: Sequence[str | os.PathLike[str]]) -> Path | None:
    """The newest ``best.keras`` of a lesson 05 run under ``roots``; None if there is none.

    Lesson 06 studies it, else the shipped ``sv.pretrained("cpu")``. Lesson 05 names a run's
    folder ``05_training_<preset>``; its quick-mode run (``05_training_quick``) does not count:
    it is a smoke test, not a model to study. An interrupted run counts (its ``best.keras``
    is its best epoch so far).
    """
    bests = [best for root in roots for best in Path(root).glob("05_training_*/best.keras")]
    found = [(best.stat().st_mtime, best) for best in bests if best.parent.name != "05_training_quick"]
    return max(found)[1] if found else None
