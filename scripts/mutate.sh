#!/usr/bin/env bash
# Mutation check: does the test suite catch small deliberate bugs?
#
# Each mutation below replaces one exact piece of text in one file of a scratch copy of the
# working tree (never the tree itself), rebuilds incrementally (CPU only, one build folder
# reused across mutations and runs) and expects the tests to FAIL. A mutation names its
# catchers (the `by` table below: the tests that catch it quickest): only their executables
# are rebuilt and only they run; when they miss it, the whole CPU suite runs and the table
# says which test caught it instead (re-target the entry). Prints a table; exits 1 when a
# mutation survives (the whole suite still passes) or does not apply (its text is no longer
# in the file: re-target it below after the code moved). Every mutation's text is checked
# first, whether it runs or not.
#
#   scripts/mutate.sh                  every mutation
#   scripts/mutate.sh NAME...          only these
#   scripts/mutate.sh --budget S       in turn from a start given by VIDK_TEST_SEED, until S
#                                      seconds have passed (CI: the rest in later runs)
#   scripts/mutate.sh --list           the table
#
# Environment: VIDK_TEST_SEED (the tests' seed, default the CI's fixed one), VIDK_MUTATE_DIR
# scratch folder (default ${TMPDIR:-/tmp}/vidkern-mutate-$USER, kept between runs so that
# builds stay incremental; one run at a time per folder, a second stops at once),
# VIDK_MUTATE_JOBS (default nproc), VIDK_MUTATE_START (with --budget: the first mutation is
# this number modulo their number; default the seed). When the unmutated suite fails, the log's failures are
# printed (the log itself stays in the scratch folder).
set -uo pipefail

# ---------------------------------------------------------------- the mutations
# mut NAME FILE ORIGINAL REPLACEMENT: ORIGINAL must occur exactly once in FILE.
MUTS=()
mut() { MUTS+=("$1" "$2" "$3" "$4"); }

# The coding loop's decisions (the four the issue found unguarded first).
mut lambda_qp22 src/enc/enc_core.h \
    '2,  2,  3,  3,  3,  4,  4,' '2,  2,  3,  4,  3,  4,  4,'
mut hevc_qpc_30 src/enc/enc_frame.c \
    '{29, 30, 31, 32, 33, 33, 34' '{30, 30, 31, 32, 33, 33, 34'
mut h264_part_tie src/enc/enc_core_h264.h \
    'if (c[k] < best) best = c[k], w = k;' 'if (c[k] <= best) best = c[k], w = k;'
mut h264_tx8_tie src/enc/enc_core_h264.h \
    'return (s8 + 2u) >> 2 < s4;' 'return (s8 + 2u) >> 2 <= s4;'
mut h264_tx8_scale src/enc/enc_core_h264.h \
    'return (s8 + 2u) >> 2 < s4;' 'return (s8 + 2u) >> 1 < s4;'
mut ue_len_off_by_one src/me_core.h \
    'vidk_hibit32(k + 1u) + 1u;' 'vidk_hibit32(k + 2u) + 1u;'
mut se_mapping src/me_core.h \
    '2u * (unsigned)(-v));' '2u * (unsigned)(-v) + 1u);'
mut mvd_pred_left src/enc/enc_core_h264b.h \
    'if (ux > 0) v = enc_me_at(f, bs, ux - 1, uy).mv;' 'if (ux > 1) v = enc_me_at(f, bs, ux - 1, uy).mv;'
mut h264_sub_tie src/enc/enc_core_h264.h \
    'if (cq < bq) bq = cq, bs = s;' 'if (cq <= bq) bq = cq, bs = s;'
mut h264_skip_tie src/enc/enc_core_h264.h \
    'if (c[4] <= best) w = 4;' 'if (c[4] < best) w = 4;'
mut h264_intra_in_p src/enc/enc_core_h264.h \
    'return intra >> 2 < best ? ENC_H264_CANDS : w;' 'return w;'
mut h264_inter_round src/enc/enc_core.h \
    '((uint32_t)1 << qbits) >> 5)' '((uint32_t)1 << qbits) >> 4)'
mut h264_inter_round_moving src/enc/enc_core.h \
    '((uint32_t)1 << qbits) / 6u' '((uint32_t)1 << qbits) / 8u'
mut h264_mb_moving_l1 src/enc/enc_core.h \
    'if (use & 2) mv |= m1[o].x | m1[o].y;' 'if (use & 2) mv |= m1[o].x;'
mut h264_mvd_quarter src/enc/enc_core.h \
    'ENC_FN unsigned enc_mvd_bits(VidkMv mv, VidkMv pred) {' \
    'ENC_FN unsigned enc_mvd_bits(VidkMv mv, VidkMv pred) { mv.x = (int16_t)(2 * mv.x - pred.x);'
