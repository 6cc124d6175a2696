#!/usr/bin/env python
"""Decode benchmark: lvu's VideoReader (exact, approximate, cache hit) against lmms-eval's sequential
PyAV reader, decord, torchcodec, the exact floor (PyAV decoding only the frames an exact read must
decode; lvu.media.decode_floor) and keyframes only, side by side on generated 10- and 60-minute
H.264 videos. All logic lives in lvu.media.bench (also `lvu bench decode`).

    python benchmarks/decode.py [--quick] [--minutes 10 60] [--gop 30 250] [--n 8 32 64 256] [--repeat 3]
    python benchmarks/decode.py --minutes 10 60 --gop 30 250 --n 32 256 --methods "lvu exact" "exact floor" --repeat 5
"""

import sys

from lvu.media.bench import main

if __name__ == "__main__":
    sys.exit(main())
