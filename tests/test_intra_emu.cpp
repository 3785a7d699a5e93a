// The device's H.264 intra macroblock (src/cuda/enc_warp.cuh w_h264_i_mb: the luma warp's
// Intra_16x16 and Intra_4x4, the chroma warp, the Intra_8x8 warp; the body of
// h264_intra_kernel and intra_p_kernel) run on the host through the SIMT emulator
// (src/cuda/simt_emu.h: each CUDA thread a fiber, exact warp and block barriers, blocks one
// after another) against the c backend's intra frame (enc_tmpl.h h264_i_mb through
// vidk_enc_send / vidk_enc_receive): its reconstruction (no deblocking), levels, energy map,
// macroblock words, 4x4 modes and statistics must be equal. Random sizes (one macroblock
// column or row included), QPs, slices, Intra_4x4 / Intra_8x8 on and off, pictures smooth
// (where prediction wins) or noisy; a real clip's first frame where ../shared/video (or
// VIDK_VIDEO_DIR) has it.
// Checks the kernel's logic without a GPU (CI), rows in raster order (h264_intra_kernel's
// wavefront and its waits are the device's tests': test_encode --cuda). Then the intra
// estimate of inter frames (enc_warp.cuh lane_intra_est: Intra_16x16 and the I_NxN
// estimates by a half warp per macroblock) on the same picture against
// enc_h264_intra_est_mb. Arguments: seed, cases.
#include "cuda/simt_emu.h"

#include "enc/enc.h"

#define vidk_encw vidk_encw_emu // (the library's device namespace has host stubs of its own)
#include "cuda/enc_warp.cuh"