mut hevc_cu32_tie src/enc/enc_core_hevc.h \
    'd->cu32 = c32 <= split;' 'd->cu32 = c32 < split;'
mut hevc_cu16_tie src/enc/enc_core_hevc.h \
    'if (c16[q][k] < c16[q][b]) b = k;' 'if (c16[q][k] <= c16[q][b]) b = k;'
mut h264_intra_tie src/enc/enc_tmpl.h \
    $'if (s < bsad) {\n            bsad = s, bm = m;' $'if (s <= bsad) {\n            bsad = s, bm = m;'
mut h264_chroma_mode_tie src/enc/enc_tmpl.h \
    'if (ok && s < csad) {' 'if (ok && s <= csad) {'
# (HEVC intra's tie rule is not here: the only ties in reach are between modes that predict
# the same samples, so `<=` there changes nothing observable.)
mut hevc_intra_unfiltered src/enc/enc_tmpl.h \
    'enc_hevc_pred(line, 16, 4, enc_hevc_modes[k], 1, pr);' \
    'enc_hevc_pred(line, 16, 4, enc_hevc_modes[k], 0, pr);'
mut h264_plane_round src/enc/enc_core.h \
    'P->b = (k * hh + 32) >> 6' 'P->b = (k * hh + 31) >> 6'
mut stream_cac_first src/enc/h264_stream_core.h \
    'n = 15, first = 1, tc = c->tcc[p]' 'n = 15, first = 0, tc = c->tcc[p]'
mut cabac_skip_tx8 src/enc/h264_stream_cabac.h \
    'm.nxn = (uint8_t)(intra && !i16), m.tx8 = 0;' \
    'm.nxn = (uint8_t)(intra && !i16), m.tx8 = (uint8_t)tx8;'
# Intra_4x4 and Intra_8x8 (docs/ENCODE.md §7): caught by test_enc_pred (the modes and availability against
# the standard's formulas) or by FFmpeg's decode of the --i4x4 rows (cli_stream).
mut i4_vr_tap src/enc/enc_core.h \
    ': z > 0            ? F3 + k - 1' ': z > 0            ? F3 + k'
mut i4_above_right src/enc/enc_core.h \
    'return bx < last ? top : top && mbx + 1 < f->uw;' 'return bx < last ? top : top;'
mut i8_filter_left_end src/enc/enc_core.h \
    '(3 * t[7] + t[6] + 2) >> 2' '(3 * t[7] + t[6] + 1) >> 2'
mut i8_filter_corner src/enc/enc_core.h \
    'if (i == 8) return a && b ? (t[9] + 2 * t[8] + t[7] + 2) >> 2' \
    'if (i == 8) return a && b ? (t[9] + 2 * t[8] + t[7] + 1) >> 2'
mut cabac_i8_flag src/enc/h264_stream_cabac.h \
    $'(B && B->tx8), tx8);\n            for (int k = 0; k < 16; k += tx8 ? 4 : 1) {' \
    $'(B && B->tx8 && 0), tx8);\n            for (int k = 0; k < 16; k += tx8 ? 4 : 1) {'
mut i4_pred_mode_min src/enc/enc_core.h \
    'return ma < mb ? ma : mb;' 'return ma > mb ? ma : mb;'
mut i4_intra_cbp src/enc/h264_stream_core.h \
    '    3,  29, 30, 17,' '    0,  29, 30, 17,'
mut cabac_i4_rem_order src/enc/h264_stream_cabac.h \
    'vidk_cabac_bin(o, 69, (r >> t) & 1);' 'vidk_cabac_bin(o, 69, (r >> (2 - t)) & 1);'
# B frames (docs/ENCODE.md §16): caught by FFmpeg's decode of the --bframes rows (cli_stream).
mut b_colzero_range src/enc/enc_core_h264b.h \
    'cz |= (v.x >= -1 && v.x <= 1 && v.y >= -1 && v.y <= 1) << q;' \
    'cz |= (v.x >= -2 && v.x <= 2 && v.y >= -1 && v.y <= 1) << q;'
mut b_bi_round src/enc/enc_core_h264b.h \
    'const int v = (a * f->bw0 + b * f->bw1 + 32) >> 6;' 'const int v = (a * f->bw0 + b * f->bw1 + 31) >> 6;'
mut b_implicit_w src/enc/enc_core_h264b.h \
    '*w0 = 64 - (dsf >> 2), *w1 = dsf >> 2;' '*w0 = 64 - (dsf >> 2) - 1, *w1 = (dsf >> 2) + 1;'
mut b_direct_c_or_d src/enc/h264_mvp_core.h \
    'const VidkH264sNb c = n->c.avail ? n->c : n->d;' 'const VidkH264sNb c = n->c;'
mut b_dbk_lists src/enc/enc_core_h264b.h \
    'dx = up != uq || ((up & 1) && d0)' 'dx = ((up & 1) && d0)'
# B macroblocks in two 16x8 / 8x16 partitions: the decision (test_enc_decide's B partitions),
# the CABAC mb_type strings (test_h264_bslice), the partitions' mvd predictors (FFmpeg's decode
# against the reconstruction, cli_stream).
mut b_direct_bonus src/enc/enc_core_h264b.h \
    '#define ENC_H264_DIRECT_BONUS 2' '#define ENC_H264_DIRECT_BONUS 1'
mut b_part_decide src/enc/enc_core_h264b.h \
    '    for (int m = 0; m < 3; m++) {' '    for (int m = 0; m < 1; m++) {'
mut b_part_cabac_type src/enc/h264_stream_cabac.h \
    'const int bits = n == 5 ? t + 4 :' 'const int bits = n == 5 ? t + 5 :'
mut b_part_mvp_dir src/enc/enc_core_h264b.h \
    'm == 2 ? 2 : 4, m ? m == 1 ? 1 + k : 3 + k : 0,' 'm == 2 ? 2 : 4, 0,'
# B partitions with a list each (L0_L1, Bi_L0, ...): the decision, mb_type, the mvp's
# neighbour inside the macroblock that does not use the list.
mut b_mixed_decide src/enc/enc_core_h264b.h \
    'u1 = m ? 1 + c % 3 : u0;' 'u1 = u0;'
mut b_mixed_type src/enc/enc_core_h264b.h \
    'pair[9] = {0, 2, 4, 3, 1, 5, 6, 7, 8};' 'pair[9] = {0, 3, 4, 2, 1, 5, 6, 7, 8};'
mut b_mixed_inoff src/enc/h264_mvp_core.h \
    'if (n->inoff[4 * y + x]) return r;' 'if (0) return r;'
# Reference B frames (--b-pyramid): the P picture's list modification, the co-located picture.
mut bpyr_l0_mod src/enc/h264_stream.c \
    'h->l0_mod = !f->intra && !f->bslice && s->last_bref ? 2u : 0u;' 'h->l0_mod = 0;'
mut bpyr_col src/enc/encode.c \
    'f.colmv = pics.colb ? e->colb_mv : e->col_mv;' 'f.colmv = e->col_mv;'
mut bpyr_ref1 src/enc/enc_frame.c \
    'p->ref1 = p->br & 2 ? 3 : cur ^ 1;' 'p->ref1 = cur ^ 1;'
# A slice header computed ahead of the picture before it (cuda's queued B-frames): caught by
# test_h264_stream_core (_after against _next once that picture is written).
mut hdr_after_prev src/enc/h264_stream.c \
    '        start_picture(&t, prev[k],' '        if (0) start_picture(&t, prev[k],'
mut hdr_after_two src/enc/h264_stream.c \
    'prev_kind[k] >= VIDK_H264_PIC_B, prev_kind[k] == VIDK_H264_PIC_BREF);' \
    'prev_kind[0] >= VIDK_H264_PIC_B, prev_kind[0] == VIDK_H264_PIC_BREF);'
# CABAC's engine on the host from bins made elsewhere (cuda's default): caught by
# test_h264_stream_core (vidk_h264_stream_frame_bins against the writer's own passes).
mut cabac_host_bins src/enc/h264_stream.c \
    'vidk_cabac_code_bins(&e, j->bins + i0, i1 - i0);' \
    'vidk_cabac_code_bins(&e, j->bins + i0, i1 - i0 - (i1 > i0 + 9));'
# Quarter-sample motion (docs/ENCODE.md §3, §6): caught by test_enc_pred (the prediction
# against the standard's formulas) and test_enc_decide (pictures moved by quarter samples).
mut qpel_no_quarter_step src/enc/enc_core_h264.h \
    'for (int step = 2; step >= 1; step >>= 1)' 'for (int step = 2; step >= 2; step >>= 1)'
mut qpel_j_round src/h264_core.h \
    '(j1 + 512) >> 10' '(j1 + 511) >> 10'
mut qpel_g_source src/enc/enc_core.h \
    'a = 0x6314331122108200ull' 'a = 0x6324331122108200ull'
# The byte-wise CABAC engine (caught by test_h264_cabac_core against the standard's engine).
mut cabac_carry_lost src/h264_cabac_core.h \
    'if (carry && c->p > 0' 'if (0 && carry && c->p > 0'
mut cabac_ff_carry src/h264_cabac_core.h \
    'vidk_cabac_byte(c, carry ? 0x00 : 0xff);' 'vidk_cabac_byte(c, 0xff);'
mut cabac_zero_words src/enc/h264_stream_cabac.h \
    '3 * e->bins > 32 * bytes + 3 * 96 * nmb' '3 * e->bins > 32 * bytes + 3 * 97 * nmb'
mut cabac_mvd_ctx src/enc/h264_stream_cabac.h \
    'sum > 32 ? 2 : 1' 'sum >= 32 ? 2 : 1'
mut mvnb_own_vector src/enc/h264_mvp_core.h \
    'mv4[(ptrdiff_t)(mby * 4 + k / 4) * s4 + mbx * 4 + k % 4], intra_bit,' 'mv4[(ptrdiff_t)(mby * 4 + k / 4) * s4 + mbx * 4 + (k + 1) % 4], intra_bit,'
mut hevc_ref_subst src/enc/enc_core_hevc.h \
    'if (m) return 32 * k + vidk_hibit32(m);' 'if (m) return 32 * k + vidk_lobit32(m);'
mut hevc_mc_round src/enc/enc_core.h \
    '36 * t[2] - 4 * t[3] + 2048) >> 12' '36 * t[2] - 4 * t[3] + 2047) >> 12'
mut h264_chroma_mc_corner src/enc/enc_core.h \
    'fx && fy ? ENC_R(xa + 1, ya + 1) : 0;' 'fx && fy ? ENC_R(xa + 1, ya) : 0;'
mut h264_chroma_qp_44 src/h264.c \
    '36, 37, 37, 37, 38, 38, 38, 39, 39, 39, 39};' '36, 37, 37, 38, 38, 38, 38, 39, 39, 39, 39};'
# Kernels.
mut h264_fdct_coef src/h264_core.h \
    'o[s] = 2 * d03 + d12;' 'o[s] = 2 * d03 - d12;'
mut h264_norm_adjust src/h264.c \
    '{14, 23, 18}, {16, 25, 20}' '{14, 23, 18}, {16, 24, 20}'
mut h264_mf_entry src/h264.c \
    '{9362, 3647, 5825}' '{9362, 3647, 5824}'
mut h264_deadzone src/h264_core.h \
    '/ (intra ? 3u : 6u)' '/ (intra ? 3u : 5u)'
mut hevc_matrix_entry src/hevc.c \
    '{ 89,  75,  50,  18,' '{ 89,  75,  50,  17,'
mut hevc_quant_round src/hevc.h \
    '(islice ? 171 : 85)' '(islice ? 170 : 85)'
mut hevc_level_scale src/hevc.c \
    '{40, 45, 51, 57, 64, 72}' '{40, 45, 51, 57, 64, 71}'
mut sad_c src/sad_core.h \
    's += (uint32_t)(d < 0 ? -d : d);' 's += (uint32_t)(d < 0 ? -d : d) + (x == 1 && y == 2);'
mut me_tiebreak src/me.c \
    '(cost == b->cost && dist < b->dist)' '(cost == b->cost && dist <= b->dist)'
# The coding loop's residual choices (docs/ENCODE.md §4, §9).
mut level_no_sub8x8 src/enc/enc_core_h264.h \
    's < (f->no_sub8x8 ? 1 : 4)' 's < (f->no_sub8x8 ? 4 : 4)'
mut mvd_quad_order src/enc/enc_core_h264.h \
    'order[b] = (int8_t)(bq < q ? -1 : bq > q ? 16 : k);' \
    'order[b] = (int8_t)(bq > q ? -1 : bq < q ? 16 : k);'
mut decimate_table4 src/enc/enc_core.h \
    ': run < 3 ? 2' ': run < 2 ? 2'
# The H.264 stream (docs/STREAM.md): caught by FFmpeg's decode (cli_stream) and the
# known-answer stream of test_enc_decide.
mut stream_nc_round src/enc/h264_stream_core.h \
    '(na + nb + 1) >> 1' '(na + nb) >> 1'
# (TotalCoeff's position masks: caught by test_h264_stream_core's count check.)
mut stream_count_mask src/enc/h264_stream_core.h \
    '0x1885042081584806ull' '0x1885042081584807ull'
mut stream_mvp_8x16_right src/enc/h264_mvp_core.h \
    'if (dir == 4 && cc.ref == 0) return cc.mv;' 'if (dir == 4 && a.ref == 0) return a.mv;'
