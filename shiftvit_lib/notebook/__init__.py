"""What only the lessons use: set-up and mode (``lesson``), figures (``plots``), the checks of a
learner's code and the fallbacks of its blanks (``checks``), reading a model's mistakes
(``analysis``), the learner's run folders on Colab and elsewhere (``learner_runs``) and
lesson 05's device table and run estimate (``timing``).

The core and the tooling never import this package.
"""
