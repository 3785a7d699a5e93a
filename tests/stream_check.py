#!/usr/bin/env python3
"""The judge of `vidkern encode -o`: FFmpeg decodes the stream, its frames must equal the
reconstruction (`--recon`) bit for bit, and FFmpeg must print nothing with `-v error`.

    stream_check.py STREAM RECON.y4m [--ffmpeg PATH] [--keep DEC.yuv] [--strict]
                    [--rate N/D | --no-rate] [--syntax] [--expect-slices N] [--expect-deblock]
                    [--expect-cabac] [--expect-bframes N [--expect-bpyramid]]
                    [--expect-keyint K] [--info] [-q]

What it runs (and prints on a failure, to replay by hand):
    ffprobe -v error -f h264 -show_entries stream=... STREAM   (size and pixel format)
    ffmpeg -nostdin -v error -threads 1 -f h264 -i STREAM -map 0:v:0 -fps_mode passthrough
           -f rawvideo -pix_fmt yuv420p DEC.yuv
The decoded size (after the SPS cropping) must be the reconstruction's, the pixel format
8-bit 4:2:0 (yuv420p, or yuvj420p when the VUI says full range: then no -pix_fmt is given,
so that no range conversion happens), the frame rate FFmpeg reads from the VUI timing that
of the Y4M header's F tag (or --rate N/D; --no-rate: not checked), the frame count the
same, and every sample equal.
On a mismatch it prints the first differing frame, plane, x, y, both values and how many
samples of that plane differ. --strict adds `-err_detect +crccheck+bitstream+buffer+explode`
(FFmpeg's stricter checks; any error aborts the decode).

--syntax (implied by --expect-*, --info) then reads the stream's own syntax, independently
of FFmpeg, for what issue 13 item 1 asks: SPS High profile (100), 4:2:0, 8 bits, frames
only, no scaling matrices, VUI with timing; PPS CAVLC (entropy_coding_mode_flag 0; 1, CABAC,
with --expect-cabac),
transform_8x8_mode_flag 1, deblocking_filter_control_present_flag 1; in every slice
disable_deblocking_filter_idc 1 (0 with --expect-deblock: the loop's deblocking filter,
whose output FFmpeg's frames then equal), I slices in IDR pictures and P slices otherwise, every
picture a reference; frame_num 0 at an IDR then +1 modulo MaxFrameNum; the POC (type 0)
strictly increasing after each IDR; consecutive IDRs with different idr_pic_id; as many
pictures as reconstructed frames. --expect-keyint K: an IDR exactly at the frames i with
i % K == 0 (K = 0: only the first). --expect-slices N: every picture in N slices of whole
macroblock rows (at most one a row: N above the rows means one slice a row), slice k
starting at row k * rows / N. --expect-bframes N (N > 0): B pictures allowed (the encoder's
--bframes N): POC type 0; each non-IDR picture is P (a reference) or B (nal_ref_idc 0,
direct_spatial_mv_pred_flag 1, no list modification, no weighted prediction); frame_num 0
at an IDR, else the last reference picture's + 1 modulo MaxFrameNum; the POCs of an IDR
period distinct, giving the display order, in which at most N B pictures follow each other,
each B picture lies between the anchors around it in decoding order, and --expect-keyint
applies to the display order. --expect-bpyramid (with --expect-bframes): a B picture may also
be a reference picture (nal_ref_idc > 0), at most one of each run of B pictures and decoded
first of them. --info prints the SPS's fields (one line, "sps: key=value") and the
size of each access unit in bytes (one line, "au_bytes: N N ...").
Exit status: 0 equal; 1 any difference, FFmpeg output on stderr, or an unreadable file;
2 usage; 77 FFmpeg not found (a failure instead when VIDK_REQUIRE_FFMPEG=1).
"""
import os
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction

PLANES = ("Y", "U", "V")


def die(msg, code=1):
    print("stream_check: " + msg, file=sys.stderr)
    sys.exit(code)


def find_tool(name, given):
    if given:
        return given if (os.path.isfile(given) or shutil.which(given)) else None
    env = os.environ.get("VIDK_" + name.upper())
    if env:
        return env
    return shutil.which(name)