mut stream_mvp_16x8_upper src/enc/h264_mvp_core.h \
    'if (dir == 1 && b.ref == 0) return b.mv;' 'if (dir == 1 && a.ref == 0) return a.mv;'
# (Not here: giving C the value of A too when only A is available leaves the median at A
# either way: an equivalent change, nothing can catch it.)
mut stream_skip_zero src/enc/h264_mvp_core.h \
    '(a.ref == 0 && !a.mv.x && !a.mv.y)' '(a.ref == 0 && !a.mv.x)'
mut cavlc_suffix_step src/h264_cavlc_core.h \
    'if (mag > (3 << (sl - 1)) && sl < 6) sl++;' 'if (mag > (3 << (sl - 1)) && sl < 5) sl++;'
mut cavlc_suffix_start src/h264_cavlc_core.h \
    'int sl = tc > 10 && t1 < 3 ? 1 : 0;' 'int sl = tc > 9 && t1 < 3 ? 1 : 0;'
mut nal_emulation src/enc/h264_nal_core.h \
    '*ins = s >= 2 && x <= 3;' '*ins = s >= 2 && x < 3;'

# The coding loop's search on CUDA, checked on the host through the kernels' emulator
# (ctest me_emu_passes): a block's second pass of candidate columns one column off.
mut me_pass_offset src/cuda/me_kern_f41.cuh \
    'const int mvx = bp.cx0 + pass * a.C + col;' \
    'const int mvx = bp.cx0 + pass * a.C + col + (pass == 1);'
# ... and the end of a warp's passes one column early: column R never searched.
mut me_pass_end src/cuda/me_kern_f41.cuh \
    'if (mvx > a.R) break;' 'if (mvx >= a.R) break;'
mut me_shift_sel src/cuda/me_kern_f41.cuh \
    'w[2 * cs] = __byte_perm(w0, w1, 0x5432u);' 'w[2 * cs] = __byte_perm(w0, w1, 0x4321u);'
mut me_shift_copy src/cuda/me_kern_f41.cuh \
    '((FL & F_SHIFT) ? (sx & 3) * cs : 0)' '((FL & F_SHIFT) ? (3 - (sx & 3)) * cs : 0)'
# The device's deblocking filter, checked on the host through the same emulator (ctest
# dbk_emu): the word of the mailbox with the last four columns taken before the next
# macroblock's vertical edges; the last row not storing its own bottom rows.
mut dbk_mail_word src/cuda/dbk_kern.cuh \
    '(mw == tc ? *dbk_tw(T, mp, mrr + n, 0) : saved)' 'saved'
mut dbk_last_rows src/cuda/dbk_kern.cuh \
    'const int own = last ? n : n - (kChroma ? 1 : 3);' 'const int own = n - (kChroma ? 1 : 3);'
# The device's H.264 intra macroblock (src/cuda/enc_warp.cuh, through the emulator: ctest
# intra_emu): the predicted mode left out of the Intra_4x4 / 8x8 cost; the warp barrier
# between a block's reconstruction and the next block's neighbours missing.
mut intra_nxn_pm src/cuda/enc_warp.cuh \
    '(vidk_satd4(d) + enc_h264_lbits(&f, enc_h264_inxn_mbits(m, pm))) << 4' \
    '(vidk_satd4(d) + enc_h264_lbits(&f, enc_h264_inxn_mbits(m, 2))) << 4'
mut intra_nxn_sync src/cuda/enc_warp.cuh \
    "        __syncwarp(); // the blocks' reconstruction and modes before the next step's reads" ''
# The I_NxN estimate of inter frames (docs/ENCODE.md §4): the device's lanes through the
# emulator (intra_emu), the c function against the text (enc_pred).
mut intra_est_lane_pm src/cuda/enc_warp.cuh \
    'md = enc_h264_nxn_est_mode(&f, s, pa < pb ? pa : pb, &bc);' \
    'md = enc_h264_nxn_est_mode(&f, s, pa < pb ? pb : pa, &bc);'
mut intra_est_weight src/enc/enc_core_h264.h \
    'const uint32_t v = c + (c >> 2) + enc_h264_lbits' 'const uint32_t v = c + (c >> 3) + enc_h264_lbits'
mut intra_est_edge_pm src/enc/enc_core_h264.h \
    'const int ma = q & 3 ? md[q - 1] : 2, mb = q >> 2 ? md[q - 4] : 2;' \
    'const int ma = q & 3 ? md[q - 1] : 0, mb = q >> 2 ? md[q - 4] : 2;'

# Readers.
mut y4m_width_height tools/picio.c \
    "if (tok[0] == 'W') {" "if (tok[0] == 'H') {"

