"""A stdlib-only PNG reader for the e2e checks: an 8-bit RGB PNG (what screen.snapshot sends) as
rows of RGB bytes, the five PNG row filters undone, so a check can read real pixels with no
image library. Shared by e2e/lib/node_checks.py (the SDK drivers) and e2e/gateway/node_capture.py
(which runs without the MCP SDK). A file that is not such a PNG raises ValueError saying why.
"""

from __future__ import annotations

import struct
import zlib


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def png_rgb_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decodes an 8-bit RGB PNG to (width, height, rows of RGB bytes)."""
    _expect(data[:8] == b"\x89PNG\r\n\x1a\n", f"not a PNG: {data[:8]!r}")
    at, idat, header = 8, b"", None
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    _expect(header is not None, "PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    _expect((depth, colour, interlace) == (8, 2, 0), f"expected 8-bit RGB non-interlaced, got {header}")
    raw, stride, rows, previous = zlib.decompress(idat), width * 3, [], bytearray(width * 3)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - 3] if x >= 3 else 0
            up, up_left = previous[x], previous[x - 3] if x >= 3 else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows
