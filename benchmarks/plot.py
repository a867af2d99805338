"""A line chart as a PNG, with no plotting library: pods Running over time, one line per system.

matplotlib is not in the workspace's lock, and one chart kind does not justify adding it (and Pillow,
kiwisolver, fonttools...) for every engineer's and CI's environment; this draws axes, nice ticks, a
grid, a legend and a title with a 5x7 bitmap font, and encodes the PNG with zlib. Pure: data in, bytes
out (`line_chart`), so it is tested without files.
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

Point = tuple[float, float]
Color = tuple[int, int, int]

WIDTH: Final = 960
HEIGHT: Final = 540
MAX_POINTS: Final = 4000  # per line: more than the pixels across, so nothing visible is lost
PALETTE: Final[tuple[Color, ...]] = (
    (31, 119, 180),
    (214, 39, 40),
    (44, 160, 44),
    (255, 127, 14),
    (148, 103, 189),
    (140, 86, 75),
)
_INK: Final = (40, 40, 40)
_GRID: Final = (225, 225, 225)
_WHITE: Final = (255, 255, 255)
_SCALE: Final = 2  # font pixels per glyph pixel
_LEFT, _RIGHT, _TOP, _BOTTOM = 110, 30, 60, 80

# 5x7 glyphs, one 5-bit row per number (the leftmost pixel is bit 4); lower case draws as upper case.
_GLYPHS: Final[dict[str, tuple[int, ...]]] = {
    "0": (0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E),
    "1": (0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "2": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F),
    "3": (0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E),
    "4": (0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02),
    "5": (0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E),
    "6": (0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E),
    "7": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08),
    "8": (0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E),
    "9": (0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C),
    "A": (0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11),
    "B": (0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E),
    "C": (0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E),
    "D": (0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C),
    "E": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F),
    "F": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10),
    "G": (0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F),
    "H": (0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11),
    "I": (0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "J": (0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C),
    "K": (0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11),
    "L": (0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F),
    "M": (0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11),
    "N": (0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11),
    "O": (0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E),
    "P": (0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10),
    "Q": (0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D),
    "R": (0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11),
    "S": (0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E),
    "T": (0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04),
    "U": (0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E),
    "V": (0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04),
    "W": (0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A),
    "X": (0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11),
    "Y": (0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04),
    "Z": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F),
    " ": (0, 0, 0, 0, 0, 0, 0),
    ".": (0, 0, 0, 0, 0, 0x0C, 0x0C),
    ",": (0, 0, 0, 0, 0x0C, 0x04, 0x08),
    ":": (0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0),
    "-": (0, 0, 0, 0x1F, 0, 0, 0),
    "/": (0, 0x01, 0x02, 0x04, 0x08, 0x10, 0),
    "(": (0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02),
    ")": (0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08),
    "%": (0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03),
    "_": (0, 0, 0, 0, 0, 0, 0x1F),
    "=": (0, 0, 0x1F, 0, 0x1F, 0, 0),
    "+": (0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0),
    "?": (0x0E, 0x11, 0x01, 0x02, 0x04, 0, 0x04),
}


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    points: Sequence[Point]  # (x, y), x ascending


class Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(_WHITE * (width * height))

    def dot(self, x: int, y: int, color: Color) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            at = (y * self.width + x) * 3
            self.pixels[at : at + 3] = bytes(color)

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: Color) -> None:
        for y in range(max(0, y0), min(self.height, y1)):
            start, end = (y * self.width + max(0, x0)) * 3, (y * self.width + min(self.width, x1)) * 3
            if end > start:
                self.pixels[start:end] = bytes(color) * ((end - start) // 3)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: Color, width: int = 1) -> None:
        """Bresenham, `width` pixels thick (a square brush)."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            if width == 1:
                self.dot(x0, y0, color)
            else:
                self.rect(x0 - width // 2, y0 - width // 2, x0 + (width + 1) // 2, y0 + (width + 1) // 2, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x: int, y: int, text: str, color: Color = _INK, *, vertical: bool = False) -> None:
        """`text` from its top-left corner (bottom-left reading upwards when `vertical`)."""
        for i, ch in enumerate(text):
            rows = _GLYPHS.get(ch.upper(), _GLYPHS["?"])
            for r, bits in enumerate(rows):
                for c in range(5):
                    if bits & (0x10 >> c):
                        gx, gy = (r, -c) if vertical else (c, r)
                        ox = x + gx * _SCALE + (0 if vertical else i * 6 * _SCALE)
                        oy = y + gy * _SCALE - (i * 6 * _SCALE if vertical else 0)
                        self.rect(ox, oy, ox + _SCALE, oy + _SCALE, color)

    def png(self) -> bytes:
        raw = b"".join(
            b"\x00" + bytes(self.pixels[y * self.width * 3 : (y + 1) * self.width * 3]) for y in range(self.height)
        )
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        chunks = _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b"")
        return b"\x89PNG\r\n\x1a\n" + chunks