# ---------------------------------------------------------------- the catchers
# by TESTS NAME...: the ctest names (space-separated) that catch these mutations quickest.
# A mutation without an entry runs the whole CPU suite.
declare -A BY=()
by() {
    local tests=$1
    shift
    for m in "$@"; do BY[$m]=$tests; done
}
by 'enc_decide encode' lambda_qp22 hevc_qpc_30 h264_part_tie h264_tx8_tie h264_tx8_scale \
    mvd_pred_left h264_sub_tie h264_skip_tie h264_intra_in_p h264_inter_round \
    h264_inter_round_moving h264_mb_moving_l1 \
    h264_mvd_quarter hevc_cu32_tie hevc_cu16_tie h264_intra_tie h264_chroma_mode_tie \
    hevc_intra_unfiltered level_no_sub8x8 mvd_quad_order decimate_table4 h264_chroma_qp_44
by 'me enc_decide' ue_len_off_by_one se_mapping
by 'enc_pred' h264_plane_round i4_vr_tap i4_above_right i8_filter_left_end i8_filter_corner \
    hevc_ref_subst hevc_mc_round intra_est_weight intra_est_edge_pm
by 'enc_pred cli_stream_gen' i4_pred_mode_min
by 'enc_pred enc_decide' qpel_no_quarter_step qpel_j_round qpel_g_source
by 'h264_stream_core enc_decide' i4_intra_cbp stream_count_mask stream_mvp_8x16_right \
    stream_mvp_16x8_upper mvnb_own_vector
by 'h264_stream_core cli_stream_gen' stream_cac_first cabac_skip_tx8 cabac_i8_flag \
    cabac_i4_rem_order stream_nc_round stream_skip_zero cabac_mvd_ctx cavlc_suffix_step \
    cavlc_suffix_start h264_chroma_mc_corner
by 'cli_stream_gen' b_bi_round b_implicit_w b_direct_c_or_d b_dbk_lists bpyr_l0_mod bpyr_col \
    bpyr_ref1
by 'cli_stream_clips' b_colzero_range
by 'enc_decide' b_part_decide b_direct_bonus b_mixed_decide
by 'h264_bslice' b_mixed_type
by 'cli_stream_gen' b_mixed_inoff
by 'h264_bslice' b_part_cabac_type
by 'cli_stream_gen' b_part_mvp_dir
by 'h264_stream_core' hdr_after_prev hdr_after_two cabac_host_bins nal_emulation
by 'h264_cabac_core' cabac_carry_lost cabac_ff_carry
by 'h264_cabac_core h264_stream_core' cabac_zero_words
by 'h264' h264_fdct_coef h264_norm_adjust h264_mf_entry
by 'h264 checkkern' h264_deadzone
by 'hevc' hevc_matrix_entry hevc_quant_round hevc_level_scale
by 'api me' sad_c
by 'me' me_tiebreak
by 'me_emu_passes me_emu' me_pass_offset me_pass_end me_shift_sel me_shift_copy
by 'dbk_emu' dbk_mail_word dbk_last_rows
by 'intra_emu' intra_nxn_pm intra_nxn_sync intra_est_lane_pm
by 'io' y4m_width_height

# The whole CPU suite: less the GPU tests (they skip here) and the slow benchmark CLI runs,
# stopping at the first failure; the slow tests (checkkern) only when the fast ones missed the
# mutation.
FAST_EXCLUDE='cuda|cli_bench|checkkern'
SLOW_INCLUDE='checkkern|cli_bench'

