"""Tooling: what the lessons use but do not teach, built on the core (it imports nothing above it).

=================  ======================================================
module             what it holds
=================  ======================================================
``devices``        accelerators and mixed precision (lesson 05 uses them)
``runs``           the resumable ``train()``, reading top to bottom
``run_folder``     a run folder: run_spec.json, history.csv, backup/, run.json; its lock and recovery
``data_sources``   ``load_cifar10``: ``"auto"`` and your own copy, class-folder directories and archives
``inference``      loading, saving, exporting and predicting with trained models (lesson 06)
``experiments``    comparisons on equal terms (lesson 07)
``published``      the shipped pretrained weights and run records
=================  ======================================================
"""
