"""The image container: serialisation and precise errors for bad files."""

import pytest

from xdsa.golden.image import Image, ImageError, Segment, SegmentKind, Symbol, Annotation


def _image():
    return Image(0x40, [Segment(SegmentKind.DATA, 0x1000, b"\x01\x02"),
                        Segment(SegmentKind.PROGRAM, 0x40, bytes(544), 3)],
                 [Symbol("a", 0x1000)], [Annotation(0x1000, 1, 2)], {(2, 9): 4})


def test_round_trip_and_order():
    img = _image()
    assert [s.address for s in img.segments] == [0x40, 0x1000]
    again = Image.from_bytes(img.to_bytes())
    assert again.to_bytes() == img.to_bytes()
    assert again.keys == {(2, 9): 4} and again.symbols == [Symbol("a", 0x1000)]
    mem = again.memory(0x2000)
    assert mem[0x1000:0x1002] == b"\x01\x02"


def test_errors():
    data = _image().to_bytes()
    with pytest.raises(ImageError, match="not an xDSA image"):
        Image.from_bytes(b"NOTANIMG" + data[8:], "x.img")
    with pytest.raises(ImageError, match=r"x.img: truncated in segment 0 data \(needs 544 bytes at offset 56"):
        Image.from_bytes(data[:120], "x.img")
    with pytest.raises(ImageError, match="trailing bytes"):
        Image.from_bytes(data + b"\0", "x.img")
    with pytest.raises(ImageError, match="segments overlap"):
        Image(0, [Segment(SegmentKind.DATA, 0, b"123"), Segment(SegmentKind.DATA, 2, b"4")])
    with pytest.raises(ImageError, match=r"data segment at 0x1000..0x1002 does not fit in a 4096-byte memory"):
        _image().memory(0x1000)
    with pytest.raises(ImageError, match="cannot read"):
        Image.load("/nonexistent/x.img")