# ---------------------------------------------------------------- the machinery
# In a function, parsed whole before it runs: editing this file during a run is safe.
main() {
cd "$(dirname "$0")/.." || exit 2
repo=$(pwd)
n=$((${#MUTS[@]} / 4))
if [ "${1:-}" = --list ]; then
    for ((i = 0; i < n; i++)); do
        printf '%-22s %-28s %s\n' "${MUTS[4 * i]}" "${MUTS[4 * i + 1]}" "${BY[${MUTS[4 * i]}]:-(all)}"
    done
    exit 0
fi
budget=0
if [ "${1:-}" = --budget ]; then
    budget=${2:-}
    case "$budget" in '' | *[!0-9]*)
        echo "mutate: --budget takes a number of seconds" >&2
        exit 2
        ;;
    esac
    shift 2
fi
want=" $* "
for w in "$@"; do
    found=0
    for ((i = 0; i < n; i++)); do [ "${MUTS[4 * i]}" = "$w" ] && found=1; done
    [ $found = 1 ] || { echo "mutate: no mutation named '$w' (see --list)" >&2; exit 2; }
done
for m in "${!BY[@]}"; do # a catcher entry for a mutation that is not in the table
    found=0
    for ((i = 0; i < n; i++)); do [ "${MUTS[4 * i]}" = "$m" ] && found=1; done
    [ $found = 1 ] || { echo "mutate: 'by' names no mutation '$m'" >&2; exit 2; }
done
jobs=${VIDK_MUTATE_JOBS:-$(nproc)}
# One seed for every run (the tests' random inputs, tests/test_util.h): whether a mutation is
# caught must not depend on the clock; VIDK_TEST_SEED from the environment replays another.
export VIDK_TEST_SEED=${VIDK_TEST_SEED:-1795552424}
scratch=${VIDK_MUTATE_DIR:-${TMPDIR:-/tmp}/vidkern-mutate-${USER:-$(id -u)}}
case "$scratch" in "$repo" | "$repo"/*)
    echo "mutate: VIDK_MUTATE_DIR must lie outside the repository" >&2
    exit 2
    ;;
esac
src="$scratch/src" build="$scratch/build"
mkdir -p "$src" "$build"
# One run per scratch folder: a second one would rewrite the sources under the first's build.
exec 9>"$scratch/lock"
if command -v flock >/dev/null && ! flock -n 9; then
    echo "mutate: another run is using $scratch (set VIDK_MUTATE_DIR to another folder)" >&2
    exit 2
fi
log="$scratch/log"
: >"$log"

# Sync the working tree's tracked files into the scratch copy, rewriting only the files that
# differ (so the build stays incremental).
sync_tree() {
    git ls-files -z | while IFS= read -r -d '' f; do
        [ -f "$f" ] || continue
        if ! cmp -s "$f" "$src/$f" 2>/dev/null; then
            mkdir -p "$src/$(dirname "$f")"
            cp "$f" "$src/$f"
        fi
    done
    # Files the tree no longer has go too (a stale source would be globbed into the build).
    (cd "$src" && find . -type f | sed 's|^\./||' | sort) >"$scratch/have"
    git ls-files | sort >"$scratch/want"
    comm -23 "$scratch/have" "$scratch/want" | while IFS= read -r f; do rm -f "$src/$f"; done
    # The clip folder the tests look for (../shared/video relative to the tree).
    [ -d "$repo/../shared" ] && ln -sfn "$repo/../shared" "$scratch/shared"
}

apply() { # file original replacement [check] -> 0 applies, 3 not found, 4 ambiguous
    python3 - "$@" <<'EOP'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
k = text.count(old)
if k != 1:
    sys.exit(3 if k == 0 else 4)
if len(sys.argv) < 5:
    open(path, "w").write(text.replace(old, new))
EOP
}

# The build targets of some tests (ctest's commands: the executables of the build folder
# they run, the vidkern CLI for the scripts), one per line.
targets_of() { # regex
    ctest --test-dir "$build" -R "$1" --show-only=json-v1 2>/dev/null | python3 -c '
import json, os, sys
build = sys.argv[1]
names = set()
for t in json.load(sys.stdin).get("tests", []):
    for a in t.get("command", []):
        if a.startswith(build + "/") and os.path.isfile(a) and os.access(a, os.X_OK):
            names.add(os.path.basename(a))
print("\n".join(sorted(names)))' "$build"
}

# The names of the tests that failed in the log's last ctest run.
failed_in_log() {
    awk '/^=== mutation/ { s = "" }
         /\*\*\*(Failed|Timeout|Exception)/ {
             for (i = 1; i < NF; i++) if ($i ~ /^#[0-9]+:$/) s = s $(i + 1) " "
         }
         END { printf "%s", s }' "$log"
}

build_all_and_test() { # -> 0 suite passes, 1 suite fails, 2 build fails
    cmake --build "$build" -j"$jobs" >>"$log" 2>&1 || return 2
    ctest --test-dir "$build" -j"$jobs" -E "$FAST_EXCLUDE" --stop-on-failure \
        --output-on-failure >>"$log" 2>&1 || return 1
    ctest --test-dir "$build" -j"$jobs" -R "$SLOW_INCLUDE" --stop-on-failure \
        --output-on-failure >>"$log" 2>&1 || return 1
    return 0
}

catchers_test() { # "name name ..." -> 0 they pass, 1 they fail, 2 build fails
    local re targets
    re="^($(echo "$1" | tr ' ' '|'))\$"
    mapfile -t targets < <(targets_of "$re")
    [ ${#targets[@]} -gt 0 ] || { echo "mutate: no build targets for $re" >>"$log"; return 0; }
    cmake --build "$build" -j"$jobs" --target "${targets[@]}" >>"$log" 2>&1 || return 2
    ctest --test-dir "$build" -j"$jobs" -R "$re" --stop-on-failure --output-on-failure \
        >>"$log" 2>&1 || return 1
    return 0
}

t0=$(date +%s)
sync_tree
# Every mutation's text, in a copy (a mutation whose text moved fails the run even when the
# budget leaves it out).
bad=0
for ((i = 0; i < n; i++)); do
    name=${MUTS[4 * i]} file=${MUTS[4 * i + 1]} orig=${MUTS[4 * i + 2]} repl=${MUTS[4 * i + 3]}
    apply "$src/$file" "$orig" "$repl" check
    case $? in
    0) ;;
    3) echo "mutate: $name: its text is not in $file (re-target it)" && bad=1 ;;
    *) echo "mutate: $name: its text is in $file more than once (re-target it)" && bad=1 ;;
    esac
done
# -O1: a rebuild (most of a mutation's time) about four times quicker than -O3 (src/enc/encode.c:
# 11.6 s -> 2.6 s), the tests a little slower; what the tests see is the same.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DVIDK_ENABLE_CUDA=OFF \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DVIDK_SHARED_VIDEO="$scratch/shared/video" >>"$log" 2>&1 || {
    echo "mutate: configure failed (see $log)" >&2
    exit 2
}
build_all_and_test
rc=$?
if [ $rc != 0 ]; then
    echo "mutate: the unmutated suite does not pass (rc $rc; see $log)" >&2
    # The log stays on the machine that ran it (CI): what failed, and its output, here.
    echo "mutate: the log's failures and its last 150 lines:" >&2
    grep -E '\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|Error|FAIL' "$log" | head -n 40 >&2
    tail -n 150 "$log" >&2
    exit 2
fi

# The order: from the start (the seed modulo n, or VIDK_MUTATE_START) round the table.
start=0
if [ "$budget" != 0 ]; then
    start=$((${VIDK_MUTATE_START:-$VIDK_TEST_SEED} % n))
    echo "mutate: budget ${budget} s, from mutation $start of $n (VIDK_MUTATE_START=$start replays)"
fi
tb=$(date +%s)
printf '\n%-22s | %-28s | %-12s | %s\n' mutation file result seconds
printf -- '-----------------------+------------------------------+--------------+--------\n'
ran=0 left=0
for ((j = 0; j < n; j++)); do
    i=$(((start + j) % n))
    name=${MUTS[4 * i]} file=${MUTS[4 * i + 1]} orig=${MUTS[4 * i + 2]} repl=${MUTS[4 * i + 3]}
    if [ -n "${*:-}" ] && [[ "$want" != *" $name "* ]]; then continue; fi
    if [ "$budget" != 0 ] && [ $(($(date +%s) - tb)) -ge "$budget" ]; then
        left=$((left + 1))
        continue
    fi
    s=$(date +%s) ran=$((ran + 1))
    echo "=== mutation $name ($file)" >>"$log"
    apply "$src/$file" "$orig" "$repl"
    a=$?
    if [ $a = 0 ]; then
        c=0
        if [ -n "${BY[$name]:-}" ]; then
            catchers_test "${BY[$name]}"
            c=$?
        fi
        case $c in
        1) result=caught ;;
        2) result=caught-build ;; # a mutation that does not compile is caught too
        *)
            # No catcher, or its catchers missed it: the whole suite.
            build_all_and_test
            case $? in
            0) result=SURVIVED bad=1 ;;
            1) result="caught by $(failed_in_log)" ;;
            *) result=caught-build ;;
            esac
            [ -n "${BY[$name]:-}" ] && result="$result(not by ${BY[$name]}: re-target)"
            ;;
        esac
    elif [ $a = 3 ]; then
        result='not found' bad=1
    else
        result=ambiguous bad=1
    fi
    cp "$file" "$src/$file" # restore (a new mtime: the next build recompiles it)
    printf '%-22s | %-28s | %-12s | %s\n' "$name" "$file" "$result" $(($(date +%s) - s))
done
cmake --build "$build" -j"$jobs" >>"$log" 2>&1
printf '\nmutate: %d mutations, %d s in all (log: %s)\n' "$ran" $(($(date +%s) - t0)) "$log"
[ $left = 0 ] || printf 'mutate: %d left for later runs (the budget)\n' "$left"
if [ $bad != 0 ]; then
    echo "mutate: FAILED: a mutation survived or no longer applies (re-target it at the top of scripts/mutate.sh)"
    exit 1
fi
echo "mutate: every mutation run was caught"
}
main "$@"; exit $? # one line: read whole before main runs