def read_y4m(path):
    """-> (width, height, header line, list of frame payloads as memoryviews)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        die(f"{path}: {e.strerror}")
    nl = data.find(b"\n")
    if not data.startswith(b"YUV4MPEG2") or nl < 0:
        die(f"{path}: not a Y4M file")
    header = data[:nl].decode("ascii", "replace")
    w = h = None
    chroma = "420"
    rate = None
    for tag in header.split()[1:]:
        if tag[0] == "F" and ":" in tag:
            n, d = tag[1:].split(":", 1)
            rate = Fraction(int(n), int(d)) if int(d) else None
        elif tag[0] == "W":
            w = int(tag[1:])
        elif tag[0] == "H":
            h = int(tag[1:])
        elif tag[0] == "C":
            chroma = tag[1:]
    if not w or not h:
        die(f"{path}: no W/H in the header: {header}")
    if not chroma.startswith("420") or chroma.startswith("420p1"):
        die(f"{path}: colour space C{chroma}, only 8-bit 4:2:0 is compared")
    fsize = w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
    frames = []
    pos = nl + 1
    mv = memoryview(data)
    while pos < len(data):
        if data[pos:pos + 5] != b"FRAME":
            die(f"{path}: frame {len(frames)}: no FRAME marker at byte {pos}")
        e = data.find(b"\n", pos)
        if e < 0:
            die(f"{path}: frame {len(frames)}: FRAME line not terminated")
        pos = e + 1
        if pos + fsize > len(data):
            die(f"{path}: frame {len(frames)} truncated ({len(data) - pos} of {fsize} bytes)")
        frames.append(mv[pos:pos + fsize])
        pos += fsize
    return w, h, rate, frames


def first_diff(a, b, w, h):
    """a, b: one frame each (equal length). -> (plane, x, y, va, vb, count in that plane)."""
    cw, ch = (w + 1) // 2, (h + 1) // 2
    off = 0
    for p, (pw, ph) in enumerate(((w, h), (cw, ch), (cw, ch))):
        n = pw * ph
        pa, pb = bytes(a[off:off + n]), bytes(b[off:off + n])
        if pa != pb:
            i = next(k for k in range(n) if pa[k] != pb[k])
            count = sum(1 for k in range(n) if pa[k] != pb[k])
            return PLANES[p], i % pw, i // pw, pa[i], pb[i], count, n
        off += n
    return None


# ---- the stream's own syntax (issue 13 item 1), read independently of FFmpeg ----------

class Bits:
    """Reads an RBSP (emulation prevention removed) MSB first: u(n), ue(v), se(v)."""

    def __init__(self, data):
        self.d = data
        self.pos = 0
        self.end = len(data) * 8

    def u(self, n):
        v = 0
        for _ in range(n):
            if self.pos >= self.end:
                raise ValueError("read past the end of the NAL unit")
            v = (v << 1) | ((self.d[self.pos >> 3] >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return v

    def ue(self):
        z = 0
        while self.u(1) == 0:
            z += 1
            if z > 31:
                raise ValueError("Exp-Golomb code longer than 32 bits")
        return (1 << z) - 1 + self.u(z)

    def se(self):
        k = self.ue()
        return (k + 1) // 2 if k & 1 else -(k // 2)

    def more_rbsp_data(self):
        # True while a bit other than the rbsp_stop_one_bit and its trailing zeros is left.
        last = len(self.d) - 1
        while last >= 0 and self.d[last] == 0:
            last -= 1
        if last < 0:
            return False
        b = self.d[last]
        stop = last * 8 + 7 - ((b & -b).bit_length() - 1)
        return self.pos < stop


def nal_units(data):
    """Annex B -> list of (nal_ref_idc, nal_unit_type, forbidden_zero_bit, rbsp, begin): begin
    is the offset where the NAL unit's start code (with its zero bytes) begins."""
    out = []
    starts = []
    i = data.find(b"\x00\x00\x01")
    if i < 0 or data[:i].strip(b"\x00"):
        raise ValueError("the stream does not begin with a start code")
    while i >= 0:
        starts.append(i + 3)
        i = data.find(b"\x00\x00\x01", i + 3)
    begin = 0
    for k, st in enumerate(starts):
        en = starts[k + 1] - 3 if k + 1 < len(starts) else len(data)
        # trailing_zero_8bits / the zero_byte of the next 4-byte start code
        nal = data[st:en].rstrip(b"\x00")
        if nal:
            rbsp = nal[1:].replace(b"\x00\x00\x03", b"\x00\x00")
            out.append(((nal[0] >> 5) & 3, nal[0] & 31, nal[0] >> 7, rbsp, begin))
        begin = st + len(nal)
    return out