def text_width(text: str) -> int:
    return len(text) * 6 * _SCALE


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """0 and round steps (1, 2 or 5 times a power of ten) up to at least `high`."""
    if high <= 0 or not math.isfinite(high):
        return [0.0, 1.0]
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < high - 1e-9 * step:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def tick_label(value: float) -> str:
    if value >= 1_000_000 and value % 100_000 == 0:
        return f"{value / 1_000_000:g}M"
    if value >= 10_000 and value % 1000 == 0:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def thin(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """At most `limit` points, evenly picked, the first and last kept."""
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def line_chart(
    lines: Sequence[Line], *, title: str, x_label: str, y_label: str, width: int = WIDTH, height: int = HEIGHT
) -> bytes:
    """The PNG of `lines` on shared axes from 0, ticks at round numbers, a legend in the top-left."""
    canvas = Canvas(width, height)
    x_max = max((p[0] for ln in lines for p in ln.points), default=1.0)
    y_max = max((p[1] for ln in lines for p in ln.points), default=1.0)
    x_ticks, y_ticks = nice_ticks(x_max), nice_ticks(y_max)
    left, top, right, bottom = _LEFT, _TOP, width - _RIGHT, height - _BOTTOM

    def px(x: float) -> int:
        return left + round((right - left) * x / x_ticks[-1])

    def py(y: float) -> int:
        return bottom - round((bottom - top) * y / y_ticks[-1])

    for tick in x_ticks:
        canvas.line(px(tick), top, px(tick), bottom, _GRID)
        label = tick_label(tick)
        canvas.text(px(tick) - text_width(label) // 2, bottom + 10, label)
    for tick in y_ticks:
        canvas.line(left, py(tick), right, py(tick), _GRID)
        label = tick_label(tick)
        canvas.text(left - 10 - text_width(label), py(tick) - 7, label)
    canvas.line(left, bottom, right, bottom, _INK, 2)
    canvas.line(left, top, left, bottom, _INK, 2)
    canvas.text((width - text_width(title)) // 2, 18, title)
    canvas.text((left + right - text_width(x_label)) // 2, height - 34, x_label)
    canvas.text(16, (top + bottom + text_width(y_label)) // 2, y_label, vertical=True)
    for i, ln in enumerate(lines):
        color = PALETTE[i % len(PALETTE)]
        points = thin(ln.points)
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            canvas.line(px(x0), py(y0), px(x1), py(y1), color, 2)
        if len(points) == 1:
            canvas.rect(px(points[0][0]) - 2, py(points[0][1]) - 2, px(points[0][0]) + 3, py(points[0][1]) + 3, color)
        ly = top + 12 + i * 22
        canvas.rect(left + 14, ly + 2, left + 34, ly + 12, color)
        canvas.text(left + 42, ly, ln.label)
    return canvas.png()
