"""The one blank solution the library has no counterpart of: lesson 05's training step.

Lessons 02-05 leave the body of each key piece blank for the learner. The checking
cell after a blank tries the learner's version; while it is still blank, it falls back
to the library's own piece (``sv.shift_channels``, ``sv.MLP``, ``sv.DropPath``,
``sv.ShiftViTBlock``, ``sv.PatchMerging``, ``sv.build_shiftvit``, ``sv.WarmUpCosine``),
so a notebook with every blank left empty still runs top to bottom. The library trains
with ``model.fit``, so lesson 05's ``GradientTape`` step, shown in the lesson's collapsed
"Solution", lives here. ``tests/notebook/test_checks.py`` runs every lesson's "Solution"
through its check.

This is a lesson helper: the core never imports it.
"""


def train_step(model, optimizer, loss_fn, images, labels):
    import tensorflow as tf

    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return float(loss)