def parse_sps(b):
    s = {"profile_idc": b.u(8), "constraints": b.u(8), "level_idc": b.u(8), "id": b.ue()}
    s["chroma_format_idc"] = 1
    if s["profile_idc"] in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
        s["chroma_format_idc"] = b.ue()
        if s["chroma_format_idc"] == 3:
            b.u(1)
        s["bit_depth_luma"] = b.ue() + 8
        s["bit_depth_chroma"] = b.ue() + 8
        b.u(1)
        s["seq_scaling_matrix_present"] = b.u(1)
        if s["seq_scaling_matrix_present"]:
            raise ValueError("SPS: seq_scaling_matrix_present_flag 1 (no scaling matrices wanted)")
    s["log2_max_frame_num"] = b.ue() + 4
    s["poc_type"] = b.ue()
    if s["poc_type"] == 0:
        s["log2_max_poc_lsb"] = b.ue() + 4
    elif s["poc_type"] == 1:
        s["delta_pic_order_always_zero"] = b.u(1)
        b.se()
        b.se()
        for _ in range(b.ue()):
            b.se()
    s["max_num_ref_frames"] = b.ue()
    s["gaps_allowed"] = b.u(1)
    s["mbw"] = b.ue() + 1
    s["mbh"] = b.ue() + 1
    s["frame_mbs_only"] = b.u(1)
    if not s["frame_mbs_only"]:
        b.u(1)
    s["direct_8x8_inference"] = b.u(1)
    s["crop"] = [b.ue() for _ in range(4)] if b.u(1) else [0, 0, 0, 0]
    s["vui_present"] = b.u(1)
    if s["vui_present"]:
        if b.u(1):  # aspect_ratio_info_present_flag
            if b.u(8) == 255:
                b.u(16)
                b.u(16)
        if b.u(1):  # overscan_info_present_flag
            b.u(1)
        if b.u(1):  # video_signal_type_present_flag
            b.u(3)
            s["full_range"] = b.u(1)
            if b.u(1):
                b.u(24)
        if b.u(1):  # chroma_loc_info_present_flag
            b.ue()
            b.ue()
        s["timing_info_present"] = b.u(1)
        if s["timing_info_present"]:
            s["num_units_in_tick"] = b.u(32)
            s["time_scale"] = b.u(32)
            s["fixed_frame_rate"] = b.u(1)
    return s


def parse_pps(b):
    p = {"id": b.ue(), "sps_id": b.ue(), "entropy_coding_mode_flag": b.u(1),
         "bottom_field_pic_order": b.u(1), "num_slice_groups": b.ue() + 1}
    if p["num_slice_groups"] != 1:
        raise ValueError("PPS: slice groups (FMO) not expected")
    p["num_ref_idx_l0_default"] = b.ue() + 1
    p["num_ref_idx_l1_default"] = b.ue() + 1
    p["weighted_pred_flag"] = b.u(1)
    p["weighted_bipred_idc"] = b.u(2)
    p["pic_init_qp"] = 26 + b.se()
    p["pic_init_qs"] = 26 + b.se()
    p["chroma_qp_index_offset"] = b.se()
    p["deblocking_filter_control_present_flag"] = b.u(1)
    p["constrained_intra_pred_flag"] = b.u(1)
    p["redundant_pic_cnt_present_flag"] = b.u(1)
    p["transform_8x8_mode_flag"] = 0
    p["pic_scaling_matrix_present_flag"] = 0
    if b.more_rbsp_data():
        p["transform_8x8_mode_flag"] = b.u(1)
        p["pic_scaling_matrix_present_flag"] = b.u(1)
        if p["pic_scaling_matrix_present_flag"]:
            raise ValueError("PPS: pic_scaling_matrix_present_flag 1 (no scaling matrices wanted)")
        p["second_chroma_qp_index_offset"] = b.se()
    return p


