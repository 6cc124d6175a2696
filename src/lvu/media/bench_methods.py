"""The methods `lvu bench decode` times, each run once in its own child process (`_child`).

(Split out of lvu.media.bench, which drives them and reports.)
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time
from collections.abc import Callable

import numpy as np

from lvu.media.benchvideo import read_code

_extra: dict = {}
"""What a method leaves for accounting after the timed part (lvu exact: the packets it sent)."""


def _lvu(path: str, indices: list[int], approximate: bool) -> list[np.ndarray]:
    from lvu.media.video import VideoReader

    with VideoReader(path, approximate=approximate, record_packets=not approximate) as r:
        frames = r.get_frames_at(indices).data
        _extra["sent"] = r.packets_sent
        return frames


def _lvu_cache(path: str, indices: list[int], fps: float, cache_dir: str) -> list[np.ndarray]:
    from lvu.media.cache import FrameCache

    times = [i / fps for i in indices]  # index / fps is exactly frame `index` on constant-rate video
    return FrameCache(cache_dir).get_or_decode(path, times).data


def _lmms_eval_pyav(path: str, indices: list[int]) -> list[np.ndarray]:
    """lmms-eval's read_video_pyav -> load_video_stream -> record_video_length_stream, as written
    there (frames kept as av.VideoFrame, converted at the end), given the same indices."""
    import av

    container = av.open(path)
    try:
        container.streams.video[0].thread_type = "AUTO"
        frames = []
        start_index, end_index = indices[0], indices[-1]
        index_set = set(indices)
        for i, frame in enumerate(container.decode(video=0)):
            if i > end_index:
                break
            if i >= start_index and i in index_set:
                frames.append(frame)
        return list(np.ascontiguousarray(np.stack([f.to_ndarray(format="rgb24") for f in frames])))
    finally:
        container.close()


def _decord(path: str, indices: list[int]) -> list[np.ndarray]:
    import decord

    vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=2)
    try:
        return list(np.ascontiguousarray(vr.get_batch(indices).asnumpy()))
    finally:
        del vr


def _torchcodec(path: str, indices: list[int]) -> list[np.ndarray]:
    from torchcodec.decoders import VideoDecoder

    decoder = VideoDecoder(path, seek_mode="exact", num_ffmpeg_threads=0, dimension_order="NHWC", device="cpu")
    return list(np.ascontiguousarray(decoder.get_frames_at(indices).data.numpy()))


def _keyframes_only(path: str, indices: list[int], fps: float) -> list[np.ndarray]:
    """Decode only the keyframes of the whole file, in one pass; each target gets the last
    keyframe at or before it. Converted to RGB only where used."""
    import av

    with av.open(path) as container:
        stream = container.streams.video[0]  # PyAV's default slice threading: frame threads
        stream.codec_context.skip_frame = "NONKEY"  # are slower here (2.3 s vs 1.8 s, 60-min GOP 250)
        assert stream.time_base is not None  # a demuxed video stream always has one
        tb, origin = float(stream.time_base), None
        targets = sorted(set(indices))
        picked: dict[int, np.ndarray] = {}
        k, last = 0, None
        for frame in container.decode(stream):
            assert frame.pts is not None  # the numbering below needs pts (None failed there before too)
            origin = frame.pts if origin is None else origin
            number = round((frame.pts - origin) * tb * fps)
            if last is not None and k < len(targets) and targets[k] < number:
                rgb = last.to_ndarray(format="rgb24")
                while k < len(targets) and targets[k] < number:
                    picked[targets[k]] = rgb
                    k += 1
            last = frame
        if last is not None and k < len(targets):
            rgb = last.to_ndarray(format="rgb24")
            for t in targets[k:]:
                picked[t] = rgb
        return [picked[i] for i in indices]


def _setup_floor(path: str, indices: list[int]) -> None:
    """Untimed: the packet table (decode order, keyframe and reference flags) and the target pts."""
    from lvu.media.decode_floor import packet_table

    table = packet_table(path)
    _extra["table"], _extra["targets"] = table, _target_pts(table, indices)


def _target_pts(table, indices: list[int]) -> list[int]:
    shown = np.sort(table.pts)  # display order
    return [int(shown[i]) for i in indices]


def _exact_floor(path: str, indices: list[int]) -> list[np.ndarray]:
    """PyAV decoding exactly the frames an exact decoder must decode (lvu.media.decode_floor),
    with as many single-threaded decoders side by side as lvu's reader uses."""
    from lvu.media.decode_floor import floor_decode
    from lvu.media.gop_runs import decoder_count

    table, targets = _extra["table"], _extra["targets"]
    frames, _extra["decoded"] = floor_decode(path, table, targets, decoders=decoder_count(0))
    return [frames[t] for t in targets]


def _accounting(method: str, path: str, indices: list[int]) -> dict:
    """Untimed, after the run: frames decoded and the request's minimum (exact floor, lvu exact)."""
    from lvu.media.decode_floor import frames_decoded, minimum_frames, packet_table

    if method == "exact floor":
        return {"decoded": _extra["decoded"], "minimum": minimum_frames(_extra["table"], _extra["targets"])}
    if method == "lvu exact" and _extra.get("sent") is not None:
        table = packet_table(path)
        return {"decoded": frames_decoded(table, _extra["sent"]),
                "minimum": minimum_frames(table, _target_pts(table, indices))}
    return {}


def _child() -> None:
    """Child process entry: run one method once, print one JSON line with its measurements."""
    spec = json.loads(sys.argv[1])
    method, path, indices = spec["method"], spec["path"], spec["indices"]
    fps, cache_dir = spec["fps"], spec.get("cache_dir")
    runs: dict[str, tuple[str, Callable[[], list[np.ndarray]]]] = {  # (module to preload, call)
        "lvu exact": ("lvu.media.video", lambda: _lvu(path, indices, False)),
        "lvu approximate": ("lvu.media.video", lambda: _lvu(path, indices, True)),
        "lvu cache miss": ("lvu.media.cache", lambda: _lvu_cache(path, indices, fps, cache_dir)),
        "lvu cache hit": ("lvu.media.cache", lambda: _lvu_cache(path, indices, fps, cache_dir)),
        "lmms-eval pyav": ("av", lambda: _lmms_eval_pyav(path, indices)),
        "decord": ("decord", lambda: _decord(path, indices)),
        "torchcodec": ("torchcodec.decoders", lambda: _torchcodec(path, indices)),
        "exact floor": ("lvu.media.decode_floor", lambda: _exact_floor(path, indices)),
        "keyframes only": ("av", lambda: _keyframes_only(path, indices, fps)),
    }
    if method not in runs:
        raise SystemExit(f"unknown method {method!r}")
    module, run = runs[method]
    importlib.import_module(module)  # imports are not timed
    if method == "exact floor":
        _setup_floor(path, indices)  # nor is planning what to decode
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    frames = run()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    codes = [read_code(f) for f in frames]
    shapes = sorted({tuple(f.shape) for f in frames})
    print(json.dumps({"seconds": wall, "cpu": cpu / wall if wall > 0 else 0.0, "rss_mb": _peak_rss_mb(r1),
                      "codes": codes, "shapes": shapes, **_accounting(method, path, indices)}))


def _peak_rss_mb(usage: resource.struct_rusage) -> float:
    """This process's peak RSS. Linux keeps the parent's high-water mark in ru_maxrss across
    fork + exec, so the address space's own VmHWM is read where /proc has it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
