"""Decoded-frame accounting: the minimum an exact decoder must decode, the floor decoder that
decodes exactly that, and lvu's reader measured against it (exact counts on small videos)."""

from __future__ import annotations

import numpy as np
import pytest

from lvu.media.decode_floor import (
    _references_by_decoding, floor_decode, frames_decoded, minimum_frames, packet_table, required_positions,
)
from lvu.media.testing import read_index
from lvu.media.video import VideoReader


def _shown(table, indices: list[int]) -> list[int]:
    return [int(np.sort(table.pts)[i]) for i in indices]


def _brute_minimum(table, targets: list[int]) -> int:
    """The definition, spelled out: each target's packet plus every reference packet from its
    keyframe (in decode order) up to it."""
    order = table.pts.tolist()
    need = set()
    for t in targets:
        d = order.index(t)
        k = max(i for i in range(d + 1) if table.key[i])
        need |= {d} | {i for i in range(k, d) if table.ref[i]}
    return len(need)


@pytest.mark.parametrize("bframes, refs", [(0, 60), (3, 33)])
def test_reference_flags_match_ffmpegs_nonref_skip(tmp_video, bframes, refs):
    # bframes=3 (x264 B-pyramid): per 20-frame GOP, I + 5 P + 5 reference B = 11 of 20 are references
    v = tmp_video(seconds=6, fps=10, gop=20, bframes=bframes)
    table = packet_table(v.path)
    assert len(table.pts) == 60 and int(table.key.sum()) == 3
    assert int(table.ref.sum()) == refs
    assert set(table.pts[table.ref].tolist()) == _references_by_decoding(v.path)


@pytest.mark.parametrize("bframes, minimum", [(0, 4 + 6 + 20), (3, 4 + 6 + 10)])
def test_minimum_counts_each_targets_reference_chain(tmp_video, bframes, minimum):
    # targets 3, 25 and 59 sit at offsets 3, 5 and 19 of their GOPs. Without B-frames every frame
    # is a reference: 4 + 6 + 20. With the B-pyramid (decode order I0 P4 B2 b1 b3 P8 B6 b5 ...):
    # b3 needs I0 P4 B2 (4 with itself), b25 needs I20 P24 B22 P28 B26 (6), P59 needs the 9
    # references I40 P44 B42 P48 B46 P52 B50 P56 B54 (10).
    v = tmp_video(seconds=6, fps=10, gop=20, bframes=bframes)
    table = packet_table(v.path)
    targets = _shown(table, [3, 25, 59])
    assert minimum_frames(table, targets) == _brute_minimum(table, targets) == minimum
    assert minimum_frames(table, targets + targets[:1]) == minimum  # duplicates cost nothing
    assert list(required_positions(table, _shown(table, [0]))) == [0]


def test_floor_decode_decodes_exactly_the_minimum(tmp_video):
    v = tmp_video(seconds=12, fps=10, gop=20, bframes=3)
    table = packet_table(v.path)
    indices = [3, 17, 25, 59, 60, 88, 119]
    targets = _shown(table, indices)
    for decoders in (1, 2):
        frames, decoded = floor_decode(v.path, table, targets, decoders=decoders)
        assert decoded == minimum_frames(table, targets) == _brute_minimum(table, targets)
        assert [read_index(frames[t]) for t in targets] == indices


def test_frames_decoded_follows_each_packets_skip_mode(tmp_video):
    v = tmp_video(seconds=6, fps=10, gop=20, bframes=3)
    table = packet_table(v.path)
    ref, nonref = (int(table.pts[np.flatnonzero(table.ref == flag)[1]]) for flag in (True, False))
    key = int(table.pts[0])
    sent = [(ref, "NONREF"), (nonref, "NONREF"), (nonref, "DEFAULT"), (ref, "NONKEY"), (key, "NONKEY")]
    assert frames_decoded(table, sent) == 3  # ref as NONREF, nonref as DEFAULT, the keyframe as NONKEY


@pytest.mark.parametrize("bframes", [0, 3])
def test_lvu_decodes_the_minimum_with_one_decoder(tmp_video, bframes):
    """Segments end in a drain, not in the frames that would push the decoder's last pictures out;
    only the call's last segment (whose cursor a later call may go on from) decodes those."""
    v = tmp_video(seconds=6, fps=10, gop=20, bframes=bframes)
    table = packet_table(v.path)

    def decoded(indices: list[int]) -> int:
        with VideoReader(v.path, threads=1, record_packets=True) as r:
            assert [read_index(a) for a in r.get_frames_at(indices).data] == indices
            return frames_decoded(table, r.packets_sent)

    tail = decoded([59]) - minimum_frames(table, _shown(table, [59]))  # the last segment's lookahead
    assert tail == (0 if bframes == 0 else 1)  # (P59 is shown after B57/B58: the reference one is decoded)
    want = minimum_frames(table, _shown(table, [3, 25, 59]))
    assert decoded([3, 25, 59]) == want + tail == (30 if bframes == 0 else 21)


def test_parallel_runs_decode_exactly_the_minimum(tmp_video, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    v = tmp_video(seconds=12, fps=10, gop=20, bframes=3)
    table = packet_table(v.path)
    indices = [3, 17, 25, 39, 59, 60, 78, 97, 110, 118]
    with VideoReader(v.path, record_packets=True) as r:
        got = r.get_frames_at(indices)
        assert len(r._twins) == 2  # the call was split into two runs of GOPs
        assert frames_decoded(table, r.packets_sent) == minimum_frames(table, _shown(table, indices))
    assert [read_index(a) for a in got.data] == indices
