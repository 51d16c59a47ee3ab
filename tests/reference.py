"""Plain NumPy transcriptions of official formulas, written independently of the library."""

import numpy as np


def shift_nhwc(x_nhwc: np.ndarray, n_div: int, shift_pixel: int = 1) -> np.ndarray:
    """SPACH's ``ShiftViTBlock.shift_feat``, generalised to ``shift_pixel``, on an NHWC array (moved to
    NCHW and back, as SPACH lays it out)."""
    x_nchw = x_nhwc.transpose(0, 3, 1, 2)
    g = x_nchw.shape[1] // n_div
    s = shift_pixel
    out = np.zeros_like(x_nchw)
    out[:, g * 0 : g * 1, :, :-s] = x_nchw[:, g * 0 : g * 1, :, s:]  # left
    out[:, g * 1 : g * 2, :, s:] = x_nchw[:, g * 1 : g * 2, :, :-s]  # right
    out[:, g * 2 : g * 3, :-s, :] = x_nchw[:, g * 2 : g * 3, s:, :]  # up
    out[:, g * 3 : g * 4, s:, :] = x_nchw[:, g * 3 : g * 4, :-s, :]  # down
    out[:, g * 4 :] = x_nchw[:, g * 4 :]
    return out.transpose(0, 2, 3, 1)


def warmup_cosine(step: float, lr_start: float, lr_max: float, warmup: int, total: int) -> float:
    """The keras-io example's warm-up cosine learning rate at one step."""
    if step > total:
        return 0.0
    if warmup > 0 and step < warmup:
        return lr_start + (lr_max - lr_start) * step / warmup
    return 0.5 * lr_max * (1 + np.cos(np.pi * (step - warmup) / (total - warmup)))