def parse_slice_header(b, nal_type, ref_idc, sps, pps):
    h = {"first_mb": b.ue(), "slice_type": b.ue() % 5, "pps_id": b.ue()}
    sp = sps[pps[h["pps_id"]]["sps_id"]] if h["pps_id"] in pps else None
    if sp is None or pps[h["pps_id"]]["sps_id"] not in sps:
        raise ValueError(f"slice refers to PPS {h['pps_id']} not sent before")
    pp = pps[h["pps_id"]]
    h["frame_num"] = b.u(sp["log2_max_frame_num"])
    if nal_type == 5:
        h["idr_pic_id"] = b.ue()
    if sp["poc_type"] == 0:
        h["poc_lsb"] = b.u(sp["log2_max_poc_lsb"])
        if pp["bottom_field_pic_order"]:
            b.se()
    elif sp["poc_type"] == 1 and not sp["delta_pic_order_always_zero"]:
        b.se()
        if pp["bottom_field_pic_order"]:
            b.se()
    if pp["redundant_pic_cnt_present_flag"]:
        b.ue()
    if h["slice_type"] == 1:
        h["direct_spatial"] = b.u(1)
    if h["slice_type"] in (0, 1, 3):
        h["num_ref_idx_l0"] = pp["num_ref_idx_l0_default"]
        h["num_ref_idx_l1"] = pp["num_ref_idx_l1_default"]
        if b.u(1):
            h["num_ref_idx_l0"] = b.ue() + 1
            if h["slice_type"] == 1:
                h["num_ref_idx_l1"] = b.ue() + 1
        h["list_mod"] = 0
        for _ in range(2 if h["slice_type"] == 1 else 1):
            if b.u(1):  # ref_pic_list_modification_flag_l0 / _l1
                h["list_mod"] = 1
                while True:
                    idc = b.ue()
                    if idc == 3:
                        break
                    b.ue()
        if (pp["weighted_pred_flag"] and h["slice_type"] != 1) or \
                (pp["weighted_bipred_idc"] == 1 and h["slice_type"] == 1):
            raise ValueError("weighted prediction not expected")
    if ref_idc:
        if nal_type == 5:
            h["no_output_of_prior_pics"] = b.u(1)
            h["long_term_reference_flag"] = b.u(1)
        elif b.u(1):  # adaptive_ref_pic_marking_mode_flag
            while True:
                op = b.ue()
                if op == 0:
                    break
                if op in (1, 3):
                    b.ue()
                if op in (2, 3, 6, 4):
                    b.ue()
    if pp["entropy_coding_mode_flag"] and h["slice_type"] not in (2, 4):
        b.ue()
    h["slice_qp"] = pp["pic_init_qp"] + b.se()
    if pp["deblocking_filter_control_present_flag"]:
        h["disable_deblocking_filter_idc"] = b.ue()
        if h["disable_deblocking_filter_idc"] != 1:
            b.se()
            b.se()
    else:
        h["disable_deblocking_filter_idc"] = 0
    return h


def sps_timing(path):
    """The frame rate of the first SPS's VUI timing (time_scale / (2 num_units_in_tick)), or
    None without one."""
    try:
        with open(path, "rb") as f:
            for _, t, _, rbsp, _ in nal_units(f.read()):
                if t == 7:
                    sp = parse_sps(Bits(rbsp))
                    if sp.get("timing_info_present") and sp.get("num_units_in_tick"):
                        return Fraction(sp["time_scale"], 2 * sp["num_units_in_tick"])
                    return None
    except (ValueError, IndexError, OSError):
        pass
    return None


def poc_msb(idr, lsb, prev_lsb, prev_msb, max_lsb):
    """PicOrderCntMsb (8.2.1.1, type 0) from the previous reference picture's lsb / msb."""
    if idr or prev_lsb is None:
        return 0
    if lsb < prev_lsb and prev_lsb - lsb >= max_lsb // 2:
        return prev_msb + max_lsb
    if lsb > prev_lsb and lsb - prev_lsb > max_lsb // 2:
        return prev_msb - max_lsb
    return prev_msb


