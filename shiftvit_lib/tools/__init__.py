"""Tooling: what the lessons use but do not teach, and what a user needs beyond them.

=================  ======================================================
module             what it holds
=================  ======================================================
``devices``        accelerators, mixed precision, distribution (lesson 05 uses them)
``runs``           run folders and records: run_spec.json, history.csv, run.json, resume
``data_sources``   CIFAR-10 from class-folder directories and archives; the download probe
``inference``      loading, saving, exporting and predicting with trained models (lesson 06)
``experiments``    comparisons on equal terms (lesson 07)
``published``      the shipped pretrained weights and run records
=================  ======================================================
"""
