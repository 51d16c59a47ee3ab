"""Tooling: what the lessons use but do not teach, built on the core (it imports nothing above it).

=================  ======================================================
module             what it holds
=================  ======================================================
``devices``        accelerators, mixed precision, distribution (lesson 05 uses them)
``runs``           the resumable ``train()`` and its run folder: run_spec.json, history.csv, run.json
``data_sources``   your own copy of CIFAR-10: class-folder directories and archives
``inference``      loading, saving, exporting and predicting with trained models (lesson 06)
``experiments``    comparisons on equal terms (lesson 07)
``published``      the shipped pretrained weights and run records
``runtime``        the learner's runtime: where runs go (Colab, Drive), lesson 06's model, step timings
=================  ======================================================
"""
