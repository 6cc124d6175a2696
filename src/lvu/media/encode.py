"""Writing H.264 with PyAV's bundled libx264: the one place lvu sets encoder options (the built-in
haystack's generator and `lvu build needle` both encode through here), plus the H.264 bitstream
helpers a splice needs (parameter sets of an avcC record, Annex B -> length-prefixed NAL units).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from typing import Any

import av


def x264_options(*, gop: int, crf: int = 23, preset: str = "veryfast", bframes: int | None = None,
                 repeat_headers: bool = False, threads: int | None = None) -> dict[str, str]:
    """Encoder options: a keyframe exactly every `gop` frames (no scene-cut keyframes, closed GOPs,
    so every keyframe is a cut point and a seek target); `bframes=None` keeps x264's default;
    `repeat_headers` puts SPS/PPS in front of every keyframe (a stream spliced between other
    streams must carry its own). `threads=1` makes the bytes reproducible: with several threads
    (frame or sliced) x264 gave different bitstreams for identical input on short runs (measured
    with PyAV 18's libx264; tests/test_build_needle.py pins same seed = same bytes); so does
    leaving out AVX-512 (`no_avx512`)."""
    params = f"keyint={gop}:min-keyint={gop}:scenecut=0:open-gop=0" + no_avx512()
    if bframes is not None:
        params += f":bframes={bframes}"
    if repeat_headers:
        params += ":repeat-headers=1"
    options = {"preset": preset, "crf": str(crf), "x264-params": params}
    if threads is not None:
        options["threads"] = str(threads)
    return options


@cache
def no_avx512() -> str:
    """`:asm=...` without AVX-512 on a CPU that has it (else ""): x264's AVX-512 macroblock-tree code
    reads uninitialised heap memory, so with threads=1 the bytes still changed with what the process
    had freed before (1-3 bytes of a slice, same decoded picture). AVX2 gives the bytes a clean heap
    gives; every AVX-512 CPU has all the flags listed."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return ""
    if "avx512f" not in flags:
        return ""
    return ":asm=MMX2,SSE,SSE2,SSE2Fast,LZCNT,SSE3,SSSE3,SSE4.1,SSE4.2,AVX,FMA3,BMI1,BMI2,AVX2"


def add_h264_stream(container: Any, width: int, height: int, rate: Fraction | int, **options: Any) -> Any:
    """A yuv420p libx264 stream on an output container, options as `x264_options(**options)`."""
    stream = container.add_stream("libx264", rate=Fraction(rate))
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
    stream.options = x264_options(**options)
    return stream


def h264_encoder(width: int, height: int, rate: Fraction, time_base: Fraction, **options: Any) -> Any:
    """A standalone libx264 encoder (no container): its packets are Annex B with in-band SPS/PPS,
    for splicing into another stream's packets."""
    cc = av.CodecContext.create("libx264", "w")
    cc.width, cc.height, cc.pix_fmt = width, height, "yuv420p"
    cc.framerate, cc.time_base = rate, time_base
    cc.options = x264_options(**options)
    return cc


# ---- H.264 bitstream ------------------------------------------------------------------------------


def avcc_parameter_sets(extradata: bytes) -> tuple[int, list[bytes]]:
    """(NAL length size, [SPS..., PPS...]) of an avcC record (ISO 14496-15: MP4/MOV/MKV extradata)."""
    if len(extradata) < 7 or extradata[0] != 1:
        raise ValueError("not an avcC record")
    size = (extradata[4] & 3) + 1
    nals, pos = [], 5
    for count_mask in (0x1F, 0xFF):  # SPS count has 5 bits, PPS count 8
        count = extradata[pos] & count_mask
        pos += 1
        for _ in range(count):
            n = int.from_bytes(extradata[pos:pos + 2], "big")
            nals.append(bytes(extradata[pos + 2:pos + 2 + n]))
            pos += 2 + n
    return size, nals


def annexb_nals(data: bytes) -> list[bytes]:
    """The NAL units of an Annex B byte stream (start codes 00 00 01 / 00 00 00 01 removed)."""
    out, i, n = [], 0, len(data)
    starts = []
    while True:
        j = data.find(b"\x00\x00\x01", i)
        if j < 0:
            break
        starts.append(j + 3)
        i = j + 3
    for k, s in enumerate(starts):
        end = starts[k + 1] - 3 if k + 1 < len(starts) else n
        nal = data[s:end]
        if k + 1 < len(starts) and nal.endswith(b"\x00"):  # the 4-byte start code's leading zero
            nal = nal.rstrip(b"\x00")
        if nal:
            out.append(nal)
    return out


def length_prefixed(nals: list[bytes], size: int = 4) -> bytes:
    """NAL units as an MP4 sample: each prefixed by its length in `size` bytes."""
    return b"".join(len(n).to_bytes(size, "big") + n for n in nals)
