"""What only the lessons use: set-up and mode (``lesson``), figures (``plots``), the checks of a
learner's code and their solutions (``checks``, ``solutions``), reading a model's mistakes
(``analysis``) and the glue of lessons 05-07 (``runtime``: run folders on Colab, reuse, timings).

The core and the tooling never import this package.
"""
