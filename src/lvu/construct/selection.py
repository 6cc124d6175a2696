"""Stage i of Neptune's pipeline (paper §4.1 and App. C.1 "Video Selection"): which videos to keep.

    duration_filter(95.0)                      # FilterResult(keep=True, reason="duration 95.0 s is within ...")
    static_filter("v.mp4")                     # keep when its frames form more than 1 visual cluster
    talking_head_filter("v.mp4")               # drop when > 30 % of 1 fps frames show a face > 20 % tall

Each filter returns a FilterResult: the decision, a one-line reason and JSON-able evidence (the
numbers the decision rests on), which the build records per video. Thresholds are arguments with
the paper's values as defaults; where the paper leaves a detail open (the clustering features and
rule, the face detector), the choice is stated here and in docs/build.md ("Selection filters and
signals"). Frames come through lvu's media layer (lvu.construct.signals.iter_frames: the `fps:F` plan).
An unreadable video raises DataError naming the file.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lvu.construct.signals import DEFAULT_FPS, iter_frames, probe_video
from lvu.errors import LvuError
from lvu.media.av_io import Resize

MIN_SECONDS: float | None = None
"""Default shortest video: none. The paper's "the smallest video being 16 seconds" (§3) describes its
data; it states no minimum (lvu's --min-seconds sets one)."""
MAX_SECONDS: float | None = None
"""Default longest video: none. Neptune truncates videos longer than 15 minutes (§3) instead of
dropping them (NeptuneOptions.truncate_seconds)."""
THUMB_SIZE = (64, 48)
"""Static filter: each frame becomes a 64x48 grey thumbnail (the decoder's area downscale): every
cell is 1/64 of the width and 1/48 of the height, so a scoreboard digit or a line of sign text
changes at least one cell clearly."""
STATIC_THRESHOLD = 0.08
"""Static filter: frames whose thumbnails differ by at most this much in every cell (the largest
cell difference, 0..1: 0.08 is ~20 of 255 grey levels) may share a cluster. Encoder and sensor noise
on a still picture measure ~0.01-0.02; a changed score digit or scrolled text > 0.1."""
MIN_CLUSTER_FRAMES = 2
"""Static filter: a video is static when all its sampled frames but fewer than this many fall in
one cluster, so a single fade-in or black frame does not make a still-image video 'dynamic'."""
_LUMA = np.asarray([0.299, 0.587, 0.114], np.float32)
STATIC_MAX_FRAMES = 900
"""Static filter: at most this many frames (evenly spread over longer videos; 15 min at 1 fps)."""
MIN_FACE_HEIGHT = 0.20
"""Talking-head filter: a frame is a talking-head frame when a frontal face box is taller than
this fraction of the frame height (paper App. C.1)."""
MAX_TALKING_FRACTION = 0.30
"""Talking-head filter: drop the video when more than this fraction of its frames are talking-head
frames (paper App. C.1; both thresholds chosen there by F1 on 50 annotated videos)."""
FRONTAL_KINDS = (0, 3, 4)
"""dlib's frontal face detector is 5 HOG filters: 0 front, 1 left-looking, 2 right-looking,
3 and 4 front and tilted. The paper counts frontal-gazing faces only: 0, 3 and 4."""
_HOG_WINDOW = 80
"""dlib's detector finds faces from ~80 px tall; frames are scaled so a face at the threshold
height is at least 1.2x that (480 px frames at the default 20 %)."""


@dataclass(frozen=True)
class FilterResult:
    """One filter's decision on one video."""

    name: str
    """"duration", "static" or "talking_head"."""
    keep: bool
    reason: str
    """One line a person reads: what was measured against which threshold."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """The numbers behind the decision (JSON-able)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def duration_filter(duration_s: float, min_s: float | None = MIN_SECONDS,
                    max_s: float | None = MAX_SECONDS) -> FilterResult:
    """Keep videos with min_s <= duration <= max_s seconds (None: no bound on that side)."""
    if min_s is not None and max_s is not None and min_s > max_s:
        raise LvuError(f"duration range is empty: min {min_s} s > max {max_s} s — swap or widen the bounds")
    d = round(float(duration_s), 3)
    evidence = {"duration_s": d, "min_s": min_s, "max_s": max_s}
    if min_s is not None and d < min_s:
        return FilterResult("duration", False, f"duration {d:g} s is below the minimum {min_s:g} s", evidence)
    if max_s is not None and d > max_s:
        return FilterResult("duration", False, f"duration {d:g} s is above the maximum {max_s:g} s", evidence)
    low = f"{min_s:g}" if min_s is not None else "0"
    high = f"{max_s:g}" if max_s is not None else "inf"
    return FilterResult("duration", True, f"duration {d:g} s is within [{low}, {high}] s", evidence)


# ---- static videos ----------------------------------------------------------------------------


def _complete_linkage(features: np.ndarray, threshold: float) -> tuple[np.ndarray, float]:
    """(cluster label per frame, largest difference between two frames) by complete-linkage
    agglomerative clustering cut at `threshold`, the distance between two frames being their
    largest cell difference (Chebyshev): every two frames of a cluster differ by at most `threshold`
    in every cell, so a slow pan or fade cannot chain the whole video into one cluster, and a
    change confined to a small region (a score, a line of text) separates frames."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist

    if len(features) < 2:
        return np.ones(len(features), int), 0.0
    distances = pdist(features, "chebyshev")
    return fcluster(linkage(distances, "complete"), t=threshold, criterion="distance"), float(distances.max())


def static_filter(video_path: str | Path, fps: float = DEFAULT_FPS, *, threshold: float = STATIC_THRESHOLD,
                  min_cluster_frames: int = MIN_CLUSTER_FRAMES, max_frames: int | None = STATIC_MAX_FRAMES,
                  until: float | None = None) -> FilterResult:
    """Keep videos whose frames form more than one visual cluster (paper App. C.1: "clustering
    similar frames in a video and ensure that there is more than 1 cluster"; this drops, e.g., a
    single picture with a voice-over). Frames at `fps` (the first `until` seconds) become THUMB_SIZE
    grey thumbnails, clustered by complete linkage on their largest cell difference at `threshold`;
    the video is static when all frames but fewer than `min_cluster_frames` share one cluster."""
    try:
        import scipy  # noqa: F401
    except ImportError:
        raise LvuError("the static-video filter needs scipy: pip install 'lvu[build]'") from None
    thumbs = [img for _, img in iter_frames(video_path, fps, resize=Resize(size=THUMB_SIZE), max_frames=max_frames,
                                            until=until)]
    features = (np.stack(thumbs).astype(np.float32) @ _LUMA).reshape(len(thumbs), -1) / 255.0
    labels, spread = _complete_linkage(features, threshold)
    sizes = sorted((int(n) for n in np.bincount(labels)[1:] if n), reverse=True)
    outside = len(features) - sizes[0]
    evidence = {
        "frames": len(features), "fps": fps, "clusters": len(sizes), "cluster_sizes": sizes[:20],
        "frames_outside_largest": outside, "threshold": threshold, "min_cluster_frames": min_cluster_frames,
        "max_frame_difference": round(spread, 4), "thumbnail": list(THUMB_SIZE),
    }
    if outside >= min_cluster_frames:
        return FilterResult("static", True, f"{len(sizes)} visual clusters in {len(features)} frames ({outside} "
                            "outside the largest)", evidence)
    return FilterResult("static", False, f"static: {len(features) - outside} of {len(features)} frames in one visual "
                        f"cluster (needs at least {min_cluster_frames} outside it; largest cell difference "
                        f"{spread:.3f}, threshold {threshold:g})", evidence)


# ---- talking heads ----------------------------------------------------------------------------


def _frontal_detector() -> Any:
    try:
        import dlib
    except ImportError:
        raise LvuError("the talking-head filter needs dlib's face detector: pip install 'lvu[build]' "
                       "(the dlib-bin wheel)") from None
    return dlib.get_frontal_face_detector()


def face_heights(image: np.ndarray, detector: Any = None, *, frontal_only: bool = True) -> list[float]:
    """Heights of the faces dlib's frontal face detector finds in an RGB frame, as fractions of the
    frame height (boxes clipped to the frame), tallest first. `frontal_only` keeps faces looking
    at the camera (FRONTAL_KINDS)."""
    detector = detector or _frontal_detector()
    h = image.shape[0]
    boxes, _scores, kinds = detector.run(np.ascontiguousarray(image), 0, 0.0)
    heights = [(min(h, b.bottom() + 1) - max(0, b.top())) / h
               for b, kind in zip(boxes, kinds) if not frontal_only or int(kind) in FRONTAL_KINDS]
    return sorted((round(x, 4) for x in heights if x > 0), reverse=True)


def talking_head_filter(video_path: str | Path, fps: float = DEFAULT_FPS, min_face_height: float = MIN_FACE_HEIGHT,
                        max_fraction: float = MAX_TALKING_FRACTION, *, frontal_only: bool = True,
                        until: float | None = None) -> FilterResult:
    """Drop videos where more than `max_fraction` of the frames at `fps` are talking-head frames:
    a frontal face box taller than `min_face_height` of the frame (paper App. C.1). Faces are
    found by dlib's HOG frontal face detector (built into the dlib library, nothing downloaded);
    frames are scaled so a face at the threshold is well above the detector's smallest size."""
    if not 0 < min_face_height < 1 or not 0 <= max_fraction <= 1:
        raise LvuError(f"talking-head thresholds out of range: min_face_height={min_face_height} must be in (0, 1), "
                       f"max_fraction={max_fraction} in [0, 1]")
    detector = _frontal_detector()
    info = probe_video(video_path)
    height = min(2160, math.ceil(1.2 * _HOG_WINDOW / min_face_height))
    size = (max(1, round(info.width * height / info.height)), height)
    ratios = [(face_heights(img, detector, frontal_only=frontal_only) or [0.0])[0]
              for _, img in iter_frames(video_path, fps, resize=Resize(size=size), until=until)]
    talking = sum(r > min_face_height for r in ratios)
    fraction = talking / len(ratios) if ratios else 0.0
    evidence = {
        "frames": len(ratios), "fps": fps, "talking_head_frames": talking, "fraction": round(fraction, 4),
        "min_face_height": min_face_height, "max_fraction": max_fraction, "face_height_ratios": ratios,
        "detector": "dlib frontal HOG" + (" (frontal-gazing kinds only)" if frontal_only else ""),
    }
    what = f"{talking} of {len(ratios)} frames ({fraction:.0%}) show a frontal face taller than {min_face_height:.0%}"
    if fraction > max_fraction:
        return FilterResult("talking_head", False, f"talking head: {what} (limit {max_fraction:.0%})", evidence)
    return FilterResult("talking_head", True, f"{what} (limit {max_fraction:.0%})", evidence)
