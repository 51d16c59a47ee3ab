"""Manim scenes of the "ShiftViT, step by step" tutorial (see animations/README.md).

Not part of the installed ``shiftvit_lib`` package: the rendered GIFs are
shipped in ``shiftvit_lib/assets/animations/`` instead, so the notebooks can
show them without Manim.
"""
