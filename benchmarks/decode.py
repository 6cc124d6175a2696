#!/usr/bin/env python
"""Decode benchmark: lvu's VideoReader (exact, approximate, cache hit) against lmms-eval's sequential
PyAV reader, decord, torchcodec and the keyframes-only floor, side by side on generated 10- and
60-minute H.264 videos. All logic lives in lvu.media.bench (also `lvu bench decode`).

    python benchmarks/decode.py [--quick] [--minutes 10 60] [--gop 30 250] [--n 8 32 64 256]
"""

import sys

from lvu.media.bench import main

if __name__ == "__main__":
    sys.exit(main())
