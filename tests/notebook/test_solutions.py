"""The lessons' fallback solutions (shiftvit_lib/notebook/solutions.py): lesson 05's training step."""


from shiftvit_lib.notebook import checks, solutions


def test_the_training_step_passes_the_lessons_check():
    checks.check_train_step(solutions.train_step)