namespace {

uint32_t g_seed = 1;
uint32_t rnd() {
    return emu::xorshift32(g_seed);
}

// The block's shared memory (blocks run one at a time).
vidk_encw::H264Scratch g_scratch;
vidk_encw::IntraEstShared g_est;

uint8_t *pl(const VidkPicture &p, int k) {
    return static_cast<uint8_t *>(p.data[k]);
}

// One intra frame of pic (W x H, multiples of 16) with these tools; returns the differences.
int run_case(const VidkPicture &pic, int qp, int slices, int i4, int i8, const char *what) {
    const int W = pic.w, H = pic.h;
    VidkContext *ctx = nullptr;
    VidkSettings st;
    vidk_default_settings(&st);
    st.backend = VIDK_BACKEND_C;
    if (vidk_open(&ctx, &st) < 0) return fprintf(stderr, "vidk_open failed\n"), 1;
    VidkEncParams p;
    vidk_enc_default_params(&p);
    p.qp = qp, p.slices = slices, p.intra4x4 = i4, p.intra8x8 = i8;
    p.deblock = 0; // the reconstruction as the macroblocks leave it
    p.outputs = VIDK_ENC_OUT_ALL | VIDK_ENC_OUT_STREAM; // (the stream: the maps exist)
    VidkEncoder *e = nullptr;
    if (vidk_enc_open(ctx, &e, &p, W, H) < 0) return fprintf(stderr, "enc_open failed\n"), 1;
    const size_t n = (size_t)W * H;
    std::vector<int16_t> lev[3] = {std::vector<int16_t>(n), std::vector<int16_t>(n / 4),
                                   std::vector<int16_t>(n / 4)};
    std::vector<uint32_t> energy(n / 256);
    std::vector<VidkMv> mv(n / 16);
    VidkEncMaps maps = {};
    maps.mv = mv.data(), maps.energy = energy.data();
    for (int k = 0; k < 3; k++)
        maps.levels[k] = lev[k].data();
    VidkPicture rec;
    vidk_picture_alloc(&rec, W, H, VIDK_CHROMA_420, 8, 0);
    VidkEncFrameInfo info;
    if (vidk_enc_send(e, &pic) < 0 || vidk_enc_receive(e, &rec, &maps, &info) < 0)
        return fprintf(stderr, "encode failed\n"), 1;

    // The device's run: the frame's parameters, its own outputs.
    EncFrame f;
    vidk_enc_frame_setup(e, 1, &f);
    VidkPicture erec;
    vidk_picture_alloc(&erec, W, H, VIDK_CHROMA_420, 8, 0);
    std::vector<int16_t> elev[3] = {std::vector<int16_t>(n), std::vector<int16_t>(n / 4),
                                    std::vector<int16_t>(n / 4)};
    std::vector<uint32_t> een(n / 256, 0xdeadbeefu);
    std::vector<uint16_t> embi((size_t)e->uw * e->uh, 0xdead);
    std::vector<uint8_t> eim4(n / 16, 0xee);
    std::vector<EncUnitStat> est((size_t)e->uw * e->uh);
    std::vector<VidkMv> emv(n / 16, VidkMv{77, -77});
    for (int k = 0; k < 3; k++) {
        f.src[k] = pl(pic, k), f.ss[k] = (int)pic.stride[k];
        f.rec[k] = pl(erec, k), f.cs[k] = (int)erec.stride[k];
        f.lev[k] = elev[k].data(), f.ls_[k] = k ? W / 2 : W;
        for (int y = 0; y < (k ? H / 2 : H); y++) // garbage, as on a GPU
            memset(pl(erec, k) + (ptrdiff_t)y * erec.stride[k], 0x5a, k ? W / 2 : W);
        for (auto &l : elev[k])
            l = (int16_t)0x7777;
    }
    f.mv4 = emv.data(), f.mbi = embi.data(), f.im4 = eim4.data(), f.energy = een.data();
    f.stat = est.data();
    f.i4x4 = i4, f.i8x8 = i8;
    const unsigned threads = i4 || i8 ? 96u : 64u;
    emu::launch(dim3((unsigned)f.uh), dim3(threads), 0, [&] {
        const int r = (int)blockIdx.x, t = (int)threadIdx.x;
        if (i4 || i8) vidk_encw::w_h264_nxn_rules(f, g_scratch.n, t, (int)threads);
        for (int x = 0; x < f.uw; x++) {
            __syncthreads(); // (the kernel's, after its wait for the row above)
            vidk_encw::w_h264_i_mb(f, x, r, g_scratch, t);
        }
    });

    int bad = emu::g_block.errors;
    auto report = [&](const char *map, long i, long a, long b) {
        if (bad++ < 8) fprintf(stderr, "%s: %s [%ld]: device %ld, c %ld\n", what, map, i, a, b);
    };
    for (int k = 0; k < 3; k++) {
        const int w = k ? W / 2 : W, h = k ? H / 2 : H;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const int a = pl(erec, k)[(ptrdiff_t)y * erec.stride[k] + x],
                          b = pl(rec, k)[(ptrdiff_t)y * rec.stride[k] + x];
                if (a != b) report(k ? "chroma rec" : "luma rec", (long)y * w + x, a, b);
            }
        for (size_t i = 0; i < lev[k].size(); i++)
            if (elev[k][i] != lev[k][i]) report("levels", (long)i, elev[k][i], lev[k][i]);
    }
    for (size_t i = 0; i < energy.size(); i++)
        if (een[i] != energy[i]) report("energy", (long)i, een[i], energy[i]);
    for (size_t i = 0; i < mv.size(); i++)
        if (emv[i].x != mv[i].x || emv[i].y != mv[i].y)
            report("mv4", (long)i, emv[i].x, mv[i].x);
    for (int u = 0; u < e->uw * e->uh; u++) {
        if (embi[u] != e->st_mbi[u]) report("mbi", u, embi[u], e->st_mbi[u]);
        const EncUnitStat &a = est[u], &b = e->stat[u];
        if (memcmp(&a, &b, sizeof(a)))
            report("stat", u, (long)a.bits_level, (long)b.bits_level);
    }
    // the 4x4 modes of the I_NxN macroblocks (those of the others are read by nothing: the
    // c backend leaves its last candidate's there, the device none)
    for (size_t i = 0; i < eim4.size(); i++) {
        const int x4 = (int)(i % (size_t)(W / 4)), y4 = (int)(i / (size_t)(W / 4));
        if ((e->st_mbi[(y4 / 4) * e->uw + x4 / 4] & ENC_MBI_NXN) && eim4[i] != e->st_im4[i])
            report("im4", (long)i, eim4[i], e->st_im4[i]);
    }
    // The intra estimate of an inter frame on the same picture (intra_est_kernel's body; the
    // lanes b_dist_kernel runs too) against the c backend's function, every macroblock.
    {
        EncFrame g;
        vidk_enc_frame_setup(e, 0, &g);
        for (int k = 0; k < 3; k++)
            g.src[k] = pl(pic, k), g.ss[k] = (int)pic.stride[k];
        g.i4x4 = i4, g.i8x8 = i8;
        const int nmb = g.uw * g.uh;
        std::vector<uint32_t> dv((size_t)nmb, 0xdeadbeefu);
        emu::launch(dim3((unsigned)((nmb * 16 + 127) / 128)), dim3(128), 0, [&] {
            if (i4 || i8)
                vidk_encw::w_nxn_rule_fill(g_est.rule4, g_est.rule8, threadIdx.x, 128);
            __syncthreads();
            const int t = (int)(blockIdx.x * 128 + threadIdx.x), u = std::min(t >> 4, nmb - 1);
            const uint32_t v =
                vidk_encw::lane_intra_est(g, g_est, u % g.uw, u / g.uw, t & 15, 0xffffffffu);
            if (!(t & 15) && t >> 4 < nmb) dv[(size_t)u] = v;
        });
        bad += emu::g_block.errors;
        for (int u = 0; u < nmb; u++) {
            const uint32_t c = enc_h264_intra_est_mb(&g, u % g.uw, u / g.uw);
            if (dv[(size_t)u] != c) report("intra estimate", u, dv[(size_t)u], c);
        }
    }
    vidk_picture_free(&erec);
    vidk_picture_free(&rec);
    vidk_enc_close(&e);
    vidk_close(&ctx);
    return bad;
}

