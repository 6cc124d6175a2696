"""The least work an exact decoder must do for a request, and the time PyAV takes to do just that.

Definition (what `lvu bench decode` compares lvu against). Packets in decode order p_0..p_{M-1},
each a keyframe or not and a reference frame or not (H.264: nal_ref_idc != 0 on its slices). For a
target frame t at decode position d(t), let k(t) be the last keyframe at or before d(t). An exact
decoder must decode

    R(t) = {d(t)} ∪ {j : k(t) <= j < d(t), p_j is a reference frame}

and the request's minimum is the union of R(t) over the distinct targets. Non-reference frames
that are no target are skipped (nothing depends on them); no reference frame between a keyframe
and a target can be: the decoder's reference state would break (H.264 frame_num gaps). This
assumes closed GOPs (x264's default, the benchmark videos'): no frame before d(t) and before k(t)
is needed.

`floor_decode` does exactly that with PyAV and nothing else: per GOP with targets one seek to its
keyframe, exactly the packets of the union sent to a single-threaded decoder, a drain after the
GOP's last needed packet, RGB conversion of the targets only; GOPs are split into contiguous runs
of equal work over `decoders` threads, each with its own demuxer and decoder (like lvu's reader).
The packet table is built beforehand (`packet_table`), outside any timing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np


@dataclass
class PacketTable:
    """Every packet of the video stream, in decode order."""

    pts: np.ndarray
    key: np.ndarray
    """Keyframe flag (bool)."""
    ref: np.ndarray
    """Reference-frame flag (bool)."""

    def position(self, pts: int) -> int:
        return self._positions()[int(pts)]

    def _positions(self) -> dict[int, int]:
        if not hasattr(self, "_pos"):
            self._pos = {int(p): i for i, p in enumerate(self.pts.tolist())}
        return self._pos


def _h264_reference(data: bytes, length_size: int) -> bool | None:
    """nal_ref_idc != 0 of the packet's first slice NAL (types 1 and 5); None when it has no slice.
    `length_size` 0: Annex-B start codes; else AVCC length prefixes of that many bytes."""
    i, n = 0, len(data)
    while i < n:
        if length_size:
            size = int.from_bytes(data[i : i + length_size], "big")
            head, i = i + length_size, i + length_size + size
        else:
            start = data.find(b"\x00\x00\x01", i)
            if start < 0:
                return None
            head = start + 3
            i = head
        if head < n and (data[head] & 0x1F) in (1, 5):
            return bool(data[head] >> 5 & 3)
    return None


def packet_table(path: str | Path) -> PacketTable:
    """One demux pass. Reference flags come from the H.264 NAL headers; for other codecs from a
    decode of the whole file with skip_frame="NONREF" (the frames it returns are the references)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        cc = stream.codec_context
        extra = bytes(cc.extradata or b"")
        length_size = (extra[4] & 3) + 1 if extra[:1] == b"\x01" and len(extra) > 4 else 0
        pts, key, ref = [], [], []
        for packet in container.demux(stream):
            if packet.size == 0 or packet.pts is None:
                continue
            pts.append(int(packet.pts))
            key.append(bool(packet.is_keyframe))
            ref.append(_h264_reference(bytes(packet), length_size) if cc.name == "h264" else None)
        if any(r is None for r in ref):
            refs = _references_by_decoding(path)
            ref = [p in refs for p in pts]
    return PacketTable(np.asarray(pts, np.int64), np.asarray(key, bool), np.asarray(ref, bool))


def _references_by_decoding(path: str | Path) -> set[int]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.skip_frame = "NONREF"
        return {int(f.pts) for f in container.decode(stream) if f.pts is not None}


def required_positions(table: PacketTable, targets: list[int]) -> np.ndarray:
    """Decode positions (ascending) of the union of R(t) over the target pts (module doc)."""
    keypos = np.flatnonzero(table.key)
    need = np.zeros(len(table.pts), bool)
    last_in_gop: dict[int, int] = {}
    for t in set(int(x) for x in targets):
        d = table.position(t)
        k = int(keypos[max(0, int(np.searchsorted(keypos, d, side="right")) - 1)])
        last_in_gop[k] = max(last_in_gop.get(k, d), d)
        need[d] = True
    for k, d in last_in_gop.items():
        need[k:d] |= table.ref[k:d]
    return np.flatnonzero(need)


def minimum_frames(table: PacketTable, targets: list[int]) -> int:
    """How many frames an exact decoder must decode for these target pts."""
    return len(required_positions(table, targets))


def frames_decoded(table: PacketTable, sent: list[tuple[int, str]]) -> int:
    """Frames a decoder decoded, from the packets it was sent as (pts, its skip_frame mode):
    DEFAULT decodes the packet, NONREF only a reference frame, NONKEY only a keyframe."""
    pos = table._positions()

    def decodes(p: int, mode: str) -> bool:
        i = pos.get(p)
        if mode == "NONREF":
            return i is not None and bool(table.ref[i])
        if mode == "NONKEY":
            return i is not None and bool(table.key[i])
        return True

    return sum(1 for p, mode in sent if decodes(p, mode))


def _gop_jobs(table: PacketTable, targets: list[int]) -> list[tuple[int, list[int]]]:
    """(keyframe pts, pts of the packets to send in decode order) for each GOP with targets."""
    need = required_positions(table, targets)
    keypos = np.flatnonzero(table.key)
    gop = keypos[np.searchsorted(keypos, need, side="right") - 1]
    jobs: dict[int, list[int]] = {}
    for g, p in zip(gop.tolist(), need.tolist()):
        jobs.setdefault(int(table.pts[g]), []).append(int(table.pts[p]))
    return list(jobs.items())


def _split(jobs: list[tuple[int, list[int]]], parts: int) -> list[list[tuple[int, list[int]]]]:
    from lvu.media.gop_runs import SEEK_COST_FRAMES, balanced_cuts

    cuts = [*balanced_cuts([len(sent) + SEEK_COST_FRAMES for _, sent in jobs], parts), len(jobs)]
    return [jobs[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def floor_decode(path: str | Path, table: PacketTable, targets: list[int], *,
                 decoders: int = 1) -> tuple[dict[int, np.ndarray], int]:
    """Decode exactly the minimum for `targets` (pts); returns ({target pts: RGB array}, frames
    decoded). See the module doc for how."""
    wanted = set(int(t) for t in targets)

    def run(jobs: list[tuple[int, list[int]]]) -> tuple[dict[int, np.ndarray], int]:
        out: dict[int, np.ndarray] = {}
        decoded = 0
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            cc = stream.codec_context
            cc.thread_count = 1
            for key_pts, send in jobs:
                container.seek(key_pts, stream=stream, backward=True)  # also flushes the decoder
                todo, last = set(send), send[-1]
                frames = []
                for packet in container.demux(stream):
                    if packet.pts in todo:
                        frames += cc.decode(packet)
                        if packet.pts == last:
                            break
                frames += cc.decode(None)  # drain: the GOP's frames without decoding past them
                for frame in frames:
                    decoded += 1
                    if frame.pts in wanted:
                        out[int(frame.pts)] = frame.to_ndarray(format="rgb24")
        return out, decoded

    parts = _split(_gop_jobs(table, targets), decoders)
    if len(parts) == 1:
        return run(parts[0])
    with ThreadPoolExecutor(len(parts)) as pool:
        results = list(pool.map(run, parts))
    frames: dict[int, np.ndarray] = {}
    for got, _ in results:
        frames.update(got)
    return frames, sum(n for _, n in results)
