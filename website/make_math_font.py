"""Make the site's math font, website/_static/fonts/shiftvit-math.woff2 ; run by hand.

    python website/make_math_font.py [--font /usr/share/fonts/truetype/dejavu/DejaVuMathTeXGyre.ttf]

The lessons' formulas are MathML, which the browser draws with a font that has an OpenType MATH
table (script shifts, fraction rules, stretchy brackets); without one, sub- and superscripts are
barely lowered and look different on every system. This keeps, of DejaVu Math TeX Gyre (Debian's
fonts-dejavu-extra), the characters a formula may use (Basic Latin, Greek, Latin-1, arrows,
mathematical operators and alphanumerics, letterlike symbols) with the MATH table and the layout
features, as woff2 (fontTools with brotli). The DejaVu licence (Bitstream Vera terms, DejaVu's and
the math extensions' changes public domain) lets a modified font be shipped if it is renamed to a
name without "Bitstream" or "Vera": it is renamed "ShiftViT Math", and the licence travels with it
(website/_static/fonts/LICENSE-shiftvit-math.txt).
"""

from __future__ import annotations

import argparse
from pathlib import Path

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuMathTeXGyre.ttf")
OUT = Path(__file__).resolve().parent / "_static" / "fonts" / "shiftvit-math.woff2"
FAMILY = "ShiftViT Math"
RANGES = [
    (0x0020, 0x007E),  # Basic Latin
    (0x00A0, 0x00FF),  # Latin-1: ×, ÷, ·, ±, ¬
    (0x0391, 0x03C9), (0x03D1, 0x03D6), (0x03F0, 0x03F5),  # Greek and its math variants
    (0x2010, 0x2044),  # dashes, primes, ellipsis, fraction slash
    (0x2061, 0x2064),  # invisible operators (function application, times, separator, plus)
    (0x2100, 0x214F),  # letterlike symbols: ℝ, ℓ, ℕ
    (0x2190, 0x21FF),  # arrows
    (0x2200, 0x22FF),  # mathematical operators
    (0x2308, 0x230B),  # ceilings and floors
    (0x23B4, 0x23E1),  # horizontal brackets and braces (under- and overbraces)
    (0x27E8, 0x27EF),  # angle brackets
    (0x1D400, 0x1D467),  # mathematical bold and italic Latin (a one-letter <mi> is drawn italic)
    (0x1D6A8, 0x1D71B),  # mathematical bold and italic Greek
    (0x1D7CE, 0x1D7D7),  # mathematical bold digits
]


def make(font_path: Path = FONT, out: Path = OUT) -> int:
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    font = subset.load_font(str(font_path), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[c for low, high in RANGES for c in range(low, high + 1)])
    subsetter.subset(font)
    for record in font["name"].names:
        if record.nameID in (1, 16):
            record.string = FAMILY
        elif record.nameID in (3, 4):
            record.string = f"{FAMILY} Regular"
        elif record.nameID == 6:
            record.string = "ShiftViTMath-Regular"
    assert "MATH" in font, "the MATH table was lost"
    out.parent.mkdir(parents=True, exist_ok=True)
    subset.save_font(font, str(out), options)
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--font", type=Path, default=FONT)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    size = make(args.font, args.out)
    print(f"wrote {args.out} ({size / 1000:.0f} kB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