// A W x H picture: smooth (small steps: prediction and the plane mode win), noisy, or a
// gradient with noise.
void fill(VidkPicture &pic, int kind) {
    for (int k = 0; k < 3; k++) {
        const int w = k ? pic.w / 2 : pic.w, h = k ? pic.h / 2 : pic.h;
        int v = (int)(rnd() & 255);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                uint8_t &s = pl(pic, k)[(ptrdiff_t)y * pic.stride[k] + x];
                if (kind == 0)
                    v = (v + (int)(rnd() % 9) - 4) & 255, s = (uint8_t)v;
                else if (kind == 1)
                    s = (uint8_t)rnd();
                else
                    s = (uint8_t)((x * 3 + y * 5 + (int)(rnd() % 7)) & 255);
            }
    }
}

// The first frame of a 4:2:0 8-bit Y4M file (its width and height multiples of 16) into pic;
// false when there is none.
bool read_y4m(const char *path, VidkPicture &pic) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return false;
    char hdr[512];
    int w = 0, h = 0;
    bool ok = fgets(hdr, sizeof(hdr), fp) && !strncmp(hdr, "YUV4MPEG2 ", 10);
    for (char *t = strtok(hdr, " \n"); ok && t; t = strtok(nullptr, " \n"))
        if (*t == 'W')
            w = atoi(t + 1);
        else if (*t == 'H')
            h = atoi(t + 1);
        else if (*t == 'C' && strncmp(t, "C420", 4))
            ok = false;
    char line[64];
    ok = ok && w > 0 && h > 0 && !(w % 16) && !(h % 16) && fgets(line, sizeof(line), fp) &&
         !strncmp(line, "FRAME", 5) &&
         vidk_picture_alloc(&pic, w, h, VIDK_CHROMA_420, 8, 0) == 0;
    for (int k = 0; ok && k < 3; k++)
        for (int y = 0; ok && y < (k ? h / 2 : h); y++)
            ok = fread(pl(pic, k) + (ptrdiff_t)y * pic.stride[k], 1, (size_t)(k ? w / 2 : w),
                       fp) == (size_t)(k ? w / 2 : w);
    fclose(fp);
    return ok;
}

} // namespace

int main(int argc, char **argv) {
    g_seed = argc > 1 ? (uint32_t)strtoul(argv[1], nullptr, 0) : 1u;
    if (!g_seed) g_seed = 1;
    const int cases = argc > 2 ? atoi(argv[2]) : 12;
    int bad = 0, run = 0;
    for (int c = 0; c < cases; c++) {
        const int uw = c == 0 ? 1 : 1 + (int)(rnd() % 6),
                  uh = c == 1 ? 1 : 1 + (int)(rnd() % 5);
        const int qp = c < 2 ? (c ? 51 : 0) : (int)(rnd() % 52);
        const int tools = c % 4, slices = 1 + (int)(rnd() % 3);
        const int i4 = tools & 1, i8 = tools >> 1; // 0: Intra_16x16 only
        emu::g_order = (c / 4) % 4, emu::g_order_seed = rnd() | 1;
        VidkPicture pic;
        vidk_picture_alloc(&pic, 16 * uw, 16 * uh, VIDK_CHROMA_420, 8, 0);
        fill(pic, (int)(rnd() % 3));
        char what[128];
        snprintf(what, sizeof(what), "case %d (%dx%d QP %d slices %d i4x4 %d i8x8 %d order %d)",
                 c, 16 * uw, 16 * uh, qp, slices, i4, i8, emu::g_order);
        const int b = run_case(pic, qp, slices, i4, i8, what);
        if (b) fprintf(stderr, "%s: %d differences\n", what, b);
        bad += b != 0, run++;
        vidk_picture_free(&pic);
    }
    // a real picture: every tool, two QPs
    const char *dir = getenv("VIDK_VIDEO_DIR") ? getenv("VIDK_VIDEO_DIR") : VIDK_TEST_VIDEO_DIR;
    char path[1024];
    snprintf(path, sizeof(path), "%s/akiyo_176x144_30fps_30f.y4m", dir);
    VidkPicture pic;
    if (read_y4m(path, pic)) {
        for (int qp : {22, 37}) {
            char what[1200];
            snprintf(what, sizeof(what), "%s QP %d", path, qp);
            const int b = run_case(pic, qp, 1, 1, 1, what);
            if (b) fprintf(stderr, "%s: %d differences\n", what, b);
            bad += b != 0, run++;
        }
        vidk_picture_free(&pic);
    } else {
        printf("intra_emu: no %s, generated pictures only\n", path);
    }
    printf("intra_emu: %d cases, %d failed\n", run, bad);
    return bad ? 1 : 0;
}
