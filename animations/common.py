"""Pieces shared by the tutorial's Manim scenes."""

from __future__ import annotations

import numpy as np
from manim import Animation, Mobject, VMobject, smooth

# A font from Debian's fonts-dejavu-core, so renders look the same on any fresh
# machine (Pango silently substitutes another font when the name is unknown).
FONT = "DejaVu Sans"

_RGBA_ATTRS = ("fill_rgbas", "stroke_rgbas", "background_stroke_rgbas")


class Glide(Animation):
    """Move a mobject by ``vector`` and optionally fade it in or out, without copying it.

    Manim's ``.animate``, ``FadeIn`` and ``FadeOut`` deep-copy the whole
    mobject family before they start; for grids made of dozens of ``Text``
    cells those copies cost seconds per render.  ``Glide`` instead shifts the
    mobject in place each frame and scales every part's opacity relative to
    its own starting opacity (so outline-only squares stay unfilled).

    ``fade="in"`` makes the mobject appear (it is added to the scene if
    needed); ``fade="out"`` leaves it fully transparent at the end, and the
    caller removes it afterwards.
    """

    def __init__(
        self, mobject: Mobject, vector=(0.0, 0.0, 0.0), fade: str | None = None, rate_func=smooth, **kwargs
    ):
        if fade not in (None, "in", "out"):
            raise ValueError(f"fade must be None, 'in' or 'out', not {fade!r}")
        super().__init__(mobject, rate_func=rate_func, introducer=(fade == "in"), **kwargs)
        self.vector = np.asarray(vector, dtype=float)
        self.fade = fade
        self._progress = 0.0
        self._opacities: list[tuple[VMobject, str, np.ndarray]] = []

    def create_starting_mobject(self) -> Mobject:
        return self.mobject  # no copy: interpolation below needs none

    def begin(self) -> None:
        if self.fade is not None:
            for part in self.mobject.family_members_with_points():
                for attr in _RGBA_ATTRS:
                    rgbas = getattr(part, attr, None)
                    if isinstance(rgbas, np.ndarray) and rgbas.size:
                        self._opacities.append((part, attr, rgbas[:, 3].copy()))
        super().begin()

    def interpolate_mobject(self, alpha: float) -> None:
        t = self.rate_func(alpha)
        self.mobject.shift((t - self._progress) * self.vector)
        self._progress = t
        if self.fade is not None:
            visible = t if self.fade == "in" else 1.0 - t
            for part, attr, opacity in self._opacities:
                getattr(part, attr)[:, 3] = opacity * visible