def check_syntax(data, nframes, slices, keyint, deblock=False, cabac=False, bframes=0,
                 bpyramid=False):
    """The headers issue 13 item 1 asks for, frame_num / POC, IDR placement and the slices
    of every picture. -> (list of problems, the first SPS as a dict, the size in bytes of
    each access unit)."""
    bad = []
    sps, pps = {}, {}
    pics = []  # per picture: list of slice headers
    first_sps = None
    au = []  # the offset where each picture's access unit begins
    prev_t = None
    try:
        nals = nal_units(data)
    except ValueError as e:
        return [str(e)], None, []
    for ref_idc, t, forbidden, rbsp, begin in nals:
        # An access unit begins at the first NAL unit after a picture's last slice
        # (7.4.1.2.3: AUD, SPS, PPS, SEI, or the first slice of the next picture).
        if prev_t in (None, 1, 5) and (t in (6, 7, 8, 9) or (t in (1, 5) and
                                                             rbsp[:1] >= b"\x80")):
            au.append(begin)
        prev_t = t
        if forbidden:
            bad.append("forbidden_zero_bit set")
        try:
            if t == 7:
                x = parse_sps(Bits(rbsp))
                sps[x["id"]] = x
                first_sps = first_sps or x
            elif t == 8:
                x = parse_pps(Bits(rbsp))
                pps[x["id"]] = x
            elif t in (1, 5):
                h = parse_slice_header(Bits(rbsp), t, ref_idc, sps, pps)
                h["nal_type"], h["ref_idc"] = t, ref_idc
                if h["first_mb"] == 0 or not pics:
                    pics.append([])
                pics[-1].append(h)
            elif t not in (6, 9, 12):
                bad.append(f"unexpected NAL unit type {t}")
        except (ValueError, IndexError, KeyError) as e:
            bad.append(f"NAL unit type {t} (picture {len(pics)}): {e}")
            return bad, first_sps, []
    if first_sps is None or not pps:
        return bad + ["no SPS or no PPS"], first_sps, []
    au_sizes = [b - a for a, b in zip(au, au[1:] + [len(data)])]
    sp = first_sps
    pp = next(iter(pps.values()))
    want = {"profile_idc": (sp, 100), "chroma_format_idc": (sp, 1), "bit_depth_luma": (sp, 8),
            "frame_mbs_only": (sp, 1), "entropy_coding_mode_flag": (pp, 1 if cabac else 0),
            "transform_8x8_mode_flag": (pp, 1), "deblocking_filter_control_present_flag": (pp, 1)}
    for k, (d, v) in want.items():
        if d.get(k) != v:
            bad.append(f"{k} {d.get(k)}, expected {v}")
    if sp.get("vui_present") and not sp.get("timing_info_present"):
        bad.append("VUI without timing info")
    if len(pics) != nframes:
        bad.append(f"{len(pics)} pictures in the stream, {nframes} in the reconstruction")
    mbw, mbh = sp["mbw"], sp["mbh"]
    max_fn = 1 << sp["log2_max_frame_num"]
    prev_fn = prev_poc = prev_msb = prev_lsb = None
    prev_idr_id = None
    if bframes:
        return bad + check_b_order(pics, sp, keyint, slices, deblock, bframes, bpyramid), sp, \
            au_sizes
    for i, pic in enumerate(pics):
        h0 = pic[0]
        idr = h0["nal_type"] == 5
        if keyint is not None:
            want_idr = (i % keyint == 0) if keyint > 0 else (i == 0)
            if idr != want_idr:
                bad.append(f"picture {i}: {'IDR' if idr else 'not IDR'} with keyint {keyint}")
        firsts = [h["first_mb"] for h in pic]
        if slices is not None:
            n = min(slices, mbh)  # at most one slice per row (vidkern encode --help)
            exp = [(k * mbh // n) * mbw for k in range(n)]
            if firsts != exp:
                bad.append(f"picture {i}: slices start at macroblocks {firsts}, expected {exp} "
                           f"({n} slices of whole rows, slice k at row k * {mbh} / {n})")
        for h in pic:
            if h["nal_type"] != h0["nal_type"] or h["frame_num"] != h0["frame_num"] or \
                    h.get("poc_lsb") != h0.get("poc_lsb"):
                bad.append(f"picture {i}: slices disagree on the NAL type, frame_num or POC")
            if h["disable_deblocking_filter_idc"] != (0 if deblock else 1):
                bad.append(f"picture {i}: disable_deblocking_filter_idc "
                           f"{h['disable_deblocking_filter_idc']}, expected "
                           f"{0 if deblock else 1}")
            if h["slice_type"] != (2 if idr else 0):
                bad.append(f"picture {i}: slice_type {h['slice_type']} in a "
                           f"{'IDR' if idr else 'non-IDR'} picture")
            if h["ref_idc"] == 0:
                bad.append(f"picture {i}: nal_ref_idc 0 (the next picture refers to it)")
        # frame_num: 0 at an IDR, then +1 modulo MaxFrameNum (every picture is a reference).
        fn = h0["frame_num"]
        if idr:
            if fn != 0:
                bad.append(f"picture {i}: IDR with frame_num {fn}")
            if prev_idr_id is not None and i > 0 and pics[i - 1][0]["nal_type"] == 5 and \
                    h0["idr_pic_id"] == prev_idr_id:
                bad.append(f"picture {i}: two consecutive IDRs with idr_pic_id {prev_idr_id}")
            prev_idr_id = h0["idr_pic_id"]
        elif prev_fn is not None and fn != (prev_fn + 1) % max_fn:
            bad.append(f"picture {i}: frame_num {fn} after {prev_fn} (MaxFrameNum {max_fn})")
        prev_fn = fn
        # POC (8.2.1.1 for type 0): strictly increasing after each IDR (no reordering).
        if sp["poc_type"] == 0:
            lsb = h0["poc_lsb"]
            msb = poc_msb(idr, lsb, prev_lsb, prev_msb, 1 << sp["log2_max_poc_lsb"])
            poc = msb + lsb
            if not idr and poc <= prev_poc:
                bad.append(f"picture {i}: POC {poc} not above the previous {prev_poc}")
            prev_msb, prev_lsb, prev_poc = msb, lsb, poc
        if len(bad) > 20:
            bad.append("...")
            break
    return bad, sp, au_sizes


def check_b_order(pics, sp, keyint, slices, deblock, bframes, bpyramid):
    """check_syntax's picture checks for a stream with B pictures (--expect-bframes)."""
    bad = []
    if sp["poc_type"] != 0:
        return [f"pic_order_cnt_type {sp['poc_type']} with B pictures (0 expected)"]
    mbw, mbh = sp["mbw"], sp["mbh"]
    max_fn, max_lsb = 1 << sp["log2_max_frame_num"], 1 << sp["log2_max_poc_lsb"]
    ref_fn = prev_msb = prev_lsb = None
    periods = []  # per IDR period: [(poc, decode index, is B)]
    for i, pic in enumerate(pics):
        h0 = pic[0]
        idr = h0["nal_type"] == 5
        isb = h0["slice_type"] == 1
        for h in pic:
            if (h["nal_type"], h["frame_num"], h.get("poc_lsb"), h["slice_type"],
                    h["ref_idc"]) != (h0["nal_type"], h0["frame_num"], h0.get("poc_lsb"),
                                      h0["slice_type"], h0["ref_idc"]):
                bad.append(f"picture {i}: slices disagree on the NAL type, frame_num, POC, "
                           f"slice_type or nal_ref_idc")
            if h["disable_deblocking_filter_idc"] != (0 if deblock else 1):
                bad.append(f"picture {i}: disable_deblocking_filter_idc "
                           f"{h['disable_deblocking_filter_idc']}")
            if (idr and h["slice_type"] != 2) or (not idr and h["slice_type"] not in (0, 1)):
                bad.append(f"picture {i}: slice_type {h['slice_type']}")
            if isb and ((h["ref_idc"] != 0 and not bpyramid) or not h["direct_spatial"] or
                        h["list_mod"] or
                        h["num_ref_idx_l0"] != 1 or h["num_ref_idx_l1"] != 1):
                bad.append(f"picture {i}: a B slice with nal_ref_idc {h['ref_idc']}, "
                           f"direct_spatial {h['direct_spatial']}, list modification "
                           f"{h['list_mod']}, {h['num_ref_idx_l0']} / {h['num_ref_idx_l1']} "
                           f"references")
            if not isb and h["ref_idc"] == 0:
                bad.append(f"picture {i}: an I or P picture with nal_ref_idc 0")
        if slices is not None:
            n = min(slices, mbh)
            exp = [(k * mbh // n) * mbw for k in range(n)]
            if [h["first_mb"] for h in pic] != exp:
                bad.append(f"picture {i}: slices start at {[h['first_mb'] for h in pic]}, "
                           f"expected {exp}")
        fn = h0["frame_num"]
        if idr:
            if fn != 0:
                bad.append(f"picture {i}: IDR with frame_num {fn}")
        elif ref_fn is not None and fn != (ref_fn + 1) % max_fn:
            bad.append(f"picture {i}: frame_num {fn} after the reference picture's {ref_fn}")
        if h0["ref_idc"]:
            ref_fn = fn
        lsb = h0["poc_lsb"]
        msb = poc_msb(idr, lsb, prev_lsb, prev_msb, max_lsb)
        if idr or prev_lsb is None:
            periods.append([])
        if h0["ref_idc"]:  # prevPicOrderCntMsb / Lsb: of the previous reference picture
            prev_msb, prev_lsb = msb, lsb
        periods[-1].append((msb + lsb, i, isb, h0["ref_idc"] != 0))
        if len(bad) > 20:
            return bad + ["..."]
    disp = 0
    for per in periods:
        pocs = [p for p, _, _, _ in per]
        if len(set(pocs)) != len(pocs):
            bad.append(f"IDR period at display frame {disp}: repeated POCs {pocs}")
        order = sorted(per)
        run = 0
        runs = []  # the runs of B pictures: [(decode index, reference)]
        for k, (poc, di, isb, ref) in enumerate(order):
            run = run + 1 if isb else 0
            if run == 1:
                runs.append([])
            if isb:
                runs[-1].append((di, ref))
            if run > bframes:
                bad.append(f"display frame {disp + k}: more than {bframes} B pictures in a row")
            if keyint is not None:
                want_idr = ((disp + k) % keyint == 0) if keyint > 0 else (disp + k == 0)
                if (k == 0) != want_idr:
                    bad.append(f"display frame {disp + k}: {'IDR' if k == 0 else 'not IDR'} "
                               f"with keyint {keyint}")
            if isb:  # decoded after the anchor that follows it in display order
                nxt = next((d for p, d, b, _ in order[k + 1:] if not b), None)
                prv = max((d for p, d, b, _ in order[:k] if not b), default=None)
                if nxt is None or di < nxt or (prv is not None and di < prv):
                    bad.append(f"display frame {disp + k}: B picture decoded at {di}, not "
                               f"after the anchors around it")
        for r in runs:  # --expect-bpyramid: one reference B picture a run, decoded first
            refs = [d for d, ref in r if ref]
            if len(refs) > 1 or (refs and refs[0] != min(d for d, _ in r)):
                bad.append(f"IDR period at display frame {disp}: a run of B pictures decoded "
                           f"at {[d for d, _ in r]} with reference ones at {refs}")
        disp += len(per)
    return bad


def main(argv):
    args = []
    ffmpeg = keep = None
    strict = quiet = False
    check_rate = True
    want_rate = None
    syntax = info_line = False
    exp_slices = exp_keyint = None
    exp_deblock = exp_cabac = False
    exp_bframes = 0
    exp_bpyramid = False
    it = iter(argv)
    for a in it:
        if a == "--ffmpeg":
            ffmpeg = next(it, None)
        elif a == "--keep":
            keep = next(it, None)
        elif a == "--strict":
            strict = True
        elif a == "--syntax":
            syntax = True
        elif a == "--info":
            syntax = info_line = True
        elif a == "--expect-bframes":
            v = next(it, None)
            if v is None or not v.isdigit():
                die(f"{a} needs a number", 2)
            syntax, exp_bframes = True, int(v)
        elif a == "--expect-bpyramid":
            exp_bpyramid = True
        elif a in ("--expect-slices", "--expect-keyint"):
            v = next(it, None)
            if v is None or not v.isdigit():
                die(f"{a} needs a number", 2)
            syntax = True
            if a == "--expect-slices":
                exp_slices = max(1, int(v))
            else:
                exp_keyint = int(v)
        elif a == "--expect-deblock":
            syntax = exp_deblock = True
        elif a == "--expect-cabac":
            syntax = exp_cabac = True
        elif a == "--no-rate":
            check_rate = False
        elif a == "--rate":
            v = next(it, "")
            try:
                n, _, d = v.partition("/")
                want_rate = Fraction(int(n), int(d or 1))
            except (ValueError, ZeroDivisionError):
                die(f"--rate N[/D]: '{v}'", 2)
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-") and a != "-":
            die(f"unknown option {a}", 2)
        else:
            args.append(a)
    if len(args) != 2:
        die("usage: stream_check.py STREAM RECON.y4m [--ffmpeg PATH] [--keep DEC.yuv] "
            "[--strict] [--rate N/D | --no-rate] [--syntax] [--expect-slices N] "
            "[--expect-keyint K] [--expect-deblock] [--expect-cabac] [--expect-bframes N] "
            "[--expect-bpyramid] [--info] [-q]", 2)
    stream, recon = args

    ff = find_tool("ffmpeg", ffmpeg)
    fp = find_tool("ffprobe", os.path.join(os.path.dirname(ff), "ffprobe") if ff and
                   os.path.dirname(ff) else None)
    if not ff or not fp:
        if os.environ.get("VIDK_REQUIRE_FFMPEG", "0") not in ("", "0"):
            die("ffmpeg/ffprobe not found, and VIDK_REQUIRE_FFMPEG is set", 1)
        die("ffmpeg/ffprobe not found (install Debian's ffmpeg): skipped", 77)

    if not os.path.isfile(stream) or os.path.getsize(stream) == 0:
        die(f"{stream}: missing or empty")
    w, h, rate, rframes = read_y4m(recon)
    rate_from = "the reconstruction's Y4M header says"
    if want_rate is not None:
        rate, rate_from = want_rate, "--rate says"

    # 1. Size and pixel format as FFmpeg sees them.
    probe = [fp, "-v", "error", "-f", "h264", "-select_streams", "v:0", "-show_entries",
             "stream=width,height,pix_fmt,profile,r_frame_rate", "-of", "default=noprint_wrappers=1", stream]
    r = subprocess.run(probe, stdin=subprocess.DEVNULL, capture_output=True)
    info = dict(l.split("=", 1) for l in r.stdout.decode("ascii", "replace").splitlines()
                if "=" in l)
    if r.returncode != 0 or r.stderr:
        die(f"{stream}: ffprobe exit {r.returncode}, its output (must be empty):\n    "
            + "\n    ".join(r.stderr.decode(errors="replace").strip().splitlines()[:20]) + "\n"
            f"  command: {' '.join(probe)}")
    pix = info.get("pix_fmt", "?")
    if pix not in ("yuv420p", "yuvj420p"):
        die(f"{stream}: decoded pixel format {pix}, expected yuv420p ({info})")
    if (info.get("width"), info.get("height")) != (str(w), str(h)):
        die(f"{stream}: decoded size {info.get('width')}x{info.get('height')}, "
            f"the reconstruction is {w}x{h} (SPS frame cropping?)")
    got = info.get("r_frame_rate", "0/0")
    if check_rate and rate is not None:
        n, d = (int(x) for x in got.split("/"))
        if not d or Fraction(n, d) != rate:
            # FFmpeg's r_frame_rate is a guess that is rounded at extreme rates: the SPS's
            # own VUI timing decides (a frame is two ticks: time_scale / (2 num_units_in_tick)).
            vui = sps_timing(stream)
            if vui != rate:
                die(f"{stream}: frame rate {got} as FFmpeg reads it, "
                    f"{vui if vui is None else f'{vui.numerator}/{vui.denominator}'} from the "
                    f"SPS's VUI timing; {rate_from} {rate.numerator}/{rate.denominator}")

    # 2. Decode.
    tmp = None
    if keep:
        out = keep
    else:
        fd, tmp = tempfile.mkstemp(prefix="vidk_dec.", suffix=".yuv")
        os.close(fd)
        out = tmp
    cmd = [ff, "-nostdin", "-hide_banner", "-v", "error", "-threads", "1"]
    if strict:
        cmd += ["-err_detect", "+crccheck+bitstream+buffer+explode"]
    cmd += ["-f", "h264", "-i", stream, "-map", "0:v:0", "-fps_mode", "passthrough",
            "-f", "rawvideo"]
    if pix == "yuv420p":
        cmd += ["-pix_fmt", "yuv420p"]
    cmd += ["-y", out]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True)
        with open(out, "rb") as f:
            dec = f.read()
    finally:
        if tmp:
            os.unlink(tmp)
    replay = "  command: " + " ".join(cmd[:-1] + [keep or "DEC.yuv"])
    err = (r.stderr + r.stdout).decode(errors="replace").strip()
    if r.returncode != 0 or err:
        lines = err.splitlines()
        shown = "\n    ".join(lines[:20]) + (f"\n    ... ({len(lines)} lines)" if
                                                len(lines) > 20 else "")
        die(f"{stream}: ffmpeg exit {r.returncode}, its output (must be empty):\n    {shown}\n"
            + replay)

    # 3. Compare.
    fsize = len(rframes[0]) if rframes else w * h * 3 // 2
    if len(dec) % fsize:
        die(f"{stream}: decoded {len(dec)} bytes, not a whole number of {w}x{h} frames\n"
            + replay)
    nd = len(dec) // fsize
    dmv = memoryview(dec)
    bad = 0
    first = None
    for i in range(min(nd, len(rframes))):
        a = rframes[i]
        b = dmv[i * fsize:(i + 1) * fsize]
        if a != b:
            bad += 1
            if first is None:
                first = (i, first_diff(a, b, w, h))
    if first is not None:
        i, (plane, x, y, va, vb, count, n) = first
        die(f"{stream}: MISMATCH: frame {i} plane {plane} x {x} y {y}: recon {va}, "
            f"decoded {vb} ({count} of {n} samples of that plane differ; {bad} of "
            f"{min(nd, len(rframes))} frames differ)\n" + replay)
    if nd != len(rframes):
        die(f"{stream}: ffmpeg decoded {nd} frames, the reconstruction has {len(rframes)} "
            f"(the first {min(nd, len(rframes))} are equal)\n" + replay)
    # 4. The stream's own syntax (after the judge: a decoder's view first).
    if syntax:
        with open(stream, "rb") as f:
            problems, sp, au_sizes = check_syntax(f.read(), len(rframes), exp_slices,
                                                  exp_keyint, exp_deblock, exp_cabac,
                                                  exp_bframes, exp_bpyramid)
        if problems:
            die(f"{stream}: decoded right, but its syntax is not what issue 13 asks for:\n    "
                + "\n    ".join(problems))
        if info_line:
            keys = ("profile_idc", "level_idc", "log2_max_frame_num", "poc_type",
                    "log2_max_poc_lsb", "max_num_ref_frames", "mbw", "mbh", "crop",
                    "timing_info_present", "num_units_in_tick", "time_scale")
            print("sps: " + " ".join(f"{k}={sp[k]}".replace(" ", "") for k in keys if k in sp))
            print("au_bytes: " + " ".join(str(n) for n in au_sizes))
    if not quiet:
        print(f"stream_check: {stream}: {nd} frames {w}x{h} ({info.get('profile', '?')}, "
              f"{pix}) equal to {os.path.basename(recon)}, ffmpeg silent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
